"""Animations of a replay over a route scene (GIF via imageio/pillow, MP4 via
imageio-ffmpeg), and trains as oriented boxes placed by their bogies.

Two ways to place the cars of a train at a time ``t``:

* **exact** (a :class:`~tdbtools.physics.replay.Replay` is given, as
  :func:`load_replay` returns for a scenario): each car's front along its train's
  :class:`~tdbtools.physics.trackline.TrackLine` (from ``result.car_traces`` when the
  replay ran with ``cars_trace``, else the front of the train minus the car lengths),
  the bogies ``(length − bogie_spacing)/2`` behind the car front and ``bogie_spacing``
  apart, their world positions from the line, the heading from the line between them;
* **approximate** (only the traces, e.g. a folder of CSVs): the cars follow the path
  the front of the train drew (``x, y, z`` against ``distance``), car length =
  train length / cars from ``summary.json`` (20 m cars if absent); before the first
  sample the path is extended straight back.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._fs import atomic_output
from ..errors import TdbToolsError
from ..formats.route import Route
from .backend import _pv, check_renderer
from .scene import Scene, auto_exaggeration, build_scene, to_scene, train_boxes
from .sceneview import SceneView

CAR_WIDTH = 3.0
CAR_HEIGHT = 3.8
MAX_EVENTS_BYTES = 256 * 2**20

__all__ = ["SignalAspects", "TrainPlacer", "render_animation", "load_replay", "frame_times", "signal_aspects"]


@dataclass(eq=False)
class _Train:
    name: str
    length: np.ndarray  # per car (m)
    spacing: np.ndarray  # bogie spacing per car (m)
    times: np.ndarray
    fronts: np.ndarray  # (n_times, n_cars) car-front measure at each time
    world: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]  # s (array) → absolute X, Y, Z


class TrainPlacer:
    """Car boxes of every train of a replay at any time (scene coordinates)."""

    def __init__(self, result, origin: tuple[float, float], *, replay=None) -> None:
        self.origin = origin
        self.trains: list[_Train] = []
        by_name = {t.spec.name: t for t in replay.trains} if replay is not None else {}
        for name, tr in result.traces.items():
            times = np.asarray(tr["time"], dtype=np.float64)
            if name in by_name:
                self.trains.append(self._exact(name, tr, result.car_traces.get(name), by_name[name]))
            else:
                self.trains.append(self._approx(name, tr, result.summary.get("trains", {}).get(name, {})))
            if len(times) == 0:
                raise TdbToolsError(f"train {name!r}: empty trace")

    @staticmethod
    def _exact(name, tr, cars, t) -> _Train:
        line = t.line
        L = np.asarray(t.model.length, dtype=np.float64)
        sp = np.asarray(t.model.bogie_spacing, dtype=np.float64)
        if cars is not None and len(cars.get("time", ())):
            ct = np.asarray(cars["time"], dtype=np.float64)
            n = len(L)
            times = ct[::n]
            fronts = np.asarray(cars["front"], dtype=np.float64).reshape(-1, n)
        else:
            times = np.asarray(tr["time"], dtype=np.float64)
            head = np.asarray(tr["distance"], dtype=np.float64) + t.front0
            fronts = head[:, None] - np.concatenate([[0.0], np.cumsum(L[:-1])])[None, :]

        def world(s, line=line):
            s = np.clip(s, 0.0, line.length)
            X, Z = line.world_xz(s)
            return X, line.elevation(s), Z

        return _Train(name, L, sp, times, fronts, world)

    @staticmethod
    def _approx(name, tr, summ) -> _Train:
        times = np.asarray(tr["time"], dtype=np.float64)
        d = np.maximum.accumulate(np.asarray(tr["distance"], dtype=np.float64))
        X = np.asarray(tr["tile_x"], dtype=np.float64) * 2048.0 + np.asarray(tr["x"], dtype=np.float64)
        Z = np.asarray(tr["tile_z"], dtype=np.float64) * 2048.0 + np.asarray(tr["z"], dtype=np.float64)
        Y = np.asarray(tr["y"], dtype=np.float64)
        n = int(summ.get("cars") or 0)
        total = float(summ.get("length_m") or 0.0)
        if n <= 0:
            n = max(1, int(round(total / 20.0))) if total > 0 else 1
        car = total / n if total > 0 else 20.0
        L = np.full(n, car)
        sp = 0.65 * L
        keep = np.concatenate([[True], np.diff(d) > 1e-6])
        dk, Xk, Yk, Zk = d[keep], X[keep], Y[keep], Z[keep]
        if len(dk) >= 2:
            j = min(int(np.searchsorted(dk, dk[0] + 5.0)), len(dk) - 1)
            span = dk[j] - dk[0]
            ux, uy, uz = ((Xk[j] - Xk[0]) / span, (Yk[j] - Yk[0]) / span, (Zk[j] - Zk[0]) / span)
        else:
            ux, uy, uz = 1.0, 0.0, 0.0

        def world(s):
            s = np.asarray(s, dtype=np.float64)
            back = np.minimum(s - dk[0], 0.0)  # ≤ 0: behind the first sample, straight back
            return (
                np.interp(s, dk, Xk) + back * ux,
                np.interp(s, dk, Yk) + back * uy,
                np.interp(s, dk, Zk) + back * uz,
            )

        fronts = d[:, None] - np.concatenate([[0.0], np.cumsum(L[:-1])])[None, :]
        return _Train(name, L, sp, times, fronts, world)

    @property
    def time_range(self) -> tuple[float, float]:
        return (min(float(t.times[0]) for t in self.trains), max(float(t.times[-1]) for t in self.trains))

    @property
    def n_cars(self) -> int:
        return sum(len(t.length) for t in self.trains)

    def bogies(self, time: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Front and rear bogie centres (n_cars, 3) in scene coordinates, car lengths."""
        F, R, Ls = [], [], []
        for t in self.trains:
            fr = np.array([np.interp(time, t.times, t.fronts[:, k]) for k in range(t.fronts.shape[1])])
            sf = fr - (t.length - t.spacing) / 2.0
            sr = sf - t.spacing
            F.append(to_scene(*t.world(sf), self.origin))
            R.append(to_scene(*t.world(sr), self.origin))
            Ls.append(t.length)
        return np.concatenate(F), np.concatenate(R), np.concatenate(Ls)

    def boxes(self, time: float) -> tuple[np.ndarray, np.ndarray]:
        f, r, L = self.bogies(time)
        return train_boxes(f, r, L, CAR_WIDTH, CAR_HEIGHT)

    def mesh(self, time: float):
        pv = _pv()
        pts, faces = self.boxes(time)
        return pv.PolyData(pts, faces)


#: Aspect name (sigcfg) -> colour category of ``scene.ASPECT_NAMES``: stop, caution, clear.
_ASPECT_CODE = {
    "STOP": 1,
    "STOP_AND_PROCEED": 2,
    "RESTRICTING": 2,
    "APPROACH_1": 2,
    "APPROACH_2": 2,
    "APPROACH_3": 2,
    "CLEAR_1": 3,
    "CLEAR_2": 3,
}


class SignalAspects:
    """What each signal marker of a scene shows at any time of a replay, from the replay's
    ``signal`` events (one per aspect change of a NORMAL signal, docs/signals.md). The
    events number signals as :func:`~tdbtools.signals.objects.load_signals` orders them;
    each NORMAL head's TDB item is a marker. Heads of other functions and signals without
    events show no aspect (code 0)."""

    def __init__(self, route: Route, events, marker_items: np.ndarray) -> None:
        from ..signals.objects import load_signals

        objs = load_signals(route).signals
        changes: dict[int, list[tuple[float, int]]] = {}
        for e in events:
            if e.kind == "signal":
                changes.setdefault(e.signal, []).append((float(e.time), _ASPECT_CODE.get(str(e.aspect), 0)))
        item_sig = {h.item: k for k, o in enumerate(objs) for h in o.heads if h.function == "NORMAL"}
        self.rows = np.array([item_sig.get(int(i), -1) for i in marker_items], dtype=np.int64)
        self._t: dict[int, np.ndarray] = {}
        self._c: dict[int, np.ndarray] = {}
        for k, ch in changes.items():
            ch.sort(key=lambda x: x[0])
            self._t[k] = np.array([c[0] for c in ch])
            self._c[k] = np.array([c[1] for c in ch], dtype=np.int64)
        used = {0} if (self.rows < 0).any() or any(k not in self._t for k in self.rows if k >= 0) else set()
        for k in set(self.rows.tolist()) & self._t.keys():
            used |= set(self._c[k].tolist())
        #: Every code shown at some time (for a legend that does not change between frames).
        self.used = sorted(used)

    def __bool__(self) -> bool:
        return bool(self._t)

    def at(self, time: float) -> np.ndarray:
        """Code per marker at ``time`` (0 none, 1 stop, 2 caution, 3 clear)."""
        out = np.zeros(len(self.rows), dtype=np.int64)
        for j, k in enumerate(self.rows.tolist()):
            t = self._t.get(k)
            if t is not None:
                # The first event is the first signalling cycle's (one step in): it holds from the start.
                i = max(int(np.searchsorted(t, time, side="right")) - 1, 0)
                out[j] = self._c[k][i]
        return out

    def apply(self, scene: Scene, time: float) -> np.ndarray:
        """Put the codes at ``time`` into ``scene.extra`` (before a :class:`SceneView` is made)."""
        codes = self.at(time)
        scene.extra["signal_aspect"] = codes
        scene.extra["signal_aspect_used"] = self.used
        return codes


def signal_aspects(route: Route, result, scene: Scene) -> SignalAspects | None:
    """The :class:`SignalAspects` of a replay over a scene, or None when the replay has no
    signal events or the scene no signal markers."""
    m = scene.markers.get("signal")
    if m is None or not len(m) or not any(e.kind == "signal" for e in result.events):
        return None
    sa = SignalAspects(route, result.events, m.ids)
    return sa if sa and (sa.rows >= 0).any() else None


def frame_times(
    t0: float, t1: float, *, fps: float, speedup: float, max_frames: int, frames: int | None = None
) -> np.ndarray:
    """The replay times shown: ``frames`` of them, or one per 1/fps s of video at
    ``speedup`` × real time, at most ``max_frames``, always ≥ 2."""
    if frames is None:
        frames = int(math.floor((t1 - t0) / speedup * fps)) + 1
        frames = min(max(frames, 2), max_frames)
    if frames < 1:
        raise TdbToolsError(f"an animation needs at least one frame, not {frames}")
    return np.linspace(t0, t1, frames)


def load_replay(path: str | Path, *, route: Route | None = None, cars_trace: bool = False):
    """A replay to animate: a scenario TOML (run here) → (result, replay); a folder of
    ``tdbtools replay --out`` CSVs → (result, None). ``cars_trace``: record every car
    (coupler slack shows) instead of placing the cars rigidly behind the front."""
    from ..physics.replay import TRACE_COLUMNS, Replay, ReplayResult
    from ..physics.scenario import read_scenario

    p = Path(path)
    if p.is_file():
        rp = Replay(read_scenario(p), route=route, cars_trace=cars_trace)
        return rp.run(), rp
    if not p.is_dir():
        raise TdbToolsError(f"{p}: no such scenario file or trace folder")
    traces = {}
    for csv in sorted(p.glob("*.csv")):
        if csv.stem.endswith("_cars"):
            continue
        lines = csv.read_text(encoding="utf-8").splitlines()
        if not lines or "time" not in lines[0].split(","):
            continue
        head = lines[0].split(",")
        data = np.array(
            [[float(v) for v in ln.split(",")] for ln in lines[1:] if ln.strip()], dtype=np.float64
        ).reshape(-1, len(head))
        cols = {k: data[:, i] for i, k in enumerate(head) if k in TRACE_COLUMNS}
        if {"time", "distance", "x", "y", "z", "tile_x", "tile_z"} <= cols.keys():
            traces[csv.stem] = cols
    if not traces:
        raise TdbToolsError(f"{p}: no train traces (<train>.csv from `tdbtools replay --out`)")
    summary = {}
    sj = p / "summary.json"
    if sj.is_file():
        summary = json.loads(sj.read_text(encoding="utf-8"))
    # summary.json names trains as given; the CSV stems are in its "files" (older folders:
    # the safe names): map back.
    from ..physics.replay import safe_name

    got = summary.get("files")
    files: dict = got if isinstance(got, dict) else {}

    def stem(name: str) -> str:
        f = files.get(name)
        t = f.get("trace") if isinstance(f, dict) else None
        return t[:-4] if isinstance(t, str) and t.endswith(".csv") else safe_name(name)

    trains = {stem(k): v for k, v in summary.get("trains", {}).items()}
    summary = {**summary, "trains": trains}
    events: tuple = ()
    ej = p / "events.json"
    if ej.is_file() and ej.stat().st_size <= MAX_EVENTS_BYTES:  # for signal aspects; bounded
        try:
            ev = json.loads(ej.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise TdbToolsError(f"{ej}: not JSON ({exc})") from None
        if isinstance(ev, dict):  # {"units": ..., "events": [...]}; older folders: the bare list
            ev = ev.get("events")
        events = _signal_events(ev)
    return ReplayResult(str(p), traces, {}, events, summary, 0.0), None


def _signal_events(ev: object) -> tuple:
    """The signal aspect changes of a loaded events.json list as typed events (the rest
    is not needed to render); malformed entries are skipped."""
    from ..physics.events import SignalAspect

    if not isinstance(ev, list):
        return ()
    out = []
    for e in ev:
        if (
            isinstance(e, dict)
            and e.get("kind") == "signal"
            and type(e.get("signal")) is int
            and isinstance(e.get("time", 0.0), (int, float))
        ):
            enabled = e.get("enabled_for")
            out.append(
                SignalAspect(
                    time=float(e.get("time", 0.0)),
                    signal=e["signal"],
                    aspect=str(e.get("aspect")),
                    enabled_for=enabled if isinstance(enabled, str) else None,
                )
            )
    return tuple(out)


def _even(img: np.ndarray, block: int = 16) -> np.ndarray:
    """Pad an image (white) to a multiple of ``block`` pixels (for H.264)."""
    h, w = img.shape[:2]
    H, W = -(-h // block) * block, -(-w // block) * block
    if (H, W) == (h, w):
        return img
    out = np.full((H, W) + img.shape[2:], 255, dtype=img.dtype)
    out[:h, :w] = img
    return out


class _Progress:
    """A progress bar on stderr: frames done, elapsed and remaining time."""

    def __init__(self, total: int, label: str, stream=None) -> None:
        import sys
        import time

        self.total, self.label = total, label
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = time.perf_counter()
        self._clock = time.perf_counter

    def update(self, done: int) -> None:
        el = self._clock() - self.t0
        left = el / done * (self.total - done) if done else 0.0
        n = int(30 * done / max(self.total, 1))
        end = "\n" if done >= self.total else ""
        self.stream.write(
            f"\r{self.label} [{'#' * n}{'.' * (30 - n)}] {done}/{self.total} frames, "
            f"{el:.1f} s, ~{left:.0f} s left{end}"
        )
        self.stream.flush()


def _speeds(result, placer: TrainPlacer, t: float) -> np.ndarray:
    """Speed (km/h) of each car's train at time ``t`` (NaN without a speed trace)."""
    out = []
    for tr in placer.trains:
        trace = result.traces.get(tr.name, {})
        if "speed" in trace and len(trace["time"]):
            v = abs(float(np.interp(t, np.asarray(trace["time"]), np.asarray(trace["speed"])))) * 3.6
        else:
            v = math.nan
        out.append(np.full(len(tr.length), v))
    return np.concatenate(out) if out else np.zeros(0)


def _write_gif(frames: list[np.ndarray], path: Path, fps: float) -> None:
    """A GIF with one 255-colour palette for all frames, taken from a mosaic of a few of
    them (the frames share the colour bar and legend, so every colour drawn is in it);
    quantising each frame on its own took 10x longer."""
    from PIL import Image

    pick = [frames[i] for i in sorted({0, len(frames) // 3, 2 * len(frames) // 3, len(frames) - 1})]
    palette = Image.fromarray(np.concatenate(pick, axis=0)).quantize(
        colors=255, method=Image.Quantize.MEDIANCUT
    )
    imgs = [Image.fromarray(f).quantize(palette=palette, dither=Image.Dither.NONE) for f in frames]
    imgs[0].save(
        path,
        format="GIF",
        save_all=True,
        append_images=imgs[1:],
        duration=int(round(1000.0 / fps)),
        loop=0,
        optimize=False,
    )


def _clock(t: float) -> str:
    s = int(round(t))
    return f"{s // 3600 % 24:d}:{s // 60 % 60:02d}:{s % 60:02d}"


def render_animation(
    route: Route,
    result,
    out: str | Path,
    *,
    replay=None,
    scene: Scene | None = None,
    color_by: str = "kind",
    fps: float = 10.0,
    speedup: float = 10.0,
    max_frames: int = 300,
    frames: int | None = None,
    window_size: tuple[int, int] = (800, 608),
    follow: bool | str = True,
    view_distance: float = 600.0,
    labels: bool = True,
    view: str = "3d",
    exaggerate: float | None = None,
    progress: bool | None = None,
) -> Path:
    """Animate a replay (``result`` from :func:`~tdbtools.physics.replay.replay` or
    :func:`load_replay`) over the route's scene into ``out`` (.gif or .mp4): cars
    coloured by their train's speed, signals by their aspect (when the replay ran with
    signals), the replay clock on every frame.

    ``follow``: keep the camera on the first train (True), on the named train, or show
    the whole route (False); a followed train is framed ``view_distance`` metres wide.
    ``progress``: a progress bar on stderr (None: when there are more than 30 frames).
    Frames: see :func:`frame_times`."""
    out = Path(out)
    ext = out.suffix.lower()
    if ext not in (".gif", ".mp4"):
        raise TdbToolsError(f"{out}: an animation is a .gif or an .mp4")
    import imageio.v2 as iio2  # noqa: F401  (checked before any rendering)

    if ext == ".mp4":
        try:
            import imageio_ffmpeg  # noqa: F401
        except ImportError:
            raise TdbToolsError(
                "MP4 needs imageio-ffmpeg: pip install imageio-ffmpeg (or write a .gif)"
            ) from None
    check_renderer()
    if not result.traces:
        raise TdbToolsError("the replay has no trains to animate")
    scene = scene if scene is not None else build_scene(route, color_by=color_by)
    placer = TrainPlacer(result, scene.origin, replay=replay)
    names = [t.name for t in placer.trains]
    lead = 0
    if isinstance(follow, str):
        if follow not in names:
            raise TdbToolsError(f"no train {follow!r} in the replay (trains: {', '.join(names)})")
        lead = names.index(follow)
    t0, t1 = placer.time_range
    # The clock shows the time of day when the replay knows it (an activity's traces
    # carry a "clock" column), else the time since the replay's start.
    clock0 = next(
        (
            float(tr["clock"][0]) - float(tr["time"][0])
            for tr in result.traces.values()
            if "clock" in tr and len(tr["clock"]) and len(tr["time"])
        ),
        0.0,
    )
    times = frame_times(t0, t1, fps=fps, speedup=speedup, max_frames=max_frames, frames=frames)
    pv = _pv()
    from . import view as V

    vmax = max(
        (
            float(np.nanmax(np.abs(np.asarray(tr["speed"])))) * 3.6
            for tr in result.traces.values()
            if "speed" in tr and len(tr["speed"])
        ),
        default=0.0,
    )
    clim = (0.0, max(10.0, float(np.ceil(vmax / 10.0) * 10.0)))
    pts, faces = placer.boxes(float(times[0]))
    aspects = signal_aspects(route, result, scene)
    if aspects is not None:
        aspects.apply(scene, float(times[0]))
    if follow and exaggerate is None and view == "3d":
        # A follow view shows a window of view_distance metres: its exaggeration is
        # chosen from the track in that window around the followed train's start, not
        # from the whole route (whose factor stood cars across the track).
        rows = slice(
            sum(len(t.length) for t in placer.trains[:lead]) * 8,
            sum(len(t.length) for t in placer.trains[: lead + 1]) * 8,
        )
        c = np.asarray(pts)[rows].mean(axis=0)
        r = 0.5 * view_distance
        window = c + np.array([[-r, -r, 0.0], [r, r, 0.0]])
        exaggerate = auto_exaggeration(scene, around=window)
        tp = np.asarray(scene.track.points)
        near = tp[((tp[:, :2] >= window[0, :2]) & (tp[:, :2] <= window[1, :2])).all(axis=1)]
        base = float(near[:, 2].min()) if len(near) else None
    else:
        base = None
    sv = SceneView(scene, window_size, view=view, exaggerate=exaggerate, labels=labels, base=base)
    sv.set_trains(pv.PolyData(pts, faces), _speeds(result, placer, float(times[0])), clim)
    p = sv.plotter
    back = tuple(np.subtract(sv.camera.position, sv.camera.focal_point))
    lead_rows = slice(
        sum(len(t.length) for t in placer.trains[:lead]) * 8,
        sum(len(t.length) for t in placer.trains[: lead + 1]) * 8,
    )
    with atomic_output(out) as tmp:  # renamed into place when complete
        writer = (
            iio2.get_writer(
                tmp, format="FFMPEG", mode="I", fps=fps, codec="libx264", macro_block_size=16, quality=7
            )
            if ext == ".mp4"
            else None
        )
        bar = (
            _Progress(len(times), f"rendering {out.name}")
            if (progress or (progress is None and len(times) > 30))
            else None
        )
        shots = []
        try:
            for k, t in enumerate(times):
                pts, _f = placer.boxes(float(t))
                v = _speeds(result, placer, float(t))
                lifted = sv.set_trains(pv.PolyData(pts, _f), v, clim)
                if aspects is not None:
                    sv.set_signal_aspects(aspects.at(float(t)))
                if follow:
                    c = lifted[lead_rows].mean(axis=0)
                    r = 0.5 * view_distance
                    ring = c + np.array([[-r, -r, 0], [r, r, 0], [-r, r, 0], [r, -r, 0], [0, 0, 0]])
                    sv.apply_camera(V.frame(ring, view, sv.window_size, direction=back))
                who = (
                    f"   {names[lead]}: {v[sum(len(x.length) for x in placer.trains[:lead])]:.0f} km/h"
                    if follow and len(v) and np.isfinite(v).all()
                    else ""
                )
                p.add_text(
                    f"{_clock(float(t) + clock0)}{who}",
                    position=(8, sv.window_size[1] - 44),
                    font_size=12,
                    name="clock",
                )
                p.render()
                img = np.asarray(p.screenshot(return_img=True))
                if writer is not None:
                    writer.append_data(_even(img))
                else:
                    shots.append(img)
                if bar is not None:
                    bar.update(k + 1)
            if writer is not None:
                writer.close()
                writer = None
            else:
                _write_gif(shots, tmp, fps)
        finally:
            if writer is not None:
                writer.close()
            sv.close()
    return out
