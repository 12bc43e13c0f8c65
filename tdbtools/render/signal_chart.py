"""Space-time (time–distance) chart of a signalled replay, drawn as OSRD draws one: time
across, distance along the line up; each train a band between its front and rear; the
blocks between signals shaded while a train occupies them; every signal a tick coloured by
its aspect over time (docs/signals.md §6)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .plots import pyplot, save_figure

ASPECT_COLOURS = {
    "STOP": "#d62728",
    "STOP_AND_PROCEED": "#ff7f0e",
    "RESTRICTING": "#ff7f0e",
    "APPROACH_1": "#e3c000",
    "APPROACH_2": "#e3c000",
    "APPROACH_3": "#bcbd22",
    "CLEAR_1": "#2ca02c",
    "CLEAR_2": "#2ca02c",
    "UNKNOWN": "#7f7f7f",
}


def _blocks(signals: list[dict], length: float) -> list[tuple[float, float]]:
    cuts = sorted({0.0, length, *(s["s"] for s in signals)})
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b - a > 1.0]


#: Train colours that stay apart from each other and from the aspect colours (no red,
#: orange, yellow or green): the first 12 trains each have their own.
TRAIN_COLOURS = (
    "#1f77b4",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#393b79",
    "#bc80bd",
    "#843c39",
    "#5254a3",
    "#ad494a",
    "#6baed6",
    "#000000",
)


def train_colours(n: int) -> list:
    """``n`` train colours: :data:`TRAIN_COLOURS`, then evenly spaced hues of a cyclic
    map (the charts also write each train's name on its run, so a repeated look never
    leaves a train unnamed)."""
    if n <= len(TRAIN_COLOURS):
        return list(TRAIN_COLOURS[:n])
    from matplotlib import colormaps

    return list(TRAIN_COLOURS) + [colormaps["twilight"](i / (n - 12)) for i in range(n - 12)]


def _merge(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def clock_axis(ax, lo_s: float, hi_s: float, *, t0: float = 0.0) -> None:  # noqa: ANN001
    """Clock ticks (H:MM, or H:MM:SS when the span is under ten minutes) on whole
    steps of an x axis in seconds of replay time, ``t0`` the clock at time 0."""
    span = max(hi_s - lo_s, 1.0)
    step = next((m for m in (10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200) if span / m <= 12), 14400)
    first = math.ceil((lo_s + t0) / step) * step
    ticks = np.arange(first, hi_s + t0 + 1e-9, step)
    ax.set_xticks(ticks - t0)
    secs = step < 60

    def fmt(c: float) -> str:
        c = int(round(c))
        return f"{c // 3600 % 24:d}:{c // 60 % 60:02d}" + (f":{c % 60:02d}" if secs else "")

    ax.set_xticklabels([fmt(c) for c in ticks])
    ax.set_xlim(lo_s, hi_s)


def _label_rows(ys: list[float], lo: float, hi: float, height_px: float, font_px: float) -> list[int]:
    """Which of the labels at heights ``ys`` (data units, sorted) fit without
    overprinting in two columns: returns the column (0, 1) of each, -1 for none."""
    per_px = (hi - lo) / max(height_px, 1.0)
    gap = 1.25 * font_px * per_px
    last = [-math.inf, -math.inf]
    out = []
    for y in ys:
        col = next((c for c in (0, 1) if y - last[c] >= gap and lo + 0.5 * gap <= y <= hi - 0.5 * gap), -1)
        if col >= 0:
            last[col] = y
        out.append(col)
    return out


def plot_signal_chart(
    data: dict,
    out: str | Path,
    *,
    title: str | None = None,
    clock0: float = 0.0,
    on_track: dict | None = None,
) -> Path:
    """Draw the chart from :func:`tdbtools.physics.signalling.space_time` data: clock
    time across (``clock0``: the clock at replay time 0, seconds since midnight),
    kilometres along the reference train's line up. ``on_track``: per train the replay
    times (first, last) it is in the world; outside them it is not drawn (a train that
    never entered is not drawn standing from the start)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(13, 8), constrained_layout=True)
    duration = max(data.get("duration", 0.0), 1.0)
    trains = data["trains"]
    colours = train_colours(len(trains))
    lo, hi = np.inf, -np.inf
    handles = []
    names: list[tuple[float, float, str, object]] = []
    for i, (name, tr) in enumerate(trains.items()):
        t = np.asarray(tr["time"], dtype=np.float64)
        f = np.asarray(tr["front"], dtype=np.float64) / 1000.0
        r = np.asarray(tr["rear"], dtype=np.float64) / 1000.0
        if on_track is not None and name in on_track:
            t_on, t_off = on_track[name]
            inside = (t >= t_on) & (t <= t_off)
            f, r = np.where(inside, f, np.nan), np.where(inside, r, np.nan)
        ok = np.isfinite(f)
        if not ok.any():
            continue  # never on the line: not drawn at all
        c = colours[i]
        handles.append(
            ax.fill_between(
                t, np.minimum(f, r), np.maximum(f, r), where=ok, color=c, alpha=0.55, lw=0, label=name
            )
        )
        ax.plot(t, f, color=c, lw=1.0)
        lo, hi = min(lo, np.nanmin(np.minimum(f, r))), max(hi, np.nanmax(np.maximum(f, r)))
        first = int(np.flatnonzero(ok)[0])
        names.append((float(t[first]), float(f[first]), name, c))
    # Block occupancy: a block is occupied while any train overlaps it (one shade per
    # block and time, whichever trains are in it: shades of several trains do not stack).
    sigs = data["signals"]
    for a, b in _blocks(sigs, data["length"]):
        spans = []
        for name, tr in trains.items():
            times = np.asarray(tr["time"], dtype=np.float64)
            fr, rr = np.asarray(tr["front"], dtype=np.float64), np.asarray(tr["rear"], dtype=np.float64)
            if on_track is not None and name in on_track:
                inside = (times >= on_track[name][0]) & (times <= on_track[name][1])
                fr = np.where(inside, fr, np.nan)
            lo_t, hi_t = np.minimum(fr, rr), np.maximum(fr, rr)
            o = (np.isfinite(lo_t) & (hi_t > a) & (lo_t < b)).astype(int)
            edges = np.flatnonzero(np.diff(np.r_[0, o, 0]))
            spans += [
                (float(times[s0]), float(times[min(s1, len(times) - 1)]))
                for s0, s1 in zip(edges[::2], edges[1::2])
            ]
        for t0_, t1_ in _merge(spans):
            ax.add_patch(
                plt.Rectangle((t0_, a / 1000.0), t1_ - t0_, (b - a) / 1000.0, color="0.5", alpha=0.15, lw=0)
            )
    if np.isfinite(lo):
        pad = 0.2
        ylo, yhi = max(lo - pad, 0.0), min(hi + pad, data["length"] / 1000.0)
    else:
        ylo, yhi = 0.0, max(data["length"] / 1000.0, 0.1)
    ax.set_ylim(ylo, yhi)
    clock_axis(ax, 0.0, duration, t0=clock0)
    # Signals: a bar per aspect period; a signal on a loop beside the line dashed, just above.
    per_px = (yhi - ylo) / (fig.get_size_inches()[1] * fig.dpi * 0.8)
    at = np.array([s["s"] / 1000.0 for s in sigs])
    # each bar no thicker than the gap to its neighbours (in points), so dense stations
    # show their signals side by side, not as one band
    gaps = np.diff(at) / per_px if len(at) > 1 else np.array([])
    near = np.minimum(np.r_[np.inf, gaps], np.r_[gaps, np.inf]) if len(at) > 1 else np.full(len(at), np.inf)
    widths = np.clip(0.8 * near * 72.0 / fig.dpi, 0.5, 2.5)
    for s, lw in zip(sigs, widths):
        beside = not s.get("on_line", True)
        y = s["s"] / 1000.0 + (4 * per_px if beside else 0.0)
        changes = s["aspects"] or [(0.0, "UNKNOWN")]
        for k, (t0, asp) in enumerate(changes):
            t1 = changes[k + 1][0] if k + 1 < len(changes) else duration
            ax.plot(
                [t0, t1],
                [y, y],
                color=ASPECT_COLOURS.get(asp, "k"),
                lw=float(lw) if not beside else float(min(lw, 1.5)),
                solid_capstyle="butt",
                ls="-" if not beside else (0, (4, 2)),
            )
    # Their names inside the axes, at the left (and a second column beside it), as
    # many as fit without printing over each other.
    shown = [s for s in sigs if ylo <= s["s"] / 1000.0 <= yhi]
    ys = [s["s"] / 1000.0 for s in shown]
    cols = _label_rows(ys, ylo, yhi, fig.get_size_inches()[1] * fig.dpi * 0.8, 7.0)
    for s, y, col in zip(shown, ys, cols):
        if col < 0:
            continue
        label = f"S{s['signal']}{'▲' if s['facing'] > 0 else '▼'}" + (
            "" if s.get("on_line", True) else " loop"
        )
        ax.annotate(
            label,
            (0.005 + 0.045 * col, y),
            xycoords=("axes fraction", "data"),
            ha="left",
            va="center",
            fontsize=7,
            bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.8),
        )
    for tx, fy, name, c in names:  # each train named where its run begins
        ax.annotate(
            name,
            (tx, fy),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=8,
            color=c,
            fontweight="bold",
            annotation_clip=True,
            bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.7),
        )
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles += [
        Line2D([], [], color=ASPECT_COLOURS["STOP"], lw=2.5, label="signal at stop"),
        Line2D([], [], color=ASPECT_COLOURS["APPROACH_1"], lw=2.5, label="signal at caution"),
        Line2D([], [], color=ASPECT_COLOURS["CLEAR_1"], lw=2.5, label="signal clear"),
        Patch(color="0.5", alpha=0.3, label="block occupied"),
    ]
    ax.set_xlabel("clock")
    ax.set_ylabel(f"km along {data['reference']}'s line")
    ax.set_title(title or "space-time chart: trains, blocks (grey = occupied) and signal aspects")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.grid(alpha=0.3)
    return save_figure(fig, out)


__all__ = ["clock_axis", "plot_signal_chart", "train_colours"]
