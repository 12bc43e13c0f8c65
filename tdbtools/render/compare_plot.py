"""The plot of ``tdbtools compare --plot``: both speeds and their difference."""

from __future__ import annotations

from pathlib import Path

from ..physics.compare import Comparison
from .plots import pyplot, save_figure


def plot_comparison(cmp: Comparison, out: str | Path, labels: tuple[str, str] = ("first", "second")) -> Path:
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(9, 6), height_ratios=(3, 1))
    ax1.plot(cmp.x, cmp.speed_a * 3.6, label=labels[0])
    ax1.plot(cmp.x, cmp.speed_b * 3.6, label=labels[1], linestyle="--")
    ax1.set_ylabel("speed (km/h)")
    ax1.legend()
    ax2.plot(cmp.x, (cmp.speed_a - cmp.speed_b), color="black")
    ax2.set_ylabel("difference (m/s)")
    ax2.set_xlabel("time (s)" if cmp.axis == "time" else "distance (m)")
    ax1.set_title(f"speed RMS difference {cmp.overall.rms:.3f} m/s")
    return save_figure(fig, out)
