"""The space-time chart of a replayed activity: actual runs with the schedule drawn over
them (docs/activities.md §6)."""

from __future__ import annotations

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


def reference_train(result: ActivityResult) -> str:
    """The train whose path is the chart's distance axis: the longest path."""
    return max(result.lines, key=lambda n: float(result.lines[n].path_length))


def plot_space_time(result: ActivityResult, out: str | Path, *, reference: str | None = None) -> Path:
    """Clock time (x) against distance along the reference train's path (y): a solid line
    per train's run, the booked stops (dashed, joined) over them."""
    plt = pyplot()
    ref_name = reference or reference_train(result)
    ref = result.lines[ref_name]
    fig, ax = plt.subplots(figsize=(12, 7))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    plats = {}
    for k, (name, cols) in enumerate(result.replay.traces.items()):
        c = colors[k % len(colors)]
        clock = np.asarray(cols["clock"], dtype=float)
        s = _on_reference(ref, np.asarray(cols["node"]), np.asarray(cols["offset"], dtype=float))
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
    for ps_, station in {v for v in plats.values() if v[0] is not None}:
        ps = float(ps_ or 0.0)
        ax.axhline(ps / 1000.0, color="0.7", lw=0.6, zorder=0)
        ax.text(ax.get_xlim()[0], ps / 1000.0, f" {station}", fontsize=7, va="bottom", color="0.4")
    ticks = ax.get_xticks()
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{int(h) % 24:02d}:{int(round((h % 1) * 60)) % 60:02d}" for h in ticks])
    ax.set_xlabel("clock")
    ax.set_ylabel(f"km along the path of {ref_name}")
    name = result.replay.summary.get("activity", "")
    ax.set_title(f"{name}: actual runs (solid, thick = standing at a platform), schedule (dashed)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return save_figure(fig, out)


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


__all__ = ["plot_space_time", "reference_train"]
