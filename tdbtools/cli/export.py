"""``tdbtools export`` (GIS and 3-D formats) and ``tdbtools convert`` (MSTS files)."""

from __future__ import annotations

from pathlib import Path

import click

from .common import _deprecated, _handle_errors, _load, _need
from .options import _strict_option


@click.command("export")
@click.argument("route", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["geojson", "json", "csv", "vtk"]),
    help="geojson: lon/lat features; json: the whole model; csv: sampled points; vtk: .vtp "
    "polylines. Default: from the --out suffix (.geojson, .json, .csv, .vtp/.vtk).",
)
@click.option("--out", type=click.Path(path_type=Path), help="Output file (default: standard output).")
@click.option(
    "--spacing",
    type=float,
    default=None,
    metavar="M",
    help="Metres between samples for csv/vtk.  [default: 10]",
)
@click.option("--step", "old_step", type=float, hidden=True, help="Deprecated: --spacing (metres).")
@click.option("--overwrite", is_flag=True, help="Replace an existing output file.")
@_strict_option
@_handle_errors
def export_cmd(
    route: Path,
    fmt: str | None,
    out: Path | None,
    spacing: float | None,
    old_step: float | None,
    overwrite: bool,
    strict: bool,
) -> None:
    """Export a route for GIS and 3-D tools (GeoJSON needs pyproj: tdbtools[geo])."""
    from .._fs import check_target
    from ..export import check_vtk_name, export_route

    if old_step is not None:
        _deprecated("export --step M", "--spacing M (--step is a time step in seconds)")
        spacing = old_step if spacing is None else spacing
    step = 10.0 if spacing is None else spacing
    if out is not None:
        check_vtk_name(out)  # before the format is guessed from it: .vtk is refused by name
    if fmt is None:
        by_suffix = {".geojson": "geojson", ".json": "json", ".csv": "csv", ".vtp": "vtk"}
        fmt = by_suffix.get(out.suffix.lower()) if out is not None else None
        if fmt is None:
            raise click.UsageError(
                "give --format geojson|json|csv|vtk (or an --out file ending in "
                ".geojson, .json, .csv or .vtp)"
            )
    if fmt == "geojson":
        _need("pyproj", "a GeoJSON export")
    if out is not None:
        check_target(out, overwrite)
    from ..errors import Diagnostics

    r = _load(route, strict=strict)
    left_out = Diagnostics(strict=strict)
    if out is None:
        click.echo(export_route(r, fmt, None, step=step, diagnostics=left_out), nl=False)
    else:
        export_route(r, fmt, out, overwrite=overwrite, step=step, diagnostics=left_out)
        click.echo(f"wrote {out}")
    for f in left_out.findings:
        click.echo(f"warning: {f} (--strict refuses such exports)", err=True)


@click.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for the MSTS files.")
@click.option("--overwrite", is_flag=True, help="Replace files that exist in --out.")
@_strict_option
@_handle_errors
def convert(source: Path, out: Path, overwrite: bool, strict: bool) -> None:
    """Write a route (a route folder, or a JSON export of one) as MSTS files: .trk, .tdb,
    .rdb and tsection.dat (UTF-16LE with BOM, CRLF), each written atomically. Input
    files are never overwritten unless --overwrite."""
    from ..export import convert_route, route_from_json

    r = route_from_json(source) if source.suffix.lower() == ".json" else _load(source, strict=strict)
    out.mkdir(parents=True, exist_ok=True)
    if Path(r.folder).resolve() == out.resolve() and not overwrite:
        raise click.UsageError("--out is the route's own folder: give another folder, or --overwrite")
    for p in convert_route(r, out, overwrite=overwrite):
        click.echo(f"wrote {p}")
