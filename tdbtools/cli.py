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
                _traceback()
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
        except OSError as exc:
            # The file system refused something (an output folder that does not exist,
            # no permission, a full disk): bad input, not a bug.
            if debug:
                _traceback()
            where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
            click.echo(f"error: {exc.strerror or exc}{where}", err=True)
            ctx.exit(EXIT_INPUT)
        except Exception as exc:  # noqa: BLE001 - a bug: say so plainly
            if debug:
                _traceback()
            click.echo(
                f"internal error: {type(exc).__name__}: {exc}\n"
                "This is a bug in tdbtools; run again with --debug for the traceback.",
                err=True,
            )
            ctx.exit(EXIT_INTERNAL)

    return wrapper


def _traceback() -> None:
    """--debug: the traceback on stderr; the exit status stays what it would be without."""
    import traceback

    traceback.print_exc(file=sys.stderr)


def _strict_option(func):
    return click.option(
        "--strict",
        is_flag=True,
        help="Refuse input with defects Open Rails tolerates (default: read it as Open Rails does "
        "and summarise what was tolerated on stderr).",
    )(func)


def _lenient_option(func):
    # Reading leniently is the default now; the flag stays so that old scripts run.
    return click.option("--lenient", is_flag=True, hidden=True)(func)


def _deprecated(old: str, new: str) -> None:
    """An old spelling still works for one release, with this warning on stderr
    (README, "One grammar")."""
    click.echo(f"warning: {old} is deprecated and goes in the next release: use {new}", err=True)


#: What each optional extra brings, by the module a command needs from it.
EXTRAS = {
    "matplotlib": "plot",
    "pyproj": "geo",
    "pyvista": "render",
    "plotly": "render",
    "imageio": "render",
    "distributed": "sweep",
    "pyarrow": "",
}


def _need(module: str, what: str) -> None:
    """Fail now (exit 2), before any work or output, when ``what`` needs an optional
    package that is not installed."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        extra = EXTRAS.get(module, "")
        how = f'pip install "tdbtools[{extra}]"' if extra else f"pip install {module}"
        raise click.UsageError(f"{what} needs {module}, which is not installed: {how}")


class WorldPointType(click.ParamType):
    """A world point, written the one way every command takes it: ``TX,TZ,X,Z``."""

    name = "TX,TZ,X,Z"

    def convert(self, value, param, ctx):  # noqa: ANN001, ANN201
        if isinstance(value, tuple):
            return value
        from .track.locate import parse_world_point

        try:
            return parse_world_point(value)
        except TdbToolsError as exc:
            self.fail(str(exc), param, ctx)


WORLD_POINT = WorldPointType()

#: The version of every command's --json output (docs/cli-json.md): a change that
#: removes or renames a key, or changes its meaning, raises it.
JSON_SCHEMA_VERSION = 1


def _echo_json(command: str, data: dict) -> None:
    """Print a command's --json report: a JSON object whose first key ``schema`` names
    the command and the version of its keys (docs/cli-json.md), and nothing else on
    stdout."""
    out = {"schema": f"tdbtools.{command}/{JSON_SCHEMA_VERSION}", **data}
    click.echo(json.dumps(out, indent=2, ensure_ascii=False))


def _tolerated(findings, hint: str | None = None) -> None:  # noqa: ANN001
    """One short summary on stderr of the defects a lenient read tolerated (warnings and
    errors; remarks stay for `audit`)."""
    from .errors import summarize_findings

    shown = [f for f in findings if f.severity != "info"]
    if shown:
        text = summarize_findings(shown, hint=hint) if hint else summarize_findings(shown)
        click.echo(text, err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="tdbtools")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of short error messages.")
def main(debug: bool) -> None:
    """Read, check, travel, replay, draw and export Microsoft Train Simulator / Open Rails
    routes."""


@main.command()
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


@main.command()
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
    from .errors import Diagnostics
    from .stf import dumps_deep, parse_file

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
    from .stf.writer import format_stf

    click.echo(format_stf(doc), nl=False)


def _load(route: Path | None, *, no_cache: bool = False, strict: bool = False, quiet: bool = False):
    """Load a route as the command line does (docs/findings.md §1): as Open Rails would,
    with one summary of what was tolerated on stderr; ``strict`` refuses instead."""
    from .formats.route import load_route

    folder = route if route is not None else bundled_sample_route()
    # One lenient, cached load (with its findings) decides: strict refuses a route with
    # problems (load_route parses again only to raise the located error).
    r = load_route(folder, cache=not no_cache, strict=strict)
    if not quiet:
        _tolerated(r.warnings)
    return r


@main.command()
@click.argument("route", required=False, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--fail-on",
    type=click.Choice(["error", "warning"]),
    default="error",
    show_default=True,
    help="Exit 1 when a finding of this severity or above is found.",
)
@click.option("--strict", is_flag=True, hidden=True, help="Deprecated: --fail-on warning.")
@click.option(
    "--paths/--no-paths",
    default=True,
    show_default=True,
    help="Also check the route's .pat files and resolve each path on the track.",
)
@_lenient_option
@click.option(
    "--gap",
    type=float,
    default=0.5,
    show_default=True,
    help="Metres above which a join between sections is a gap.",
)
@_handle_errors
def audit(
    route: Path | None, as_json: bool, fail_on: str, strict: bool, paths: bool, lenient: bool, gap: float
) -> None:
    """Check a route for defects: broken or one-way pin links, wrong pin counts, unknown
    sections, gaps between sections and at node ends, broken item references, items off
    their track, and paths that do not resolve.

    Every finding has a code (docs/findings.md), a severity, a message, node/item ids and
    a world location. The route is always read (what the reader tolerated are findings
    too). Exit status 1 when an error is found; with --fail-on warning, also a warning.
    """
    from .track.audit import audit_route

    if strict:
        # Elsewhere --strict refuses tolerated input; audit never refuses a route.
        _deprecated("audit --strict", "audit --fail-on warning")
        fail_on = "warning"
    r = _load(route, quiet=True)
    say = _stderr_progress("resolving paths")
    report = audit_route(r, gap_tolerance=gap, node_end_tolerance=gap, paths=paths, progress=say)
    findings = report.findings
    problems = report.problems(fail_on)
    unresolved = report.unresolved_paths
    if as_json:
        _echo_json("audit", report.to_json())
    else:
        c = report.closure
        click.echo(f"route       {r.name}")
        click.echo(
            f"closure     {c['joins']} joins: p50 {c['p50'] * 1000:.2f} mm, p99 "
            f"{c['p99'] * 1000:.2f} mm, max {c['max']:.3f} m"
            if c["joins"]
            else "closure     no joins"
        )
        counts = report.counts
        click.echo("findings    " + (", ".join(f"{n} {k}" for k, n in counts.items()) or "none"))
        for f in findings[:50]:
            click.echo(f"  [{f.severity}] {f}")
        if len(findings) > 50:
            click.echo(f"  … {len(findings) - 50} more (use --json for all)")
        if report.path_resolution is not None:
            files = len(report.path_resolution)
            click.echo(
                f"paths       {files - len(unresolved)} of {files} resolve to a continuous route"
                + (" (the others are PATH_UNRESOLVED findings)" if unresolved else "")
            )
    if problems:
        raise click.exceptions.Exit(EXIT_FINDINGS)


def _stderr_progress(label: str):
    """A ``progress(done, total)`` that tells on stderr what a long step is doing: a
    bar on a terminal, else a line at the start and one at the end."""
    state: dict = {}

    def progress(done: int, total: int) -> None:
        if not total:
            return
        if sys.stderr.isatty():
            if "bar" not in state:
                state["bar"] = click.progressbar(length=total, label=label, file=sys.stderr)
                state["bar"].__enter__()
                state["at"] = 0
            state["bar"].update(done - state["at"])
            state["at"] = done
            if done >= total:
                state["bar"].__exit__(None, None, None)
            return
        if total < 20:
            return  # quick: no need to say
        if done == 0:
            state["t0"] = time.perf_counter()
            click.echo(f"{label}: {total} …", err=True)
        elif done >= total:
            click.echo(f"{label}: {total} done in {time.perf_counter() - state.get('t0', 0):.1f} s", err=True)

    return progress


@main.command()
@click.argument("route", type=click.Path(path_type=Path))
@click.option(
    "--at",
    "point",
    type=WORLD_POINT,
    help="The world point: tile x, tile z, then metres east and north of the tile's centre.",
)
@click.option("--tile", nargs=2, type=int, hidden=True, help="Deprecated: --at.")
@click.option("--pos", nargs=2, type=float, hidden=True, help="Deprecated: --at.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option(
    "--tolerance",
    type=click.FloatRange(min=0.0, max=1e6),
    default=2.5,
    show_default=True,
    help="Metres from the track centre line within which a point is on the track "
    "(2.5: Open Rails' MaximumCenterlineOffset).",
)
@_strict_option
@_handle_errors
def locate(
    route: Path,
    point: tuple[int, int, float, float] | None,
    tile: tuple[int, int] | None,
    pos: tuple[float, float] | None,
    as_json: bool,
    tolerance: float,
    strict: bool,
) -> None:
    """Find the track at a world point: node, section, offset, heading, grade, curvature."""
    from .track.locate import locate_point

    point = _point_or_old(point, tile, pos, "--at", "--tile TX TZ --pos X Z")
    loc = locate_point(_load(route, strict=strict), *point, tolerance=tolerance)
    if as_json:
        _echo_json("locate", loc.to_json())
        return
    click.echo(
        f"node {loc.node} ({loc.node_kind}), section {loc.section} (id {loc.section_id}), "
        f"offset {loc.offset:.3f} m of {loc.node_length:.3f} m"
    )
    click.echo(
        f"at tile ({loc.tile_x}, {loc.tile_z}) x {loc.x:.3f} y {loc.y:.3f} "
        f"z {loc.z:.3f}, {loc.lateral:+.3f} m right of the centre line"
    )
    click.echo(
        f"heading {loc.heading_deg:.3f}°, grade {loc.grade_permille:+.2f} ‰, curvature "
        f"{loc.curvature:+.6f} 1/m" + (f" (R {loc.radius:.1f} m)" if loc.radius else "")
    )


def _point_or_old(point, tile, pos, new: str, old: str):  # noqa: ANN001, ANN202
    """The world point of ``new`` (TX,TZ,X,Z), or of the deprecated pair of options
    ``old`` (with a warning); usage error when neither or both are given."""
    if (tile is None) != (pos is None):
        raise click.UsageError(f"{old} go together (deprecated: use {new} TX,TZ,X,Z)")
    if tile is not None:
        if point is not None:
            raise click.UsageError(f"give {new} or {old}, not both")
        _deprecated(old, f"{new} TX,TZ,X,Z")
        return (int(tile[0]), int(tile[1]), float(pos[0]), float(pos[1]))
    if point is None:
        raise click.UsageError(f"give the world point: {new} TX,TZ,X,Z")
    return point


@main.command()
@click.argument("route", type=click.Path(path_type=Path))
@click.option(
    "--path",
    "path_file",
    type=click.Path(path_type=Path),
    help="A .pat path to follow (a file, or a name in PATHS).",
)
@click.option("--from", "start", type=WORLD_POINT, help="Start at this world point (with --distance).")
@click.option("--from-tile", nargs=2, type=int, hidden=True, help="Deprecated: --from TX,TZ,X,Z.")
@click.option("--from-pos", nargs=2, type=float, hidden=True, help="Deprecated: --from TX,TZ,X,Z.")
@click.option("--distance", type=float, help="Metres to follow the track from the start point.")
@click.option("--backward", is_flag=True, help="From a point: go against the track's own direction.")
@click.option(
    "--spacing", type=float, default=None, metavar="M", help="Metres between samples.  [default: 10]"
)
@click.option("--step", "old_step", type=float, hidden=True, help="Deprecated: --spacing (metres).")
@click.option("--out", type=click.Path(path_type=Path), help="Write the samples as CSV to this file.")
@click.option("--csv", "csv_out", type=click.Path(path_type=Path), hidden=True, help="Deprecated: --out.")
@click.option(
    "--plot",
    "plot_opt",
    is_flag=False,
    flag_value="",
    default=None,
    help="Also draw the profile: beside --out (its name with .png), else profile.png (needs tdbtools[plot]).",
)
@click.option("--overwrite", is_flag=True, help="Replace existing --out/--plot files.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the summary and the events along the way as JSON."
)
@click.option(
    "--category",
    type=click.Choice(["passenger", "freight"]),
    default="passenger",
    show_default=True,
    help="Which speed-post values to show (limits are always those of the direction of travel).",
)
@_strict_option
@_handle_errors
def profile(
    route: Path,
    path_file: Path | None,
    start: tuple[int, int, float, float] | None,
    from_tile,
    from_pos,
    distance: float | None,
    backward: bool,
    spacing: float | None,
    old_step: float | None,
    out: Path | None,
    csv_out: Path | None,
    plot_opt: str | None,
    overwrite: bool,
    as_json: bool,
    strict: bool,
    category: str = "passenger",
) -> None:
    """Elevation, grade (‰), curvature and speed limit along a path or from a point."""
    from ._fs import check_target, write_text_atomic
    from .track.profile import profile_from, profile_path

    if old_step is not None:
        _deprecated("profile --step M", "--spacing M (--step is a time step in seconds)")
        spacing = old_step if spacing is None else spacing
    step = 10.0 if spacing is None else spacing
    if csv_out is not None:
        _deprecated("profile --csv FILE", "--out FILE")
        out = csv_out if out is None else out
    plot_out: Path | None = None
    if plot_opt is not None:
        _need("matplotlib", "--plot")
        if plot_opt:
            _deprecated("profile --plot FILE", "--plot (beside --out)")
            plot_out = Path(plot_opt)
        else:
            plot_out = out.with_suffix(".png") if out is not None else Path("profile.png")
    if path_file is None and (start is not None or from_tile is not None or from_pos is not None):
        start = _point_or_old(start, from_tile, from_pos, "--from", "--from-tile TX TZ --from-pos X Z")
    if path_file is None and not (start is not None and distance is not None):
        raise click.UsageError("give --path FILE.pat, or --from TX,TZ,X,Z --distance M")
    for target in (out, plot_out):
        if target is not None:
            check_target(target, overwrite)
    r = _load(route, strict=strict)
    if path_file is not None:
        prof = profile_path(r, path_file, step=step, category=category)
    else:
        assert distance is not None and start is not None  # checked above
        prof = profile_from(r, *start, distance, step=step, backward=backward, category=category)
    c = prof.columns
    written: list[str] = []
    if out is not None:
        write_text_atomic(out, prof.to_csv(), encoding="utf-8", newline="\n")
        written.append(str(out))
    if plot_out is not None:
        from .render.plots import plot_profile

        plot_profile(prof, plot_out)
        written.append(str(plot_out))
    if as_json:
        _echo_json(
            "profile",
            {
                "route": prof.route,
                "source": prof.source,
                "length_m": round(prof.length, 3),
                "samples": len(prof),
                "spacing_m": step,
                "elevation_m": [float(c["elevation_m"].min()), float(c["elevation_m"].max())],
                "grade_permille": [float(c["grade_permille"].min()), float(c["grade_permille"].max())],
                "events": [{"at_m": round(float(at), 3), "text": text} for at, text in prof.events],
                "files": written,
            },
        )
        return
    click.echo(
        f"{prof.route}: {prof.source}: {prof.length:.1f} m, {len(prof)} samples, "
        f"elevation {c['elevation_m'].min():.1f}..{c['elevation_m'].max():.1f} m, "
        f"grade {c['grade_permille'].min():+.1f}..{c['grade_permille'].max():+.1f} ‰"
    )
    for at, text in prof.events[:40]:
        click.echo(f"  {at:10.1f} m  {text}")
    for f in written:
        click.echo(f"wrote {f}")


@main.command("export")
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
    from ._fs import check_target
    from .export import check_vtk_name, export_route

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
    from .errors import Diagnostics

    r = _load(route, strict=strict)
    left_out = Diagnostics(strict=strict)
    if out is None:
        click.echo(export_route(r, fmt, None, step=step, diagnostics=left_out), nl=False)
    else:
        export_route(r, fmt, out, overwrite=overwrite, step=step, diagnostics=left_out)
        click.echo(f"wrote {out}")
    for f in left_out.findings:
        click.echo(f"warning: {f} (--strict refuses such exports)", err=True)


@main.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for the MSTS files.")
@click.option("--overwrite", is_flag=True, help="Replace files that exist in --out.")
@_strict_option
@_handle_errors
def convert(source: Path, out: Path, overwrite: bool, strict: bool) -> None:
    """Write a route (a route folder, or a JSON export of one) as MSTS files: .trk, .tdb,
    .rdb and tsection.dat (UTF-16LE with BOM, CRLF), each written atomically. Input
    files are never overwritten unless --overwrite."""
    from .export import convert_route, route_from_json

    r = route_from_json(source) if source.suffix.lower() == ".json" else _load(source, strict=strict)
    out.mkdir(parents=True, exist_ok=True)
    if Path(r.folder).resolve() == out.resolve() and not overwrite:
        raise click.UsageError("--out is the route's own folder: give another folder, or --overwrite")
    for p in convert_route(r, out, overwrite=overwrite):
        click.echo(f"wrote {p}")


@main.command()
@click.argument("route", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="A picture (.png), an interactive page (.html, opens in any browser) or an animation of "
    "a replay (.gif, .mp4); without it, a window (click: what is this; keys 1-6: layers).",
)
@click.option("--color-by", type=click.Choice(["kind", "grade", "speed"]), default="kind", show_default=True)
@click.option(
    "--view",
    type=click.Choice(["map", "3d"]),
    default=None,
    help="map: top-down, north up; 3d: perspective with exaggerated heights. "
    "Default: map for pictures, 3d for animations.",
)
@click.option(
    "--exaggerate",
    type=float,
    default=None,
    help="Vertical exaggeration of the 3d view (default: automatic, so that grades show).",
)
@click.option(
    "--focus",
    default=None,
    help="Frame one place: node:N (or N), item:N, an audit code (GAP_IN_NODE, GAP_IN_NODE:2), "
    "X,Z or TX,TZ,x,z, or a station/platform/siding name.",
)
@click.option(
    "--audit", "audit", is_flag=True, help="Draw every audit finding (coloured by severity, with its code)."
)
@click.option(
    "--size", default="1280x960", show_default=True, help="Picture or window size, WIDTHxHEIGHT pixels."
)
@click.option(
    "--replay",
    "replay_src",
    type=click.Path(path_type=Path),
    help="Trains from a replay: a scenario .toml (run now) or a `replay --out` folder.",
)
@click.option(
    "--follow", default=None, help="Animations: keep the camera on this train (default: the first)."
)
@click.option(
    "--frames",
    type=click.IntRange(2, 10_000),
    default=None,
    help="Animations: this many frames, evenly over the replay (default: one per 0.1 s of video "
    "at 10x real time, at most 300).",
)
@click.option(
    "--path",
    "paths",
    multiple=True,
    metavar="FILE",
    help="Draw a path over the track: a .pat file (or a name in the route's PATHS folder), or an "
    ".act activity (every service's path, with its booked stops). Repeatable.",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing --out file.")
@_strict_option
@_handle_errors
def render(
    route: Path,
    out: Path | None,
    color_by: str,
    view: str | None,
    exaggerate: float | None,
    focus: str | None,
    audit: bool,
    size: str,
    replay_src: Path | None,
    follow: str | None,
    frames: int | None,
    paths: tuple[str, ...],
    overwrite: bool,
    strict: bool,
) -> None:
    """Draw a route: a map or a 3-D view (pyvista; needs tdbtools[render]), offscreen when
    there is no display (libegl1 libgl1-mesa-dri on headless Debian), or an HTML page."""
    from ._fs import check_target

    if out is not None:
        check_target(out, overwrite)
    from .render.animate import TrainPlacer, load_replay, render_animation, signal_aspects
    from .render.scene import build_scene, render_png, show

    try:
        w, h = (int(v) for v in size.lower().split("x"))
        if not (16 <= w <= 8192 and 16 <= h <= 8192):
            raise ValueError
    except ValueError:
        raise click.BadParameter(
            f"{size!r}: WIDTHxHEIGHT, each 16-8192 pixels", param_hint="--size"
        ) from None
    if exaggerate is not None and not (0 < exaggerate <= 10000):
        raise click.BadParameter("must be in (0, 10000]", param_hint="--exaggerate")
    suffix = out.suffix.lower() if out is not None else ""
    if out is not None and suffix not in (".png", ".html", ".gif", ".mp4"):
        raise click.UsageError(f"--out {out}: give a .png, .html, .gif or .mp4 file")
    if suffix == ".html":
        _need("plotly", "an HTML page")
    else:
        _need("pyvista", "a picture or a window")
        if suffix in (".gif", ".mp4"):
            _need("imageio", "an animation")
            if replay_src is None:
                raise click.UsageError("an animation (--out .gif/.mp4) needs --replay")
    r = _load(route, strict=strict)
    try:
        from .export.geo import world_to_lonlat

        world_to_lonlat([0.0], [0.0])  # raises without pyproj
        lonlat = world_to_lonlat
    except TdbToolsError:  # no pyproj: the pick and the hover give no lat/lon
        click.echo(
            "note: no pyproj, so no latitude/longitude readout (pip install 'tdbtools[geo]')", err=True
        )
        lonlat = None
    scene = build_scene(
        r, color_by=color_by, audit=True if audit else None, focus=focus, lonlat=lonlat, paths=paths
    )
    for ov in scene.paths:
        for why in ov.problems:
            click.echo(f"warning: path {ov.name}: {why} (drawn as far as it resolves)", err=True)
    if out is not None and suffix == ".html":
        from .render.html import write_html

        write_html(scene, out, exaggerate=exaggerate)
        click.echo(f"wrote {out}")
        _paths_exit(scene)
        return
    result = rp = None
    if replay_src is not None:
        result, rp = load_replay(replay_src, route=r)
    if out is not None and suffix in (".gif", ".mp4"):
        if result is None:
            raise click.UsageError("an animation (--out .gif/.mp4) needs --replay")
        render_animation(
            r,
            result,
            out,
            replay=rp,
            scene=scene,
            view=view or "3d",
            exaggerate=exaggerate,
            follow=follow if follow else True,
            window_size=(w, h) if size != "1280x960" else (800, 608),
            frames=frames,
        )
        click.echo(f"wrote {out}")
        _paths_exit(scene)
        return
    if result is not None:
        placer = TrainPlacer(result, scene.origin, replay=rp)
        scene.trains = placer.mesh(placer.time_range[1])
        aspects = signal_aspects(r, result, scene)
        if aspects is not None:  # signals as they show at the picture's time (the end)
            aspects.apply(scene, placer.time_range[1])
    if out is None:
        show(scene, window_size=(w, h), view=view or "map", exaggerate=exaggerate)
        return
    render_png(scene, out, window_size=(w, h), view=view or "map", exaggerate=exaggerate)
    click.echo(f"wrote {out}")
    _paths_exit(scene)


def _paths_exit(scene) -> None:  # noqa: ANN001
    """Exit 1 when a drawn path did not resolve to its end (said on stderr already)."""
    if any(ov.problems for ov in scene.paths):
        raise click.exceptions.Exit(EXIT_FINDINGS)


@main.command()
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
    from .sweep import plot_sweep, read_sweep_spec, run_sweep

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


@main.command("path")
@click.argument("route", type=click.Path(path_type=Path))
@click.option(
    "--from",
    "start",
    required=True,
    metavar="PLACE",
    help="Start (the rear of the train): a world point TX,TZ,X,Z, a track node number, or a "
    "platform/station name.",
)
@click.option("--to", "end", required=True, metavar="PLACE", help="End, as --from.")
@click.option("--via", multiple=True, metavar="PLACE", help="A point to pass, as --from (repeatable).")
@click.option("--reversals", is_flag=True, help="Allow the train to turn at a via point.")
@click.option("--name", default="", help="Display name written into the file.")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="The .pat file to write.")
@click.option("--overwrite", is_flag=True, help="Replace an existing --out file.")
@click.option("--json", "as_json", is_flag=True, help="Print the built path as JSON.")
@_strict_option
@_handle_errors
def path_cmd(
    route: Path,
    start: str,
    end: str,
    via: tuple[str, ...],
    reversals: bool,
    name: str,
    out: Path,
    overwrite: bool,
    as_json: bool,
    strict: bool,
) -> None:
    """Build the shortest path between places and write it as a .pat file Open Rails loads."""
    import re

    from .track.pathbuild import build_path, check_pat_target, write_path

    spaced = re.compile(r"^\s*\S+\s+\S+\s+\S+\s+\S+\s*$")
    places = []
    for place in (start, end, *via):
        if spaced.match(place) and "," not in place and re.fullmatch(r"[-+0-9.eE\s]+", place):
            _deprecated(f'the place "{place.strip()}"', ",".join(place.split()) + " (TX,TZ,X,Z)")
            place = ",".join(place.split())
        places.append(place)
    start, end, via = places[0], places[1], tuple(places[2:])
    check_pat_target(out, overwrite)
    r = _load(route, strict=strict)
    built = build_path(r, start, end, list(via), reversals=reversals, name=name)
    write_path(r, built, out, overwrite=overwrite)
    d = {
        "file": str(out),
        "length_m": round(built.length, 3),
        "from": built.labels[0],
        "to": built.labels[-1],
        "junctions": len(built.junctions),
        "reversals": list(built.reversals),
        "nodes": [list(x) for x in built.node_sequence()],
    }
    if as_json:
        _echo_json("path", d)
        return
    click.echo(
        f"wrote {out}: {d['from']} -> {d['to']}, {built.length / 1000.0:.3f} km over "
        f"{len(built.node_sequence())} nodes, {len(built.junctions)} junctions, {len(built.reversals)} reversals"
    )


def bundled_scenario() -> Path:
    return bundled_sample_route().parent.parent / "replay.toml"


@main.command()
@click.argument("scenario", required=False, type=click.Path(path_type=Path))
@click.option(
    "--route", "route_opt", type=click.Path(path_type=Path), help="Route folder (without a scenario file)."
)
@click.option("--consist", "consist_opt", help="Consist (.con name or file) (without a scenario file).")
@click.option("--path", "path_opt", help="Path (.pat name or file) (without a scenario file).")
@click.option("--stand-in", is_flag=True, help="Use generic stock for missing .eng/.wag files.")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=Path("replay-out"),
    show_default=True,
    help="Folder for traces, events and summary.",
)
@click.option("--plot", is_flag=True, help="Also draw a speed-distance plot per train.")
@click.option("--cars", is_flag=True, help="Also write a per-car trace.")
@click.option("--step", type=float, help="Time step in seconds (overrides the scenario).")
@click.option("--duration", type=float, help="Seconds to simulate at most (overrides the scenario).")
@click.option(
    "--beyond-path",
    type=click.FloatRange(min=0.0, max=1e6),
    metavar="M",
    help="Metres every train runs on past the end of its path (overrides the scenario).",
)
@click.option(
    "--max-speed",
    type=click.FloatRange(min=0.1, max=1000.0),
    metavar="KMH",
    help="Top speed of the automatic driver in km/h (overrides the scenario).",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Write into a non-empty --out folder, replacing the files of the same names.",
)
@click.option("--no-signals", is_flag=True, help="Ignore the route's signals (by default they are obeyed).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary and the files written as JSON.")
@click.option(
    "--skip-missing",
    is_flag=True,
    help="Activity: run without AI services or a traffic file that do not exist (else exit 2).",
)
@click.option(
    "--physics",
    type=click.Choice(["engineering", "openrails"]),
    help="Physics profile (overrides the scenario; docs/physics.md §7).",
)
@click.option("--player", help="A timetable's train to play (it stays at its end); the others run as AI.")
@_strict_option
@_handle_errors
def replay(
    scenario: Path | None,
    route_opt: Path | None,
    consist_opt: str | None,
    path_opt: str | None,
    stand_in: bool,
    out_dir: Path,
    plot: bool,
    cars: bool,
    step: float | None,
    duration: float | None,
    beyond_path: float | None,
    max_speed: float | None,
    overwrite: bool,
    no_signals: bool,
    as_json: bool,
    skip_missing: bool,
    physics: str | None,
    player: str | None,
    strict: bool,
) -> None:
    """Replay consists over a route: physics, derailments and collisions.

    SCENARIO is a TOML file; or give --route, --consist and --path; with neither, the
    bundled sample scenario runs on the sample route. Writes <train>.csv traces,
    events.json and summary.json into --out (a new or empty folder; a folder that holds
    anything only with --overwrite).

    SCENARIO may be an Open Rails timetable (.timetable-or in <route>/ACTIVITIES/OpenRails):
    every train runs from its start time, stops at its stations, forms the next train,
    goes to or comes from its pool and waits for its connections (docs/timetables.md);
    --player picks the train that stays at its end. Exit status 1 when a train did not
    reach its end.

    SCENARIO may be an activity (.act in <route>/ACTIVITIES): the player and every AI
    service run from their start times with station stops; --out also gets
    timetable.csv, and --plot draws the space-time chart. On a signalled route the
    signals keep the trains apart (--no-signals: plain block occupancy). Exit status 1
    when a train derailed, collided, deadlocked or got stuck.
    """
    from ._outputs import claim_output_folder

    # The arguments first, then the extras, then the output folder: a mistake is named
    # as itself, before anything is read or written.
    activity = scenario is not None and scenario.suffix.lower() == ".act"
    timetable = scenario is not None and scenario.suffix.lower() in (
        ".timetable-or",
        ".timetable_or",
        ".timetablelist-or",
        ".timetablelist_or",
    )
    if player is not None and not timetable:
        raise click.UsageError("--player goes with a timetable (.timetable-or)")
    for kind, what, plural in (
        (timetable, "a timetable", "timetables"),
        (activity, "an activity", "activities"),
    ):
        if kind and (
            route_opt or consist_opt or path_opt or cars or beyond_path is not None or max_speed is not None
        ):
            raise click.UsageError(
                f"{what} replay takes no --route/--consist/--path/--cars/--beyond-path/--max-speed"
            )
        if kind and physics is not None:
            raise click.UsageError(f"--physics is not available for {plural} yet")
    if scenario is not None and (route_opt or consist_opt or path_opt):
        raise click.UsageError("give a scenario file or --route/--consist/--path, not both")
    if (
        scenario is None
        and (route_opt or consist_opt or path_opt)
        and not (route_opt and consist_opt and path_opt)
    ):
        raise click.UsageError("--route, --consist and --path go together")
    if scenario is not None and not scenario.is_file():
        raise click.BadParameter(f"{str(scenario)!r} is not a file", param_hint="SCENARIO")
    from .physics.scenario import MAX_STEP, run_limits_problem

    for name, problem in (
        ("--step", None if step is None else run_limits_problem(step, step)),
        ("--duration", None if duration is None else run_limits_problem(MAX_STEP, duration)),
    ):
        if problem is not None:
            raise click.BadParameter(problem[1], param_hint=name)
    if plot:
        _need("matplotlib", "--plot")
    # One run per folder (a lock, released when the command ends); manifest.json last.
    run = claim_output_folder(out_dir, overwrite)
    click.get_current_context().call_on_close(run.release)
    if timetable:
        assert scenario is not None
        raise click.exceptions.Exit(
            _replay_timetable(
                scenario, player, stand_in, out_dir, plot, step, duration, strict, no_signals, run
            )
        )
    if activity:
        assert scenario is not None
        raise click.exceptions.Exit(
            _replay_activity(
                scenario,
                stand_in,
                out_dir,
                plot,
                step,
                duration,
                strict,
                no_signals,
                as_json,
                run=run,
                skip_missing=skip_missing,
            )
        )
    from .physics.events import StandIn
    from .physics.replay import Replay
    from .physics.scenario import one_train_scenario, read_scenario, with_settings

    rroute = None
    if scenario is None and route_opt and consist_opt and path_opt:
        from .physics.pathrun import path_reversals, replay_path_whole

        rroute = _load(Path(route_opt).resolve(), strict=strict)
        if path_reversals(rroute, path_opt):
            # A path with reversals runs whole, as an activity's train (docs/activities.md §4.4).
            if physics is not None:
                raise click.UsageError(
                    "--physics is not available for a path with reversals (it runs as an activity)"
                )
            whole = replay_path_whole(
                rroute,
                consist_opt,
                path_opt,
                stand_in=stand_in,
                step=step if step is not None else 0.1,
                duration=duration if duration is not None else 86400.0,
                signals=False if no_signals else None,
            )
            raise click.exceptions.Exit(_report_activity(whole, out_dir, plot, as_json, run))
        sc = one_train_scenario(route_opt, consist_opt, path_opt, stand_in=stand_in)
        if duration is None:
            # It runs until the train reaches its path end (the replay ends when it does),
            # for a day at most and within the work limits.
            from .physics.scenario import MAX_STEPS

            duration = min(86400.0, MAX_STEPS * (step if step is not None else sc.step))
    else:
        sc = read_scenario(scenario if scenario is not None else bundled_scenario())
    sc = with_settings(
        sc,
        stand_in=True if stand_in else None,
        step=step,
        duration=duration,
        beyond_path=beyond_path,
        max_speed=None if max_speed is None else max_speed / 3.6,
        physics=physics,
    )
    if sc.physics == "openrails":
        click.echo(
            "note: Open Rails physics profile (docs/physics.md §7), simplified: no vacuum or engine brakes, "
            "no wheel-slip model, numpy only",
            err=True,
        )
    else:
        _kernel_notice()
    rep = Replay(
        sc,
        route=rroute if rroute is not None else _load(Path(sc.route), strict=strict),
        cars_trace=cars,
        signals=False if no_signals else None,
    )
    for e in rep.events:
        if isinstance(e, StandIn):
            click.echo(f"warning: train {e.train!r}: {e.message}", err=True)
    total = max(int(sc.duration), 1)
    show = sys.stderr.isatty() and sc.duration >= 60
    with (
        click.progressbar(length=total, label="replaying", file=sys.stderr, show_eta=True)
        if show
        else _NullBar() as bar
    ):
        done = [0]

        def progress(t: float) -> None:
            bar.update(int(t) - done[0])
            done[0] = int(t)

        result = rep.run(progress)
    files = result.write(out_dir)
    if plot:
        from .render.plots import line_marks, plot_speed_distance

        stems = result.file_stems()
        for name, cols in result.traces.items():
            limit, marks = line_marks(rep, name)
            files.append(
                plot_speed_distance(
                    cols,
                    name,
                    result.events,
                    out_dir / f"{stems[name]}_speed.png",
                    limit=limit,
                    marks=marks,
                )
            )
        if rep.signals is not None:
            from .physics.signalling import space_time
            from .render.signal_chart import plot_signal_chart

            files.append(plot_signal_chart(space_time(rep, result), out_dir / "signals_space_time.png"))
    s = result.summary
    # replay --route runs to the path end: stopping short of it is a problem (issue 26)
    short = [name for name, t in s["trains"].items() if not t["finished"]] if route_opt is not None else []
    for name in short:
        t = s["trains"][name]
        click.echo(
            f"problem: {name} did not reach the end of its path ({t['distance_m']:.0f} m run in "
            f"{s['simulated_seconds']:.0f} s)",
            err=True,
        )
    failed = (
        bool(short)
        or any(t["derailed"] for t in s["trains"].values())
        or any(e.kind in ("collision", "side_collision") for e in result.events)
        or bool(_script_errors(result.events))
    )
    files.append(run.finish(files))
    if as_json:
        _echo_json("replay", {"summary": s, "files": [str(f) for f in files], "failed": failed})
        if failed:
            raise click.exceptions.Exit(EXIT_FINDINGS)
        return
    click.echo(
        f"{s['route']}: {s['simulated_seconds']:.1f} s simulated in {s['wall_seconds']:.2f} s "
        f"({s['realtime_factor']}x real time)"
    )
    for name, t in s["trains"].items():
        state = "derailed" if t["derailed"] else "finished" if t["finished"] else "running at the end"
        click.echo(
            f"  {name}: {t['cars']} cars, {t['mass_t']:.0f} t; {t['distance_m']:.0f} m in "
            f"{t['running_time_s']:.0f} s, max {t['max_speed_kmh']:.1f} km/h, traction "
            f"{t['traction_energy_kwh']:.1f} kWh; {state}"
        )
    for line in _event_lines(result.events):
        click.echo(line)
    click.echo(f"wrote {len(files)} files to {out_dir}")
    if failed:
        raise click.exceptions.Exit(EXIT_FINDINGS)


def _script_errors(events) -> bool:  # noqa: ANN001
    """Print the signal scripts that failed during a replay (on stderr); True if any did:
    the replay ran on, those heads on the basic rule, but its outcome is not the scripts'."""
    bad = [e for e in events if e.kind == "script_error"]
    for e in bad:
        click.echo(
            f"{e.path}:{e.line}: signal script {e.script} (signal {e.signal}) failed at {e.time:.0f} s: "
            f"{e.message}; the head follows the basic rule from then on",
            err=True,
        )
    return bool(bad)


def _cars_text(cars) -> str:  # noqa: ANN001
    """[['passenger', 0], ['passenger', 1]] → passenger car 0 and car 1; two trains by name."""
    if not cars:
        return ""
    if isinstance(cars[0], (list, tuple)):
        trains = list(dict.fromkeys(c[0] for c in cars))
        if len(trains) == 1:
            return f"{trains[0]} " + " and ".join(f"car {c[1]}" for c in cars)
        return " and ".join(f"{c[0]} car {c[1]}" for c in cars)
    return " and ".join(f"car {c}" for c in cars)


def _event_lines(events, limit: int = 20) -> list[str]:  # noqa: ANN001
    """The events a reader of the console needs: derailments, collisions and hard
    impacts one by one; gentle buffer impacts (slack running in at a stop) as one count."""
    out: list[str] = []
    from .physics.events import is_gentle_impact, serious_events

    gentle = [e for e in events if is_gentle_impact(e)]
    serious: list = serious_events(events)  # (their fields by kind)
    for e in serious[:limit]:
        what = getattr(e, "message", None) or ""
        if e.kind == "impact":
            what = f"{e.relative_speed * 3.6:.1f} km/h between {_cars_text(e.cars)}"
        elif not what:
            what = _cars_text(e.cars)
        loc = getattr(e, "location", None)
        node = loc.node if loc is not None and loc.node is not None else getattr(e, "node", None)
        out.append(f"  {e.kind} at {e.time:.1f} s: {what}" + (f" (node {node})" if node is not None else ""))
    if len(serious) > limit:
        out.append(f"  … {len(serious) - limit} more events in events.json")
    if gentle:
        top = max(e.relative_speed for e in gentle) * 3.6
        out.append(
            f"  {len(gentle)} gentle buffer impact(s) (slack running in, at most {top:.1f} km/h): normal"
        )
    return out


@main.command("signals")
@click.argument("route", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON: signals, heads, scripts, warnings.")
@_strict_option
@_handle_errors
def signals_cmd(route: Path, as_json: bool, strict: bool) -> None:
    """List a route's signal objects, heads, types, scripts and warnings (sigcfg.dat, the
    signal scripts, world-file Signal objects and TDB signal items)."""
    from .signals import signal_report

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


def _replay_activity(
    act: Path,
    stand_in: bool,
    out_dir: Path,
    plot: bool,
    step: float | None,
    duration: float | None,
    strict: bool = False,
    no_signals: bool = False,
    as_json: bool = False,
    run=None,  # noqa: ANN001  (an OutputRun: finished when every file is written)
    skip_missing: bool = False,
) -> int:
    from .physics.activity import replay_activity

    folder = act.resolve().parent
    # An activity lives in <route>/ACTIVITIES: its route is read as every command reads one.
    route = _load(folder.parent, strict=strict) if folder.name.lower() == "activities" else None
    _kernel_notice()
    result = replay_activity(
        act,
        route=route,
        stand_in=stand_in,
        step=step if step is not None else 0.5,
        duration=duration,
        signals=False if no_signals else None,
        skip_missing=skip_missing,
    )
    return _report_activity(result, out_dir, plot, as_json, run)


def _report_activity(result, out_dir: Path, plot: bool, as_json: bool = False, run=None) -> int:  # noqa: ANN001
    """Write an activity replay's files and tell how every service did (exit status)."""
    from .physics.activity import clock
    from .physics.outcome import tolerated

    files = result.write(out_dir)
    if plot:
        from .render.spacetime import plot_space_time

        files.append(plot_space_time(result, out_dir / "spacetime.png"))
    if run is not None:
        files.append(run.finish(files))
    s = result.replay.summary
    if as_json:
        _echo_json(
            "replay",
            {
                "summary": s,
                "timetable": list(result.timetable),
                "files": [str(f) for f in files],
                "failed": result.failed,
            },
        )
        return EXIT_FINDINGS if result.failed else 0
    click.echo(
        f"{s['activity']} ({s['route']}): {s['clock_start']}-{s['clock_end']}, {s['simulated_seconds']:.0f} s "
        f"simulated in {s['wall_seconds']:.2f} s ({s['realtime_factor']}x real time)"
    )
    starts = {t["service"]: t["start"] for t in reversed(list(s["trains"].values()))}
    for name, o in s["services"].items():
        turns = f", {o['parts'] - 1} reversal(s)" if o["parts"] > 1 else ""
        click.echo(
            f"  {name}: start {starts.get(name, '')}, {o['distance_m'] / 1000.0:.2f} of "
            f"{o['path_m'] / 1000.0:.2f} km{turns}, {o['stops']}/{o['booked_stops']} booked stops made; "
            + ("reached its end" if o["reached_end"] else f"stopped short: {o['reason']}")
        )
    for name, o in s["services"].items():
        if not o["reached_end"]:
            click.echo(
                f"problem: {name} stopped {(o['path_m'] - o['distance_m']) / 1000.0:.2f} km short of its "
                f"path end ({o['reason']})",
                err=True,
            )
        if o["stops"] < o["booked_stops"]:
            click.echo(f"problem: {name} made {o['stops']} of its {o['booked_stops']} booked stops", err=True)
    tol = tolerated(result.replay.events)
    if tol:
        click.echo("tolerated: " + "\n           ".join(tol), err=True)
    for r in result.timetable:
        click.echo(
            f"  {r['train']} at {r['platform']}: booked {clock(r['sched_arr'])}-{clock(r['sched_dep'])}, "
            f"actual {clock(r['actual_arr'])}-{clock(r['actual_dep'])}"
        )
    for e in result.replay.events:
        if e.kind in ("deadlock", "stuck", "derailment", "collision", "side_collision", "not_at_end"):
            train = getattr(e, "train", None)
            who = f"{train}: " if train is not None else ""
            click.echo(
                f"  event {getattr(e, 'clock', None) or ''} {e.kind}: {who}{getattr(e, 'message', None) or ''}"
            )
    click.echo(f"wrote {len(files)} files to {out_dir}")
    script_failed = _script_errors(result.replay.events)
    return EXIT_FINDINGS if result.failed or script_failed else 0


def _replay_timetable(
    path: Path,
    player: str | None,
    stand_in: bool,
    out_dir: Path,
    plot: bool,
    step: float | None,
    duration: float | None,
    strict: bool = False,
    no_signals: bool = False,
    run=None,  # noqa: ANN001  (an OutputRun: finished when every file is written)
) -> int:
    """Replay, write the outputs, report on stdout, and say on stderr what was
    simplified or went wrong; returns the exit status (1: a train did not reach its
    end, or derailed, collided, deadlocked, got stuck)."""
    from .physics.activity import clock
    from .physics.timetable import replay_timetable
    from .physics.timetable_plan import route_of

    route = _load(route_of(path), strict=strict)
    result = replay_timetable(
        path,
        player=player,
        route=route,
        stand_in=stand_in,
        step=step if step is not None else 0.5,
        duration=duration,
        signals=False if no_signals else None,
    )
    files = result.write(out_dir)
    if plot:
        from .render.spacetime import plot_space_time

        files.append(plot_space_time(result.activity, out_dir / "spacetime.png"))
    if run is not None:
        files.append(run.finish(files))
    s = result.replay.summary
    tt = s["timetable"]
    click.echo(
        f"{s['activity']} ({s['route']}): {s['clock_start']}-{s['clock_end']}, {s['simulated_seconds']:.0f} s "
        f"simulated in {s['wall_seconds']:.2f} s ({s['realtime_factor']}x real time)"
    )
    for name, t in s["trains"].items():
        click.echo(
            f"  {name}: start {t['start']}, {t['distance_m'] / 1000.0:.2f} km, "
            f"{t['stops']}/{t['booked_stops']} stops; {tt['outcomes'].get(name, '')}"
        )
    for name, o in tt["outcomes"].items():
        if name not in s["trains"]:
            click.echo(f"  {name}: {o}")
    for r in result.timetable:
        click.echo(
            f"  {r['train']} at {r['station']}: booked {clock(r['sched_arr'])}-{clock(r['sched_dep'])}, "
            f"actual {clock(r['actual_arr'])}-{clock(r['actual_dep'])}"
        )
    for simp in result.simplifications:
        click.echo(f"simplified: {simp}", err=True)
    for e in result.replay.events:
        if e.kind in ("deadlock", "stuck", "derailment", "collision", "side_collision", "not_at_end") or (
            e.kind == "warning" and "simplified" not in (getattr(e, "message", "") or "")
        ):
            train = getattr(e, "train", None)
            who = f"{train}: " if train is not None else ""
            click.echo(
                f"  event {getattr(e, 'clock', None) or ''} {e.kind}: {who}{getattr(e, 'message', None) or ''}",
                err=True,
            )
    if s["not_at_end"]:
        click.echo(f"not at their end: {', '.join(s['not_at_end'])}", err=True)
    click.echo(f"wrote {len(files)} files to {out_dir}")
    return EXIT_FINDINGS if result.failed else 0


def _kernel_notice() -> None:
    """Before a replay that will compile numba's kernels (the first one after an
    install: about 30 s of silence otherwise), say so on stderr in one line, with each
    kernel group as it is done; later runs load them from numba's cache and say nothing."""
    from .physics.compiled import compile_kernels, kernels_cached

    if kernels_cached():
        return
    t0 = time.perf_counter()
    click.echo(
        "compiling the replay's kernels with numba, once after an install (about 30 s; "
        "`tdbtools compile` does it ahead):",
        err=True,
        nl=False,
    )

    def progress(group: str) -> None:
        click.echo(f" {group}…", err=True, nl=False)

    compile_kernels(progress)
    click.echo(f" done in {time.perf_counter() - t0:.0f} s", err=True)


@main.command("compile")
@click.option("--json", "as_json", is_flag=True, help="Print the seconds per kernel group as JSON.")
@_handle_errors
def compile_cmd(as_json: bool) -> None:
    """Compile the replay's numba kernels now (tdbtools[fast]) into numba's cache, so that
    the first replay, test run or sweep worker does not wait for them. Without numba:
    says so and does nothing (the replay runs on numpy, with the same numbers)."""
    from .physics.compiled import compile_kernels, compiled_available

    if not compiled_available():
        if as_json:
            _echo_json("compile", {"numba": False, "seconds": {}})
        else:
            click.echo('numba is not installed (pip install "tdbtools[fast]"): nothing to compile')
        return
    show = not as_json

    def progress(group: str) -> None:
        if show:
            click.echo(f"  {group} …", err=True)

    took = compile_kernels(progress)
    if as_json:
        _echo_json("compile", {"numba": True, "seconds": {k: round(v, 3) for k, v in took.items()}})
        return
    click.echo(
        "compiled (or loaded from numba's cache): " + ", ".join(f"{k} {v:.1f} s" for k, v in took.items())
    )


@main.command("compare")
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
    from ._fs import check_target
    from .physics.compare import compare_traces, read_trace

    plot_out: Path | None = None
    if plot_opt is not None:
        _need("matplotlib", "--plot")
        if plot_opt:
            _deprecated("compare --plot FILE", "--plot --out FILE")
            plot_out = Path(plot_opt)
        else:
            plot_out = out if out is not None else Path("compare.png")
    elif out is not None:
        raise click.UsageError("--out names the picture of --plot: give --plot too")
    if plot_out is not None:
        check_target(plot_out, overwrite)
    cmp = compare_traces(read_trace(trace), read_trace(other), axis)
    written: list[str] = []
    if plot_out is not None:
        from .render.compare_plot import plot_comparison

        written.append(str(plot_comparison(cmp, plot_out, (trace.name, other.name))))
    if as_json:
        _echo_json("compare", {**cmp.to_json(), "files": written})
        return
    for line in cmp.lines():
        click.echo(line)
    for f in written:
        click.echo(f"wrote {f}")


class _NullBar:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, n: int) -> None:
        return None


if __name__ == "__main__":  # pragma: no cover
    main()
