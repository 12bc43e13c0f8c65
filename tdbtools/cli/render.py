"""``tdbtools render``: maps, 3-D views, HTML pages and animations of a replay."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import TdbToolsError
from .common import EXIT_FINDINGS, _handle_errors, _load, _need
from .options import _strict_option


@click.command()
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
    from .._fs import check_target

    if out is not None:
        check_target(out, overwrite)
    from ..render.animate import TrainPlacer, load_replay, render_animation, signal_aspects
    from ..render.scene import build_scene
    from ..render.sceneview import render_png, show

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
        from ..export.geo import world_to_lonlat

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
        from ..render.html import write_html

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
