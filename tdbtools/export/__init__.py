"""Exports of a loaded route (GeoJSON, lossless JSON, CSV, VTK) and conversion back to
MSTS files (.tdb/.rdb, tsection.dat).

What belongs here: writing a loaded route in other formats and reading those back
(the lossless JSON); each writer is atomic and refuses to overwrite unless told.

May import numpy, pyproj (longitude/latitude only), tdbtools.stf/formats/track/errors;
not render or cli.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import Diagnostics
from ..formats.route import Route
from .convert import convert_route, merge_blocks
from .geo import (
    EARTH_RADIUS,
    IGH_PROJ,
    IGH_X0,
    IGH_Y0,
    OUTSIDE_PROJECTION,
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
from .samples import CSV_COLUMNS, check_vtk_name, csv_text, sample_track, vtp_text, write_csv, write_vtp

FORMATS = ("geojson", "json", "csv", "vtk")


def export_route(
    route: Route,
    fmt: str,
    path: str | Path | None = None,
    *,
    overwrite: bool = False,
    step: float = 10.0,
    diagnostics: Diagnostics | None = None,
) -> str | Path:
    """Export ``route`` as ``fmt`` (one of :data:`FORMATS`): the text, or written to
    ``path`` (atomically; an existing file only with ``overwrite``). GeoJSON features and
    CSV points outside the projection raise :class:`ExportError`, or with a lenient
    ``diagnostics`` become its ``OUTSIDE_PROJECTION`` finding."""
    fmt = fmt.lower()
    if fmt == "geojson":
        if path is None:
            return geojson_text(route, diagnostics=diagnostics)
        return write_geojson(route, path, overwrite=overwrite, diagnostics=diagnostics)
    if fmt == "json":
        return route_to_json(route) if path is None else write_json(route, path, overwrite=overwrite)
    if fmt == "csv":
        if path is None:
            return csv_text(route, step, diagnostics=diagnostics)
        return write_csv(route, path, step, overwrite=overwrite, diagnostics=diagnostics)
    if fmt in ("vtk", "vtp"):
        return vtp_text(route, step) if path is None else write_vtp(route, path, step, overwrite=overwrite)
    raise ExportError(f"unknown export format {fmt!r} (one of {', '.join(FORMATS)})")


__all__ = [
    "FORMATS",
    "check_vtk_name",
    "export_route",
    "convert_route",
    "merge_blocks",
    "ExportError",
    "EARTH_RADIUS",
    "IGH_PROJ",
    "IGH_X0",
    "IGH_Y0",
    "OUTSIDE_PROJECTION",
    "igh_xy",
    "tile_to_lonlat",
    "world_to_lonlat",
    "route_geojson",
    "geojson_text",
    "write_geojson",
    "route_to_dict",
    "route_to_json",
    "route_from_dict",
    "route_from_json",
    "write_json",
    "tdb_to_dict",
    "tdb_from_dict",
    "tsection_to_dict",
    "tsection_from_dict",
    "TDB_SIGNATURE",
    "GLOBAL_TSECTION_SIGNATURE",
    "tdb_text",
    "tsection_text",
    "write_tdb",
    "write_tsection",
    "split_tsection",
    "CSV_COLUMNS",
    "sample_track",
    "csv_text",
    "write_csv",
    "vtp_text",
    "write_vtp",
]
