"""``tdbtools compare``: the speeds of two traces, per phase."""

from __future__ import annotations

from pathlib import Path

import click

from .common import _echo_json, _handle_errors
from .options import _plot_target


@click.command("compare")
@click.argument("trace", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("other", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--axis",
    type=click.Choice(["time", "distance"]),
    default="time",
    show_default=True,
    help="Compare against.",
)
@click.option(
    "--plot",
    "plot_opt",
    is_flag=False,
    flag_value="",
    default=None,
    help="Also draw both speeds: to --out, else compare.png (needs tdbtools[plot]).",
)
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="The picture of --plot (PNG).")
@click.option("--overwrite", is_flag=True, help="Replace an existing picture.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures per phase as JSON.")
@_handle_errors
def compare(
    trace: Path,
    other: Path,
    axis: str,
    plot_opt: str | None,
    out: Path | None,
    overwrite: bool,
    as_json: bool,
) -> None:
    """Compare the speed of TRACE with OTHER (replay traces, Open Rails dumps): RMS, max
    and bias of the difference per phase (docs/physics.md §7.7)."""
    from .._fs import check_target
    from ..physics.compare import compare_traces, read_trace

    default = out if out is not None else Path("compare.png")
    plot_out = _plot_target(plot_opt, "compare --plot FILE", "--plot --out FILE", default)
    if plot_opt is None and out is not None:
        raise click.UsageError("--out names the picture of --plot: give --plot too")
    if plot_out is not None:
        check_target(plot_out, overwrite)
    cmp = compare_traces(read_trace(trace), read_trace(other), axis)
    written: list[str] = []
    if plot_out is not None:
        from ..render.compare_plot import plot_comparison

        written.append(str(plot_comparison(cmp, plot_out, (trace.name, other.name))))
    if as_json:
        _echo_json("compare", {**cmp.to_json(), "files": written})
        return
    for line in cmp.lines():
        click.echo(line)
    for f in written:
        click.echo(f"wrote {f}")
