"""The body of ``tdbtools sweep`` (the click command in :mod:`tdbtools.cli` calls
:func:`sweep_command`)."""
from __future__ import annotations

import sys
from pathlib import Path

import click


def sweep_command(spec_file: Path, *, scheduler: str | None = None, workers: int | None = None,
                  out: Path = Path("sweep-out"), traces: bool | None = None, plot: bool = False,
                  parquet: bool = False, as_json: bool = False, max_combinations: int | None = None) -> int:
    """Run a sweep with a progress bar on stderr, print its summary, optionally draw
    the plot; returns the exit status (1 when a replay failed, derailed or collided)."""
    import json

    from .run import run_sweep
    from .spec import read_sweep_spec

    spec = read_sweep_spec(spec_file) if max_combinations is None else \
        read_sweep_spec(spec_file, max_combinations=max_combinations)
    show = sys.stderr.isatty()
    bar = None

    def progress(done: int, total: int, record: dict | None) -> None:
        nonlocal bar
        if not show:
            return
        if bar is None:
            bar = click.progressbar(length=total, label="sweeping", file=sys.stderr, show_eta=True,
                                    show_pos=True)
            bar.__enter__()
            bar.update(done)
        else:
            bar.update(1)

    def log(message: str) -> None:
        click.echo(message, err=True)

    try:
        result = run_sweep(spec, out=out, scheduler=scheduler, workers=workers, progress=progress,
                           traces=traces, parquet=parquet, log=log)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if as_json:
        click.echo(json.dumps(result.summary(), indent=2))
    else:
        click.echo(result.summary_text())
    click.echo(f"table: {result.table_path}")
    if plot:
        from .plot import plot_sweep

        click.echo(f"plot: {plot_sweep(result, out / 'sweep.png')}")
    s = result.summary()
    return 1 if s["failed"] or s["derailed"] or s["collisions"] or result.lost else 0


__all__ = ["sweep_command"]
