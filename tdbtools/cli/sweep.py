"""``tdbtools sweep``: many replays on Dask."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .common import EXIT_FINDINGS, _echo_json, _handle_errors, _load, _need
from .compile import _kernel_notice
from .options import _strict_option


@click.command()
@click.argument("spec", type=click.Path(path_type=Path))
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="An existing Dask scheduler (tcp://host:8786); default: a local cluster.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Local workers (default: one per core); with --scheduler, wait for this many.",
)
@click.option(
    "--out", "out_dir", type=click.Path(path_type=Path), default=Path("sweep-out"), show_default=True
)
@click.option(
    "--traces/--no-traces", default=None, help="Also write each replay's traces (default: the spec's)."
)
@click.option("--plot", is_flag=True, help="Draw running time per path to OUT/sweep.png.")
@click.option("--parquet", is_flag=True, help="Also write OUT/sweep.parquet (needs pyarrow).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option(
    "--max-combinations",
    type=click.IntRange(min=1),
    metavar="N",
    help="Allow a spec to expand to more than 10,000 replays.",
)
@_strict_option
@_handle_errors
def sweep(
    spec: Path,
    scheduler: str | None,
    workers: int | None,
    out_dir: Path,
    traces: bool | None,
    plot: bool,
    parquet: bool,
    as_json: bool,
    max_combinations: int | None,
    strict: bool,
) -> None:
    """Run every path x consist x parameter combination of SPEC as a replay, on Dask
    (needs tdbtools[sweep]); resumes in --out. Exit status 1 when a replay failed,
    derailed or collided."""
    from ..sweep import plot_sweep, read_sweep_spec, run_sweep

    show = sys.stderr.isatty()
    bar = None

    def progress(done: int, total: int, record: dict | None) -> None:
        nonlocal bar
        if not show:
            return
        if bar is None:
            bar = click.progressbar(
                length=total, label="sweeping", file=sys.stderr, show_eta=True, show_pos=True
            )
            bar.__enter__()
            bar.update(done)
        else:
            bar.update(1)

    def log(message: str) -> None:
        click.echo(message, err=True)

    _need("distributed", "a sweep")
    if plot:
        _need("matplotlib", "--plot")
    if parquet:
        _need("pyarrow", "--parquet")
    sweep_spec = (
        read_sweep_spec(spec)
        if max_combinations is None
        else read_sweep_spec(spec, max_combinations=max_combinations)
    )
    _load(Path(sweep_spec.route), strict=strict)  # the summary once, here, not once per worker
    _kernel_notice()  # compiled once here: the workers load them from numba's cache
    try:
        result = run_sweep(
            sweep_spec,
            out=out_dir,
            scheduler=scheduler,
            workers=workers,
            progress=progress,
            traces=traces,
            parquet=parquet,
            log=log,
            strict=strict,
        )
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    plot_file = plot_sweep(result, out_dir / "sweep.png") if plot else None
    if as_json:  # JSON only on stdout: the files are in it
        _echo_json(
            "sweep",
            {
                **result.summary(),
                "table": str(result.table_path),
                "plot": None if plot_file is None else str(plot_file),
            },
        )
    else:
        click.echo(result.summary_text())
        click.echo(f"table: {result.table_path}")
        if plot_file is not None:
            click.echo(f"plot: {plot_file}")
    if result.has_problems:
        raise click.exceptions.Exit(EXIT_FINDINGS)
