"""The ``tdbtools`` command line.

Exit status: 0 success; 1 the command ran and found problems; 2 bad usage or bad
input (a clear message on stderr, no traceback unless ``--debug``); 3 an internal
error (a bug in tdbtools).
"""
from __future__ import annotations

import functools
import json
import sys
import time
from pathlib import Path

import click

from . import __version__
from .errors import TdbToolsError

EXIT_FINDINGS = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3


def bundled_sample_route() -> Path:
    """The sample route shipped with tdbtools (in the wheel, or in a source checkout)."""
    pkg = Path(__file__).resolve().parent
    for base in (pkg / "sample_routes", pkg.parent / "sample_routes"):
        route = base / "sample" / "ROUTES" / "SAMPLE"
        if route.is_dir():
            return route
    raise TdbToolsError("the bundled sample route is missing from this installation")


def _handle_errors(func):
    """Turn tdbtools errors into a message and exit status 2; bugs into status 3."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        ctx = click.get_current_context()
        debug = bool(ctx.find_root().params.get("debug"))
        try:
            return func(*args, **kwargs)
        except TdbToolsError as exc:
            if debug:
                raise
            click.echo(f"error: {exc}", err=True)
            ctx.exit(EXIT_INPUT)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)
        except BrokenPipeError:
            # The reader of our output went away (e.g. `| head`): not an error.
            sys.stderr.close()
            ctx.exit(0)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:  # noqa: BLE001 - a bug: say so plainly
            if debug:
                raise
            click.echo(f"internal error: {type(exc).__name__}: {exc}\n"
                       "This is a bug in tdbtools; run again with --debug for the traceback.", err=True)
            ctx.exit(EXIT_INTERNAL)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="tdbtools")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of short error messages.")
def main(debug: bool) -> None:
    """Read, inspect and check Microsoft Train Simulator / Open Rails routes."""


@main.command()
@click.argument("route", required=False, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--no-cache", is_flag=True, help="Parse the files even if a cached copy is valid.")
@click.option("--lenient", is_flag=True, help="Tolerate defects (listed as warnings) instead of failing.")
@_handle_errors
def info(route: Path | None, as_json: bool, no_cache: bool, lenient: bool) -> None:
    """Summarise a route: nodes, sections, items, track length, tile extent.

    ROUTE is a route folder (…/ROUTES/NAME); without it, the bundled sample route.
    """
    from .formats.route import load_route

    folder = route if route is not None else bundled_sample_route()
    t0 = time.perf_counter()
    r = load_route(folder, cache=not no_cache, strict=not lenient)
    elapsed = time.perf_counter() - t0
    summary = r.summary()
    summary["load_seconds"] = round(elapsed, 4)
    if as_json:
        summary["warning_messages"] = [str(w) for w in r.warnings]
        click.echo(json.dumps(summary, indent=2, ensure_ascii=False))
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
        lines.append(f"tiles       x {ext['tile_x_min']}..{ext['tile_x_max']}, "
                     f"z {ext['tile_z_min']}..{ext['tile_z_max']}")
    ts = summary["tsection"]
    lines.append(f"tsection    {ts['sections']} sections, {ts['shapes']} shapes, "
                 f"{ts['dynamic_paths']} dynamic-track paths")
    if summary["road_nodes"]:
        lines.append(f"roads       {summary['road_nodes']['total']} nodes")
    lines.append(f"loaded in   {elapsed * 1000:.1f} ms{'' if no_cache else ' (cache enabled)'}")
    if r.warnings:
        lines.append(f"warnings    {len(r.warnings)}")
        lines.extend(f"  {w}" for w in r.warnings[:20])
        if len(r.warnings) > 20:
            lines.append(f"  … {len(r.warnings) - 20} more (use --json for all)")
    click.echo("\n".join(lines))


@main.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the generic tree as JSON.")
@click.option("--lenient", is_flag=True, help="Tolerate defects such as missing include files.")
@_handle_errors
def parse(file: Path, as_json: bool, lenient: bool) -> None:
    """Parse any STF file and print its generic tree: normalised STF text (comments
    dropped, includes expanded), or JSON with --json."""
    from .stf import parse_file

    doc = parse_file(file, strict=not lenient)
    if as_json:
        click.echo(json.dumps(doc.to_json(), indent=1, ensure_ascii=False))
        return
    from .stf.writer import format_stf

    click.echo(format_stf(doc), nl=False)


if __name__ == "__main__":  # pragma: no cover
    main()
