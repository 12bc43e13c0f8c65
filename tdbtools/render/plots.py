"""matplotlib plots (imported only when a plot is asked for)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from .._fs import atomic_output
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
    try:
        with atomic_output(out) as tmp:
            fig.savefig(tmp, dpi=dpi, format=out.suffix[1:].lower() or None)
    finally:
        plt.close(fig)
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


def plot_speed_distance(trace: dict, name: str, events: Iterable[ReplayEvent], out: str | Path) -> Path:
    """Speed and speed limit against distance for one train of a replay, with events."""
    plt = pyplot()
    d = trace["distance"] / 1000.0
    fig, (ax, ax2) = plt.subplots(
        2, 1, figsize=(11, 6.5), sharex=True, constrained_layout=True, gridspec_kw={"height_ratios": [3, 1]}
    )
    ax.plot(d, trace["speed"] * 3.6, color="tab:blue", label="speed")
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
    ax.grid(alpha=0.3)
    ax2.plot(d, trace["throttle"], color="tab:green", label="throttle")
    ax2.plot(d, trace["brake"], color="tab:red", label="brake")
    ax2.set_ylabel("control")
    ax2.set_xlabel("distance (km)")
    ax2.set_ylim(-0.05, 1.05)
    ax2.legend(loc="upper right")
    ax2.grid(alpha=0.3)
    return save_figure(fig, out, dpi=110)
