"""Exports of a loaded route (GeoJSON, lossless JSON, CSV, VTK) and conversion back to
MSTS files (.tdb/.rdb, tsection.dat).

What belongs here: writing a loaded route in other formats and reading those back
(the lossless JSON); each writer is atomic and refuses to overwrite unless told.

May import numpy, pyproj (longitude/latitude only), tdbtools.stf/formats/track/errors;
not render or cli.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from .._fs import safe_basename
from ..formats.route import Route
from .geo import (
    EARTH_RADIUS,
    IGH_PROJ,
    IGH_X0,
    IGH_Y0,
    geojson_text,
    igh_xy,
    route_geojson,
    tile_to_lonlat,
    world_to_lonlat,
    write_geojson,
)
from .model_json import (
    route_from_dict,
    route_from_json,
    route_to_dict,
    route_to_json,
    tdb_from_dict,
    tdb_to_dict,
    tsection_from_dict,
    tsection_to_dict,
    write_json,
)
from .msts import (
    GLOBAL_TSECTION_SIGNATURE,
    TDB_SIGNATURE,
    ExportError,
    split_tsection,
    tdb_text,
    tsection_text,
    write_tdb,
    write_tsection,
)
from .samples import CSV_COLUMNS, csv_text, sample_track, vtp_text, write_csv, write_vtp

FORMATS = ("geojson", "json", "csv", "vtk")


def export_route(route: Route, fmt: str, path: str | Path | None = None, *, overwrite: bool = False,
                 step: float = 10.0) -> str | Path:
    """Export ``route`` as ``fmt`` (one of :data:`FORMATS`): the text, or written to
    ``path`` (atomically; an existing file only with ``overwrite``)."""
    fmt = fmt.lower()
    if fmt == "geojson":
        return geojson_text(route) if path is None else write_geojson(route, path, overwrite=overwrite)
    if fmt == "json":
        return route_to_json(route) if path is None else write_json(route, path, overwrite=overwrite)
    if fmt == "csv":
        return csv_text(route, step) if path is None else write_csv(route, path, step, overwrite=overwrite)
    if fmt in ("vtk", "vtp"):
        return vtp_text(route, step) if path is None else write_vtp(route, path, step, overwrite=overwrite)
    raise ExportError(f"unknown export format {fmt!r} (one of {', '.join(FORMATS)})")


def convert_route(route: Route, folder: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Write the route's track and road databases and tsection tables as MSTS files
    into ``folder`` (which must exist): ``<FileName>.trk``, ``<FileName>.tdb``, ``<FileName>.rdb`` (if
    any), ``OPENRAILS/tsection.dat`` (global layout: sections and shapes) and
    ``tsection.dat`` (route-local layout: the dynamic-track paths and their sections,
    if any). Reading the global file and then the local one gives ``route.tsection``
    again. Nothing is written if any target exists (unless ``overwrite``)."""
    from .msts import check_target

    out = Path(folder)
    if not out.is_dir():
        raise ExportError(f"output folder {str(out)!r} does not exist")
    from .msts import write_trk

    # Names derived from route data never leave --out (docs/security.md §5): the
    # FileName is cut to a safe base name, and the .trk written names that file.
    base = safe_basename(route.trk.filename or "route")
    trk = route.trk if base == route.trk.filename else dataclasses.replace(route.trk, filename=base)
    glob, local = split_tsection(route.tsection)
    jobs: list[tuple[Path, Callable[[Path], Path]]] = [
        (out / f"{base}.tdb", lambda p: write_tdb(route.tdb, p, overwrite=True)),
        (out / f"{base}.trk", lambda p: write_trk(trk, p, overwrite=True))]
    rdb = route.rdb
    if rdb is not None:
        jobs.append((out / f"{base}.rdb", lambda p: write_tdb(rdb, p, overwrite=True)))
    (out / "OPENRAILS").mkdir(exist_ok=True)
    jobs.append((out / "OPENRAILS" / "tsection.dat",
                 lambda p: write_tsection(glob, p, layout="global", overwrite=True)))
    if local.track_paths or len(local.sections):
        jobs.append((out / "tsection.dat", lambda p: write_tsection(local, p, layout="local", overwrite=True)))
    for p, _ in jobs:
        check_target(p, overwrite)
    return [job(p) for p, job in jobs]


__all__ = [
    "FORMATS", "export_route", "convert_route", "ExportError",
    "EARTH_RADIUS", "IGH_PROJ", "IGH_X0", "IGH_Y0", "igh_xy", "tile_to_lonlat", "world_to_lonlat",
    "route_geojson", "geojson_text", "write_geojson",
    "route_to_dict", "route_to_json", "route_from_dict", "route_from_json", "write_json",
    "tdb_to_dict", "tdb_from_dict", "tsection_to_dict", "tsection_from_dict",
    "TDB_SIGNATURE", "GLOBAL_TSECTION_SIGNATURE", "tdb_text", "tsection_text", "write_tdb",
    "write_tsection", "split_tsection",
    "CSV_COLUMNS", "sample_track", "csv_text", "write_csv", "vtp_text", "write_vtp",
]
