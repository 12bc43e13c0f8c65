"""Commands over the track: ``locate`` (a world point), ``profile`` (along a path or from
a point), ``path`` (build a .pat file)."""

from __future__ import annotations

from pathlib import Path

import click

from .common import _deprecated, _echo_json, _handle_errors, _load
from .options import WORLD_POINT, _plot_target, _point_or_old, _strict_option


@click.command()
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
    from ..track.locate import locate_point

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


@click.command()
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
    from .._fs import check_target, write_text_atomic
    from ..track.profile import profile_from, profile_path

    if old_step is not None:
        _deprecated("profile --step M", "--spacing M (--step is a time step in seconds)")
        spacing = old_step if spacing is None else spacing
    step = 10.0 if spacing is None else spacing
    if csv_out is not None:
        _deprecated("profile --csv FILE", "--out FILE")
        out = csv_out if out is None else out
    default = out.with_suffix(".png") if out is not None else Path("profile.png")
    plot_out = _plot_target(plot_opt, "profile --plot FILE", "--plot (beside --out)", default)
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
        from ..render.plots import plot_profile

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


@click.command("path")
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

    from ..track.pathbuild import build_path, check_pat_target, write_path

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
