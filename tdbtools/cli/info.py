"""Commands that read and summarise: ``info`` (a route), ``parse`` (any STF file),
``signals`` (a route's signalling)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from .common import EXIT_INPUT, JSON_SCHEMA_VERSION, _echo_json, _handle_errors, _load, _tolerated
from .options import _lenient_option, _strict_option


@click.command()
@click.argument("route", required=False, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--no-cache", is_flag=True, help="Parse the files even if a cached copy is valid.")
@_strict_option
@_lenient_option
@_handle_errors
def info(route: Path | None, as_json: bool, no_cache: bool, strict: bool, lenient: bool) -> None:
    """Summarise a route: nodes, sections, items, track length, tile extent.

    ROUTE is a route folder (…/ROUTES/NAME, or a file in it); without it, the bundled
    sample route.
    """
    t0 = time.perf_counter()
    r = _load(route, no_cache=no_cache, strict=strict)
    elapsed = time.perf_counter() - t0
    summary = r.summary()
    summary["load_seconds"] = round(elapsed, 4)
    if as_json:
        summary["warning_messages"] = [str(w) for w in r.warnings]
        summary["tolerated"] = [w.to_json() for w in r.warnings]  # typed: docs/findings.md
        _echo_json("info", summary)
        return
    n = summary["nodes"]
    ext = summary["tile_extent"]
    lines = [
        f"route       {summary['name']} ({summary['route_id']})",
        f"folder      {summary['folder']}",
        f"nodes       {n['total']}: {n['vector']} vector, {n['junction']} junction, {n['end']} end",
        f"sections    {summary['sections']} vector sections, {summary['track_km']:.3f} km of track",
        "items       " + (", ".join(f"{v} {k}" for k, v in summary["items"].items()) or "none"),
    ]
    if ext:
        lines.append(
            f"tiles       x {ext['tile_x_min']}..{ext['tile_x_max']}, "
            f"z {ext['tile_z_min']}..{ext['tile_z_max']}"
        )
    ts = summary["tsection"]
    lines.append(
        f"tsection    {ts['sections']} sections, {ts['shapes']} shapes, "
        f"{ts['dynamic_paths']} dynamic-track paths"
    )
    if summary["road_nodes"]:
        lines.append(f"roads       {summary['road_nodes']['total']} nodes")
    lines.append(f"loaded in   {elapsed * 1000:.1f} ms{'' if no_cache else ' (cache enabled)'}")
    if r.warnings:
        lines.append(
            f"tolerated   {sum(w.count for w in r.warnings)} defect(s) (`tdbtools audit` lists them)"
        )
    click.echo("\n".join(lines))


@click.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the generic tree as JSON.")
@_strict_option
@_lenient_option
@click.option(
    "--root",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder that includes may read from (default: the install holding ROUTES/ and "
    "GLOBAL/ above the file, else the file's own folder).",
)
@_handle_errors
def parse(file: Path, as_json: bool, strict: bool, lenient: bool, root: Path | None) -> None:
    """Parse any STF file and print its generic tree: normalised STF text (comments
    dropped, includes expanded), or JSON with --json."""
    from ..errors import Diagnostics
    from ..stf import dumps_deep, parse_file

    diags = Diagnostics(strict=strict)
    doc = parse_file(file, diagnostics=diags, root=root)
    _tolerated(diags.findings, "--json shows the tree as read; --strict refuses such files")
    if as_json:
        tree = doc.to_json()
        body = dumps_deep(tree, indent=1)
        # The tree can be deep (dumps_deep has no recursion limit): the schema key is
        # put in front of the tree's own keys as text.
        head = f'{{\n "schema": "tdbtools.parse/{JSON_SCHEMA_VERSION}",'
        click.echo(head + body[1:] if body.startswith("{\n") else body)
        return
    from ..stf.writer import format_stf

    click.echo(format_stf(doc), nl=False)


@click.command("signals")
@click.argument("route", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON: signals, heads, scripts, warnings.")
@_strict_option
@_handle_errors
def signals_cmd(route: Path, as_json: bool, strict: bool) -> None:
    """List a route's signal objects, heads, types, scripts and warnings (sigcfg.dat, the
    signal scripts, world-file Signal objects and TDB signal items)."""
    from ..signals import signal_report

    rep = signal_report(_load(route, strict=strict))
    if as_json:
        _echo_json("signals", rep)
        return
    sc = rep["scripts"]
    click.echo(
        f"{rep['route']}: sigcfg {rep['mode'] or 'none'}, {rep['types']} signal types, "
        f"{len(rep['signals'])} signal objects, {len(rep['heads'])} heads, "
        f"{rep['speedposts']} speed posts; scripts: {sc['parsed']} parsed, {sc['errors']} errors, "
        f"{sc['bound']} bound to types"
    )
    for h in rep["heads"][:200]:
        click.echo(
            f"  item {h['item']:5d}  {h['type']:<16} {h['function']:<9} node {h['node']:5d} "
            f"{h['offset']:9.1f} m  dir {h['direction']}  script {h['script'] or '-'}"
        )
    for w in rep["warnings"][:50]:
        click.echo(f"  warning: {w}")
    if strict and rep["defects"]:
        # --strict refuses what Open Rails tolerates: the signalling input too.
        click.echo(
            f"error: {rep['defects']} signalling defect(s) (sigcfg.dat, scripts, world signals)", err=True
        )
        raise click.exceptions.Exit(EXIT_INPUT)
