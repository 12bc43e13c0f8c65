"""A picture of a sweep: running time per path, one colour per consist (matplotlib is
imported only when a plot is drawn)."""

from __future__ import annotations

from pathlib import Path


def plot_sweep(result, out: str | Path, *, value: str = "running_time_s") -> Path:
    """Draw ``value`` (a numeric column, running time by default) per path for every
    replay of a sweep (a :class:`~tdbtools.sweep.SweepResult` or the folder / table of
    one); failed replays are red crosses on the axis. PNG, SVG or PDF by suffix."""
    from ..render.plots import pyplot, save_figure
    from .run import SweepResult, read_sweep

    res = result if isinstance(result, SweepResult) else read_sweep(result)
    plt = pyplot()
    paths = list(dict.fromkeys(r["path"] for r in res.rows))
    consists = list(dict.fromkeys(r["consist"] for r in res.rows))
    xi = {p: i for i, p in enumerate(paths)}
    width = max(6.0, min(40.0, 0.25 * len(paths) + 3.0))
    fig, ax = plt.subplots(figsize=(width, 5.0), constrained_layout=True)
    cmap = plt.get_cmap("tab10")
    spread = 0.6 / max(len(consists), 1)
    for k, c in enumerate(consists):
        ok = [r for r in res.rows if r["consist"] == c and r["status"] == "ok" and r.get(value) is not None]
        bad = [r for r in res.rows if r["consist"] == c and r["status"] != "ok"]
        dx = (k - (len(consists) - 1) / 2) * spread
        ax.scatter(
            [xi[r["path"]] + dx for r in ok],
            [float(r[value]) for r in ok],
            s=14,
            color=cmap(k % 10),
            label=c,
            alpha=0.8,
        )
        if bad:
            ax.scatter(
                [xi[r["path"]] + dx for r in bad],
                [0.0] * len(bad),
                marker="x",
                s=18,
                color="tab:red",
                label=f"{c}: failed" if k == 0 or len(consists) < 4 else None,
            )
    ax.set_xticks(range(len(paths)))
    ax.set_xticklabels(paths, rotation=90, fontsize=7 if len(paths) > 40 else 9)
    ax.set_xlim(-0.7, len(paths) - 0.3)
    ax.set_ylabel(value.replace("_", " "))
    ax.set_title(f"sweep: {len(res.rows)} replays over {len(paths)} paths")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return save_figure(fig, out, dpi=100)


__all__ = ["plot_sweep"]
