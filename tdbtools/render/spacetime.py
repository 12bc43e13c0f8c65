"""The space-time chart of a replayed activity: actual runs with the schedule drawn over
them (docs/activities.md §6)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..physics.activity import ActivityResult
from .plots import pyplot, save_figure


def _on_reference(ref, node: np.ndarray, offset: np.ndarray) -> np.ndarray:  # noqa: ANN001
    """Distance along the reference line of each (node, offset); NaN where the line
    does not pass. One lookup per distinct node, the offsets mapped with numpy."""
    out = np.full(len(node), np.nan)
    for n in np.unique(node):
        hit = np.flatnonzero(ref.seg_node == n)
        if not len(hit):
            continue
        i = hit[0]
        m = node == n
        sg = 1.0 if ref.seg_dir[i] == 1 else -1.0
        d = (offset[m] - ref.seg_off0[i]) * sg
        span = ref.seg_s1[i] - ref.seg_s0[i]
        out[m] = np.where((d >= -1.0) & (d <= span + 1.0), ref.seg_s0[i] + np.clip(d, 0.0, span), np.nan)
    return out


#: A train on a track beside the reference path (a loop, another platform track) is drawn
#: where its nearest point on the path is, when that is this close (m), as the signal chart does.
BESIDE_M = 15.0


def _world(cols: dict) -> tuple[np.ndarray, np.ndarray]:
    tx = np.asarray(cols["tile_x"], dtype=float)
    tz = np.asarray(cols["tile_z"], dtype=float)
    return tx * 2048.0 + np.asarray(cols["x"], dtype=float), tz * 2048.0 + np.asarray(cols["z"], dtype=float)


def _reference_points(ref, cols: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:  # noqa: ANN001
    """The reference train's run as (s, X, Z) every 5 m, from its own trace."""
    s = _on_reference(ref, np.asarray(cols["node"]), np.asarray(cols["offset"], dtype=float))
    X, Z = _world(cols)
    ok = np.isfinite(s)
    if ok.sum() < 2:
        return None
    s, X, Z = s[ok], X[ok], Z[ok]
    order = np.argsort(s, kind="stable")
    s, X, Z = s[order], X[order], Z[order]
    grid = np.arange(s[0], s[-1] + 1e-9, 5.0)
    return grid, np.interp(grid, s, X), np.interp(grid, s, Z)


def _beside(pts, cols: dict, s: np.ndarray) -> np.ndarray:  # noqa: ANN001
    """``s`` with the points off the reference path filled in where a track beside it runs."""
    miss = np.flatnonzero(~np.isfinite(s))
    if pts is None or not len(miss):
        return s
    g, gx, gz = pts
    X, Z = _world(cols)
    out = s.copy()
    for chunk in np.array_split(miss, max(1, len(miss) // 512)):
        d2 = (X[chunk, None] - gx[None, :]) ** 2 + (Z[chunk, None] - gz[None, :]) ** 2
        j = np.argmin(d2, axis=1)
        near = d2[np.arange(len(chunk)), j] <= BESIDE_M**2
        out[chunk[near]] = g[j[near]]
    return out


def reference_train(result: ActivityResult) -> str:
    """The train whose path is the chart's distance axis: the longest path."""
    return max(result.lines, key=lambda n: float(result.lines[n].path_length))


def plot_space_time(result: ActivityResult, out: str | Path, *, reference: str | None = None) -> Path:
    """Clock time (x) against distance along the reference train's path (y): a solid line
    per train's run, the booked stops (dashed, joined) over them."""
    plt = pyplot()
    ref_name = reference or reference_train(result)
    ref = result.lines[ref_name]
    from .signal_chart import train_colours

    fig, ax = plt.subplots(figsize=(13, 7))
    # one colour per train for any number of trains (the cycle repeated after 10)
    colors = train_colours(len(result.replay.traces))
    plats = {}
    ref_cols = result.replay.traces.get(ref_name)
    pts = _reference_points(ref, ref_cols) if ref_cols is not None else None
    for k, (name, cols) in enumerate(result.replay.traces.items()):
        c = colors[k % len(colors)]
        clock = np.asarray(cols["clock"], dtype=float)
        s = _on_reference(ref, np.asarray(cols["node"]), np.asarray(cols["offset"], dtype=float))
        s = _beside(pts, cols, s)
        if result.on_track and name not in result.on_track:
            continue  # never entered the world: not drawn standing from the start
        t_on, t_off = result.on_track.get(name, (-np.inf, np.inf))
        s = np.where((clock >= t_on) & (clock <= t_off), s, np.nan)  # not in the world before or after
        ax.plot(clock / 3600.0, s / 1000.0, color=c, lw=1.6, label=name)
        sched = []
        first = np.flatnonzero(np.isfinite(s))
        if len(first) and clock[first[0]] - t_on < 5.0:  # booked start, where the run begins
            sched.append((t_on, float(s[first[0]])))
        for row in result.timetable:
            if row["train"] != name:
                continue
            key = row["platform"]
            if key not in plats:
                plats[key] = (_platform_s(result, ref, row), row["station"])
            ps = plats[key][0]
            if ps is None:
                continue
            for t in (row["sched_arr"], row["sched_dep"]):
                if t is not None:
                    sched.append((t, ps))
            if row["actual_arr"] is not None:
                ax.plot(
                    [row["actual_arr"] / 3600.0, (row["actual_dep"] or row["actual_arr"]) / 3600.0],
                    [ps / 1000.0] * 2,
                    color=c,
                    lw=4,
                    alpha=0.5,
                    solid_capstyle="butt",
                )
        if sched:
            t_s, p_s = zip(*sorted(sched))
            ax.plot(
                np.array(t_s) / 3600.0, np.array(p_s) / 1000.0, color=c, ls="--", lw=1.0, marker="|", ms=10
            )
    marks = sorted((float(ps_) / 1000.0, station) for ps_, station in set(plats.values()) if ps_ is not None)
    for km, _station in marks:
        ax.axhline(km, color="0.7", lw=0.6, zorder=0)
    lo_km, hi_km = ax.get_ylim()
    # A label is about 9 points tall: that height in km is the least gap between labels.
    gap = 9.0 / 72.0 * fig.dpi / max(ax.get_window_extent().height, 1.0) * (hi_km - lo_km)
    for km, station in station_labels(marks, gap):
        ax.text(ax.get_xlim()[0], km, f" {station}", fontsize=7, va="bottom", color="0.4")
    # Ticks on whole minutes (matplotlib's own would fall on 1.5 min and be mislabelled).
    lo, hi = ax.get_xlim()
    span = (hi - lo) * 60.0
    step = next((m for m in (1, 2, 5, 10, 15, 30, 60, 120) if span / m <= 12), 240)
    first = math.ceil(lo * 60.0 / step) * step
    minutes = np.arange(first, hi * 60.0 + 1e-9, step)
    ax.set_xticks(minutes / 60.0)
    ax.set_xticklabels([f"{int(m) // 60 % 24:02d}:{int(m) % 60:02d}" for m in minutes])
    ax.set_xlim(lo, hi)
    ax.set_xlabel("clock")
    ax.set_ylabel(f"km along the path of {ref_name}")
    name = result.replay.summary.get("activity", "")
    ax.set_title(f"{name}: actual runs (solid, thick = standing at a platform), schedule (dashed)")
    ax.grid(True, alpha=0.3)
    # beside the axes: inside, the legend covered the lines
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False)
    fig.tight_layout()
    return save_figure(fig, out)


def station_labels(marks: list[tuple[float, str]], gap: float) -> list[tuple[float, str]]:
    """The station names to write beside the chart, from (position, name) marks sorted by
    position: one per station (its platforms' lines are close together), and none closer
    than ``gap`` to the label below it, so no two labels print over each other."""
    out: list[tuple[float, str]] = []
    for pos, name in marks:
        if out and (name == out[-1][1] or pos - out[-1][0] < gap):
            continue
        out.append((pos, name))
    return out


def _platform_s(result: ActivityResult, ref, row: dict) -> float | None:  # noqa: ANN001
    """Where a platform is on the reference line; a platform beside it (another track of
    the same station) is drawn at the station's platform that the reference passes."""
    known = {st.platform.name: st.platform for stops in result.stops.values() for st in stops}
    mine = known.get(row["platform"])
    if mine is None:
        return None
    for p in [mine] + [p for p in known.values() if p.station == mine.station and p is not mine]:
        s = _on_reference(ref, np.array([p.node]), np.array([(p.near + p.far) / 2.0]))[0]
        if np.isfinite(s):
            return float(s)
    return None


__all__ = ["plot_space_time", "reference_train", "station_labels"]
