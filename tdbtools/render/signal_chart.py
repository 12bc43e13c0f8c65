"""Space-time (time–distance) chart of a signalled replay, drawn as OSRD draws one: time
across, distance along the line up; each train a band between its front and rear; the
blocks between signals shaded while a train occupies them; every signal a tick coloured by
its aspect over time (docs/signals.md §6)."""

from __future__ import annotations

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


def plot_signal_chart(data: dict, out: str | Path, *, title: str | None = None) -> Path:
    """Draw the chart from :func:`tdbtools.physics.signalling.space_time` data."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(12, 7), constrained_layout=True)
    duration = max(data.get("duration", 0.0), 1.0)
    trains = data["trains"]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    lo, hi = np.inf, -np.inf
    for i, (name, tr) in enumerate(trains.items()):
        t, f, r = tr["time"], tr["front"], tr["rear"]
        ok = np.isfinite(f)
        if not ok.any():
            continue
        c = colours[i % len(colours)]
        ax.fill_between(
            t, np.minimum(f, r), np.maximum(f, r), where=ok, color=c, alpha=0.55, lw=0, label=name
        )
        ax.plot(t, f, color=c, lw=1.0)
        lo, hi = min(lo, np.nanmin(np.minimum(f, r))), max(hi, np.nanmax(np.maximum(f, r)))
    # Block occupancy: a block is occupied while any train overlaps it.
    sigs = data["signals"]
    for a, b in _blocks(sigs, data["length"]):
        for tr in trains.values():
            times = tr["time"]
            lo_t, hi_t = np.minimum(tr["front"], tr["rear"]), np.maximum(tr["front"], tr["rear"])
            o = (np.isfinite(lo_t) & (hi_t > a) & (lo_t < b)).astype(int)
            edges = np.flatnonzero(np.diff(np.r_[0, o, 0]))
            for s0, s1 in zip(edges[::2], edges[1::2]):
                t1 = times[min(s1, len(times) - 1)]
                ax.add_patch(
                    plt.Rectangle((times[s0], a), t1 - times[s0], b - a, color="0.5", alpha=0.18, lw=0)
                )
    # Signals: a short horizontal bar per aspect period.
    for s in sigs:
        beside = not s.get("on_line", True)
        y = s["s"] + (25.0 if beside else 0.0)  # a signal on a loop track beside the line: drawn just above
        changes = s["aspects"] or [(0.0, "UNKNOWN")]
        for k, (t0, asp) in enumerate(changes):
            t1 = changes[k + 1][0] if k + 1 < len(changes) else duration
            ax.plot(
                [t0, t1],
                [y, y],
                color=ASPECT_COLOURS.get(asp, "k"),
                lw=3.0 if not beside else 2.0,
                solid_capstyle="butt",
                ls="-" if not beside else (0, (4, 2)),
            )
        label = f"S{s['signal']}{'▲' if s['facing'] > 0 else '▼'}"
        if beside:
            ax.annotate(
                label + " loop",
                (duration, y),
                xytext=(4, 0),
                textcoords="offset points",
                ha="left",
                va="center",
                fontsize=7,
                annotation_clip=False,
            )
        else:
            ax.annotate(
                label,
                (0, y),
                xytext=(-4, 0),
                textcoords="offset points",
                ha="right",
                va="center",
                fontsize=7,
                annotation_clip=False,
            )
    if np.isfinite(lo):
        pad = 200.0
        ax.set_ylim(max(lo - pad, 0.0), min(hi + pad, data["length"]))
    ax.set_xlim(0, duration)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"distance along {data['reference']}'s line (m)")
    ax.set_title(title or "space-time chart: trains, blocks (grey = occupied) and signal aspects")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
    return save_figure(fig, out)


__all__ = ["plot_signal_chart"]
