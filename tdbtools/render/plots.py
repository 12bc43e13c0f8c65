"""matplotlib plots (imported only when a plot is asked for)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import TdbToolsError
from ..track.profile import Profile

if TYPE_CHECKING:
    from ..physics.events import ReplayEvent


def pyplot():
    """``matplotlib.pyplot`` on the file-only Agg backend; a clear error without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        raise TdbToolsError("plots need matplotlib: pip install 'tdbtools[plot]'") from None
    matplotlib.use("Agg")  # files only: works without a display
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, out: str | Path, *, dpi: int = 110) -> Path:  # noqa: ANN001
    """Save a matplotlib figure atomically (never a half-written picture) and close it."""
    plt = pyplot()
    out = Path(out)
    tmp = out.with_name(f".{out.name}.tmp{out.suffix}")
    try:
        fig.savefig(tmp, dpi=dpi)
        tmp.replace(out)
    finally:
        plt.close(fig)
        tmp.unlink(missing_ok=True)
    return out


def plot_profile(profile: Profile, out: str | Path) -> Path:
    """Elevation, grade, curvature and speed limit against distance, as a PNG/SVG/PDF."""
    plt = pyplot()
    c = profile.columns
    d = c["distance_m"] / 1000.0
    fig, axes = plt.subplots(3, 1, figsize=(11, 8), sharex=True, constrained_layout=True)
    ax = axes[0]
    ax.plot(d, c["elevation_m"], color="tab:brown")
    ax.set_ylabel("elevation (m)")
    ax.set_title(f"{profile.route}: {profile.source} ({profile.length / 1000:.2f} km)")
    lim = ax.twinx()
    lim.step(d, c["speed_limit_kmh"], where="post", color="tab:red", alpha=0.6)
    lim.set_ylabel("speed limit (km/h)", color="tab:red")
    axes[1].plot(d, c["grade_permille"], color="tab:green")
    axes[1].axhline(0, color="grey", lw=0.5)
    axes[1].set_ylabel("grade (‰)")
    axes[2].plot(d, c["curvature_per_m"] * 1000.0, color="tab:blue")
    axes[2].axhline(0, color="grey", lw=0.5)
    axes[2].set_ylabel("curvature (1/km, + right)")
    axes[2].set_xlabel("distance (km)")
    for a in axes:
        a.grid(alpha=0.3)
    return save_figure(fig, out, dpi=110)


def line_marks(
    replay, name: str
) -> tuple[tuple[np.ndarray, np.ndarray] | None, list[tuple[float, str, str]]]:  # noqa: ANN001
    """For :func:`plot_speed_distance`: the permitted speed of train ``name`` of a
    :class:`~tdbtools.physics.replay.Replay` as steps (distance from the front's start in
    metres, km/h; its category's limits from the line's speed posts and the route's
    limit), and the places along its line: its stations (platform middles) and the
    NORMAL signals facing it, as (distance, "station"|"signal", label)."""
    t = next((t for t in replay.trains if t.spec.name == name), None)
    if t is None:
        return None, []
    line = t.line
    cat = getattr(t, "category", "passenger")
    try:
        ls, lv = line.limits(cat)
    except ValueError:
        ls, lv = line.limits()
    d0 = float(t.front0)
    limit = (np.asarray(ls, dtype=np.float64) - d0, np.asarray(lv, dtype=np.float64) * 3.6)
    marks: list[tuple[float, str, str]] = []
    from ..physics.activity import route_platforms

    seen = set()
    for p in route_platforms(replay.route).values():
        if id(p) in seen:
            continue
        seen.add(id(p))
        c = line.locate(p.node, 0.5 * (p.near + p.far), tol=0.5)
        if len(c):
            marks.append((float(c[0]) - d0, "station", p.station or p.name))
    if replay.signals is not None:
        for k, o in enumerate(replay.signals.ilk.objects):
            if not o.is_normal:
                continue
            c = line.locate(o.node, o.offset, tol=0.5)
            if len(c):
                marks.append((float(c[0]) - d0, "signal", f"S{k}"))
    return limit, sorted(marks)


def plot_speed_distance(
    trace: dict,
    name: str,
    events: Iterable[ReplayEvent],
    out: str | Path,
    *,
    limit: tuple[np.ndarray, np.ndarray] | None = None,
    marks: Sequence[tuple[float, str, str]] = (),
) -> Path:
    """Speed against distance for one train of a replay, with its events, and (given)
    the permitted speed (``limit``: steps of distance m, km/h) and the stations and
    signals along its way (``marks``, from :func:`line_marks`): a dip is then seen to
    be a limit, a stop or a signal."""
    plt = pyplot()
    d = trace["distance"] / 1000.0
    fig, (ax, ax2) = plt.subplots(
        2, 1, figsize=(12, 7), sharex=True, constrained_layout=True, gridspec_kw={"height_ratios": [3, 1]}
    )
    ax.plot(d, trace["speed"] * 3.6, color="tab:blue", label="speed", lw=1.6)
    dmax = float(d[-1]) if len(d) else 0.0
    top = float(np.nanmax(trace["speed"]) * 3.6) if len(d) else 10.0
    if limit is not None and len(limit[0]):
        ls, lv = (np.asarray(v, dtype=np.float64) for v in limit)
        x = np.concatenate([ls / 1000.0, [max(dmax, float(ls[-1]) / 1000.0)]])
        y = np.concatenate([lv, [lv[-1]]])
        keep = x >= -1e-9
        first = max(int(np.argmax(keep)) - 1, 0)
        x, y = np.maximum(x[first:], 0.0), y[first:]
        ax.step(x, y, where="post", color="tab:red", lw=1.2, label="permitted speed")
        top = max(top, float(np.nanmax(y[x <= dmax + 1e-9])) if (x <= dmax + 1e-9).any() else top)
    ax.set_ylim(0, top * 1.18 + 1)
    ax.set_xlim(0, max(dmax, 1e-3))
    ytop = ax.get_ylim()[1]
    last_label = {"station": -1e9, "signal": -1e9}
    gap = max(dmax, 1e-3) / 60.0  # a label every 60th of the width at most: no overprinting
    for s, kind, label in marks:
        xm = s / 1000.0
        if not 0 <= xm <= dmax:
            continue
        if kind == "station":
            ax.axvline(xm, color="tab:green", lw=0.8, ls="--", alpha=0.8)
            if xm - last_label["station"] >= 2 * gap:
                ax.text(
                    xm,
                    ytop * 0.985,
                    f" {label}",
                    rotation=90,
                    va="top",
                    ha="left",
                    fontsize=7,
                    color="tab:green",
                )
                last_label["station"] = xm
        else:
            ax.plot([xm], [ytop * 0.02], marker="^", color="0.3", ms=5, ls="none")
            if xm - last_label["signal"] >= gap:
                ax.text(
                    xm, ytop * 0.05, label, rotation=90, va="bottom", ha="center", fontsize=6, color="0.3"
                )
                last_label["signal"] = xm
    ax.set_ylabel("speed (km/h)")
    ax.set_title(f"{name}: {trace['distance'][-1] / 1000:.2f} km in {trace['time'][-1]:.0f} s")
    for e in events:
        if getattr(e, "train", None) == name and e.kind in (
            "derailment",
            "collision",
            "side_collision",
            "arrived",
            "end_of_line",
        ):
            k = int(min(range(len(trace["time"])), key=lambda i: abs(trace["time"][i] - e.time)))
            ax.axvline(d[k], color="tab:red" if e.kind != "arrived" else "tab:green", lw=0.8)
            ax.annotate(e.kind, (d[k], ax.get_ylim()[1] * 0.95), rotation=90, fontsize=8, va="top")
    from matplotlib.lines import Line2D

    handles, _ = ax.get_legend_handles_labels()
    if any(k == "station" for _s, k, _l in marks):
        handles.append(Line2D([], [], color="tab:green", ls="--", lw=0.8, label="station"))
    if any(k == "signal" for _s, k, _l in marks):
        handles.append(Line2D([], [], color="0.3", marker="^", ls="none", label="signal"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False)
    ax.grid(alpha=0.3)
    ax2.plot(d, trace["throttle"], color="tab:green", label="throttle")
    ax2.plot(d, trace["brake"], color="tab:red", label="brake")
    ax2.set_ylabel("control")
    ax2.set_xlabel("distance (km)")
    ax2.set_ylim(-0.05, 1.05)
    ax2.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False)
    ax2.grid(alpha=0.3)
    return save_figure(fig, out, dpi=110)
