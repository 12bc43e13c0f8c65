"""Signals in a replay: the route's interlocking drives the automatic drivers (docs/signals.md §5).

:class:`SignalledReplay` glue, kept out of ``replay.py``: it builds the
:class:`~tdbtools.signals.runtime.Interlocking` for the trains of a replay, updates it every
``interval`` seconds, and wraps each automatic driver so that it stops before a signal at
danger, creeps past a restricting one and keeps to the aspect speeds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..formats.sigcfg import ASPECTS
from ..signals.objects import SignalSet, load_signals
from ..signals.runtime import CREEP, Interlocking
from .driver import AutoDriver, Controls, DriveState
from .events import AspectSeen, SignalAspect, SignalWait

#: Seconds between signalling cycles (Open Rails updates signals in time-boxed batches).
INTERVAL = 1.0


class SignalDriver:
    """An :class:`AutoDriver` that also obeys the signals (and waits for its departure time)."""

    def __init__(self, inner: AutoDriver, depart: float = 0.0) -> None:
        self.inner = inner
        self.depart = depart
        self.stop_s: float | None = None
        self.creep_at: float | None = None
        self.limits: list[tuple[float, float, float]] = []
        base = inner.constraints

        def constraints(st: DriveState) -> list[tuple[float, float]]:
            out = base(st)
            if self.stop_s is not None:
                out.append((0.0, max(self.stop_s - st.front, 0.0)))
            if self.creep_at is not None and self.creep_at > st.front:
                out.append((CREEP, self.creep_at - st.front))
            for a, b, v in self.limits:
                if b < st.rear:
                    continue
                out.append((v, max(a - st.front, 0.0)))
            return out

        inner.constraints = constraints  # type: ignore[method-assign]
        #: (a batch of drivers checks that the inner driver's constraints are still these)
        self.constraints = constraints

    @property
    def finished(self) -> bool:
        return self.inner.finished

    def __call__(self, st: DriveState) -> Controls:
        if st.time < self.depart:
            return Controls(0.0, 1.0, 0.0)
        inner = self.inner
        c = inner(st)
        if inner.finished:
            stop = inner.stop_at
            if stop is not None and stop - inner.STOP_SHORT - st.front >= inner.ARRIVED_WITHIN:
                inner.finished = False  # held at a signal, not at the end of the path
        return c


class DepartDriver:
    """Any driver, held with full brake until ``depart`` seconds."""

    def __init__(self, inner: Callable[[DriveState], Controls], depart: float) -> None:
        self.inner, self.depart = inner, depart

    @property
    def finished(self) -> bool:
        return bool(getattr(self.inner, "finished", False))

    def __call__(self, st: DriveState) -> Controls:
        if st.time < self.depart:
            return Controls(0.0, 1.0, 0.0)
        return self.inner(st)


class ReplaySignals:
    """The interlocking of one replay and its bookkeeping."""

    def __init__(
        self, replay: Any, signals: SignalSet, interval: float = INTERVAL, deadlock_after: float = 300.0
    ) -> None:
        self.replay = replay
        self.set = signals
        self.interval = interval
        self.next_update = 0.0
        self.version = 0
        sw = replay.switches
        initial = {
            j: sw.get(j)
            for j in range(1, len(replay.route.tdb.nodes))
            if replay.route.tdb.nodes[j] is not None and replay.route.tdb.nodes[j].kind == "junction"
        }
        self.ilk = Interlocking(
            replay.route,
            signals,
            switch_setter=self._throw,
            deadlock_after=deadlock_after,
            initial_switches=initial,
            ahead=replay.policy.signals_ahead_m,
            clearance=replay.policy.signal_clearance(),
        )
        self.drivers: list[SignalDriver | None] = []
        x = replay.engine.x
        # A replay whose trains enter later (an activity) registers them off the track:
        # it calls ilk.enter / ilk.leave itself (docs/signals.md §4.8).
        on = replay.policy.signals_on_track_at_start
        for t in replay.trains:
            front = float(x[t.cars][0])
            end = t.end_s if t.end_s is not None else (t.line.length if t.line.ends_at_track_end else None)
            self.ilk.add_train(t.spec.name, t.line, t.length, front=front, end_s=end, on_track=on)
            self.drivers.append(t.signal_driver)
        self._shown = {k: -1 for k, o in enumerate(self.ilk.objects) if o.is_normal}
        self._passes_shown = -1  # the scripts' pass whose aspects _shown holds

    def _throw(self, junction: int, route: int) -> None:
        self.replay.throw_switch(junction, route)

    def update(self, time: float, fronts: list[float], speeds: list[float]) -> None:
        if time + 1e-9 < self.next_update:
            return
        self.next_update = time + self.interval
        ilk = self.ilk
        ilk.update(time, fronts, speeds)
        for k, d in enumerate(self.drivers):
            t = ilk.trains[k]
            if d is not None:
                d.stop_s, d.creep_at, d.limits = t.stop_s, t.creep_at, t.limits
            rt = self.replay.trains[k]
            if t.deadlocked and rt.done_at is None:
                rt.finish(time)
        self.version += 1  # the drivers' signal values changed (a batch of drivers reads them anew)
        for e in ilk.events:  # typed by the runtime (tdbtools.signals.events)
            self.replay.log.add(e)
        ilk.events.clear()
        # Aspect changes of the NORMAL signals (for the space-time chart and render --replay).
        if ilk.script_passes == self._passes_shown:
            return  # no script ran: no aspect changed
        first = self._passes_shown < 0
        self._passes_shown = ilk.script_passes
        # (only signals a head of which changed can show another aspect; in signal order)
        changed = ilk.aspects.take_changed()
        for k in self._shown if first else (k for k in changed if k in self._shown):
            old = self._shown[k]
            a = ilk.aspect(k)
            if a != old:
                self._shown[k] = a
                self.replay.log.add(
                    SignalAspect(
                        time=time,
                        signal=k,
                        aspect=ASPECTS[a],
                        enabled_for=(
                            ilk.trains[ilk.enabled_train[k]].name if ilk.enabled_train[k] >= 0 else None
                        ),
                    )
                )

    def summary(self) -> dict:
        """Per train: the aspects it saw and how long it waited at each signal."""
        out: dict[str, Any] = {}
        ev = self.replay.events
        for t in self.ilk.trains:
            seen = [
                {"time": e.time, "signal": e.signal, "aspect": e.aspect}
                for e in ev
                if isinstance(e, AspectSeen) and e.train == t.name
            ]
            waits: dict[str, float] = {}
            for e in ev:
                if isinstance(e, SignalWait) and e.train == t.name:
                    waits[str(e.signal)] = round(waits.get(str(e.signal), 0.0) + e.seconds, 3)
            if t.waiting_since is not None:
                key = str(t.waiting_at)
                waits[key] = round(waits.get(key, 0.0) + self.ilk.time - t.waiting_since, 3)
            out[t.name] = {
                "aspects_seen": seen,
                "signal_waits_s": waits,
                "aspect_counts": {
                    a: sum(1 for s in seen if s["aspect"] == a)
                    for a in ASPECTS
                    if any(s["aspect"] == a for s in seen)
                },
                "deadlocked": t.deadlocked,
            }
        return {
            "signals": len(self.set.signals),
            "heads": len(self.set.heads),
            "sections": len(self.ilk.sections),
            "trains": out,
        }

    def aspects(self) -> dict[int, str]:
        """Signal index -> aspect now (what ``render --replay`` colours by)."""
        return {k: ASPECTS[self.ilk.aspect(k)] for k, o in enumerate(self.ilk.objects) if o.is_normal}


def space_time(replay: Any, result: Any, reference: str | None = None) -> dict:
    """What a space-time chart of a replay needs, along the line of ``reference`` (the first
    train by default): per train its front and rear against time in that line's metres
    (NaN where it is off the line), and the NORMAL signals on the line with their aspect
    changes. Blocks are the stretches between consecutive signals."""
    import numpy as np

    trains = replay.trains
    ref = next((t for t in trains if t.spec.name == reference), trains[0]) if reference else trains[0]
    line = ref.line
    ref_xz = np.stack([line.X, line.Z], axis=1)

    def project(ax: np.ndarray, az: np.ndarray) -> np.ndarray:
        """Line distance of the nearest reference sample, for points off the line (a loop
        track beside it): NaN farther than 15 m."""
        out = np.full(len(ax), np.nan)
        for i in range(0, len(ax), 256):
            d = np.hypot(
                ax[i : i + 256, None] - ref_xz[None, :, 0], az[i : i + 256, None] - ref_xz[None, :, 1]
            )
            k = d.argmin(axis=1)
            ok = d[np.arange(len(k)), k] < 15.0
            out[i : i + 256] = np.where(ok, line.s[k], np.nan)
        return out

    out_trains = {}
    for t in trains:
        tr = result.traces.get(t.spec.name)
        if tr is None or len(tr["time"]) == 0:
            continue
        s = np.full(len(tr["time"]), np.nan)
        cache: dict[tuple[int, float], float] = {}
        for i, (n, off) in enumerate(zip(tr["node"].tolist(), tr["offset"].tolist())):
            key = (int(n), round(float(off), 1))
            if key not in cache:
                c = line.locate(int(n), float(off), tol=0.5)
                cache[key] = float(c[0]) if len(c) else float("nan")
            s[i] = cache[key]
        off_line = ~np.isfinite(s)
        if off_line.any():
            ax = tr["tile_x"][off_line] * 2048.0 + tr["x"][off_line]
            az = tr["tile_z"][off_line] * 2048.0 + tr["z"][off_line]
            s[off_line] = project(ax.astype(float), az.astype(float))
        # Direction along the reference line: from the first and last known positions.
        ok = np.flatnonzero(np.isfinite(s))
        sign = 1.0
        if len(ok) >= 2 and s[ok[-1]] < s[ok[0]]:
            sign = -1.0
        out_trains[t.spec.name] = {
            "time": tr["time"],
            "front": s,
            "rear": s - sign * t.length,
            "direction": sign,
        }
    sigs: list[dict[str, Any]] = []
    ilk = replay.signals.ilk if replay.signals is not None else None
    items = replay.route.tdb.items
    if ilk is not None:
        for k, o in enumerate(ilk.objects):
            if not o.is_normal:
                continue
            c = line.locate(o.node, o.offset, tol=0.5)
            facing = 1
            if len(c):
                at = float(c[0])
                segd = line.seg_dir[np.flatnonzero(line.seg_node == o.node)[0]]
                facing = 1 if o.tc_direction == segd else -1
            else:
                rd = items[o.heads[0].item].r_data
                if rd is None:
                    continue
                at = float(
                    project(np.array([rd.tile_x * 2048.0 + rd.x]), np.array([rd.tile_z * 2048.0 + rd.z]))[0]
                )
                if not np.isfinite(at):
                    continue
                # Off the line (a loop track): facing as the nearest on-line signal of its direction would.
                facing = 1 if o.direction == 0 else -1
            if not 0.0 <= at <= line.length:
                continue
            changes = [
                (e.time, e.aspect) for e in result.events if isinstance(e, SignalAspect) and e.signal == k
            ]
            sigs.append({"signal": k, "s": at, "facing": facing, "aspects": changes, "on_line": bool(len(c))})
    sigs.sort(key=lambda d: d["s"])
    return {
        "reference": ref.spec.name,
        "length": float(line.length),
        "trains": out_trains,
        "signals": sigs,
        "duration": float(result.summary.get("simulated_seconds", 0.0)),
    }


def signals_for(route: Any, use: bool | SignalSet | None) -> SignalSet | None:
    """The signal set a replay uses: the given set, the route's own (when it has NORMAL
    signals and ``use`` is None or True), or None."""
    if isinstance(use, SignalSet):
        return use
    if use is False:
        return None
    s = load_signals(route)
    if not any(o.is_normal for o in s.signals):
        return None
    return s


def wrap_driver(driver: Any, depart: float, signalled: bool) -> Any:
    if signalled and isinstance(driver, AutoDriver):
        return SignalDriver(driver, depart)
    if depart > 0:
        return DepartDriver(driver, depart)
    return driver


__all__ = [
    "INTERVAL",
    "DepartDriver",
    "ReplaySignals",
    "SignalDriver",
    "signals_for",
    "space_time",
    "wrap_driver",
]
