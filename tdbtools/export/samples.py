"""Sampled track points: CSV, and VTK XML PolyData (``.vtp``) for ParaView.

:func:`sample_track` walks every vector node from its start to its end and gives a
point every ``step`` metres plus the node's end: node, offset (m from the node
start), tile and tile-relative x, y, z (x, z normalised into [−1024, 1024)),
lon/lat (degrees, IGH inverse; NaN without pyproj when ``lonlat=False``), grade
(rise per metre along the node, −tan AX) and curvature (signed 1/R, + = right).
Sections whose id is not in tsection.dat have no length: a node's points stop at
the first of them.
"""

from __future__ import annotations

import base64
import csv
import io
from pathlib import Path

import numpy as np

from .._fs import write_bytes_atomic
from ..errors import Diagnostics
from ..formats.route import Route
from ..formats.tdb import VectorNode
from ..track.geometry import point_at, section_geometry
from .msts import ExportError, check_target

#: At most this many sample points per export (DK24 at 10 m: about 85,000).
MAX_SAMPLES = 20_000_000

#: ``grade_permille``: rise per 1000 m (‰), as in profiles and replay traces.
CSV_COLUMNS = (
    "node",
    "offset",
    "tile_x",
    "tile_z",
    "x",
    "y",
    "z",
    "lon",
    "lat",
    "grade_permille",
    "curvature",
)

__all__ = ["CSV_COLUMNS", "sample_track", "csv_text", "write_csv", "vtp_text", "write_vtp"]


def sample_track(route: Route, step: float = 10.0, *, lonlat: bool = True) -> dict[str, np.ndarray]:
    """Columns :data:`CSV_COLUMNS` of points every ``step`` m along every vector node
    (grouped by node, in node order, offsets increasing)."""
    if not step > 0:
        raise ExportError(f"step must be > 0, got {step!r}")
    geom = section_geometry(route)
    length = np.where(geom.known, geom.length, np.nan)
    # Counted before any sample is made: a route may claim sections of 1e300 m.
    with np.errstate(all="ignore"):
        planned = float(np.nansum(length)) / step + len(length)
    if not planned <= MAX_SAMPLES:
        raise ExportError(
            f"sampling every {step:g} m would make {planned:.3g} points, over the limit of "
            f"{MAX_SAMPLES:,}: use a larger step"
        )
    rows_all: list[np.ndarray] = []
    off_all: list[np.ndarray] = []
    node_all: list[np.ndarray] = []
    noff_all: list[np.ndarray] = []
    for n in route.tdb.nodes[1:]:
        if not isinstance(n, VectorNode) or n.section_count == 0:
            continue
        rows = np.arange(n.section_slice.start, n.section_slice.stop)
        ln = length[rows]
        bad = np.flatnonzero(np.isnan(ln))
        if len(bad):  # stop at the first unknown section (its start is still known)
            rows, ln = rows[: bad[0] + 1], np.concatenate([ln[: bad[0]], [0.0]])
        starts = np.concatenate([[0.0], np.cumsum(ln)])
        total = starts[-1]
        offs = np.arange(0.0, total, step)
        offs = np.concatenate([offs, [total]]) if (len(offs) == 0 or offs[-1] < total) else offs
        k = np.clip(np.searchsorted(starts, offs, side="right") - 1, 0, len(rows) - 1)
        rows_all.append(rows[k])
        off_all.append(offs - starts[k])
        noff_all.append(offs)
        node_all.append(np.full(len(offs), n.index, dtype=np.int64))
    if not rows_all:
        empty = {c: np.zeros(0) for c in CSV_COLUMNS}
        for c in ("node", "tile_x", "tile_z"):
            empty[c] = np.zeros(0, dtype=np.int64)
        return empty
    rows = np.concatenate(rows_all)
    p = point_at(geom, rows, np.concatenate(off_all)).normalized()
    X = p.tile_x * 2048.0 + p.x
    Z = p.tile_z * 2048.0 + p.z
    if lonlat:
        from .geo import world_to_lonlat

        lon, lat = world_to_lonlat(X, Z)
    else:
        lon = lat = np.full(len(X), np.nan)
    return {
        "node": np.concatenate(node_all),
        "offset": np.concatenate(noff_all),
        "tile_x": np.asarray(p.tile_x, dtype=np.int64),
        "tile_z": np.asarray(p.tile_z, dtype=np.int64),
        "x": p.x,
        "y": p.y,
        "z": p.z,
        "lon": lon,
        "lat": lat,
        "grade_permille": -1000.0 * np.tan(geom.ax[rows]),
        "curvature": np.asarray(p.curvature, dtype=np.float64),
    }


def _fmt(v: float, digits: int) -> str:
    if v != v:
        return ""
    s = f"{v:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _report_off_projection(cols: dict[str, np.ndarray], diagnostics: Diagnostics | None) -> None:
    """Samples without longitude/latitude (outside the IGH projection's valid area, see
    docs/findings.md §4): an ``OUTSIDE_PROJECTION`` finding, or strict an ExportError."""
    off = np.flatnonzero(np.isnan(cols["lon"]))
    if not off.size:
        return
    from .geo import _where_off, outside_projection

    i = int(off[0])
    X = float(cols["tile_x"][i]) * 2048.0 + float(cols["x"][i])
    Z = float(cols["tile_z"][i]) * 2048.0 + float(cols["z"][i])
    message = (
        f"{off.size} of {cols['lon'].size} sample points lie where the MSTS tile grid maps to no "
        f"point of the Earth (outside the IGH projection's valid area): their lon/lat cells are "
        f"empty; e.g. node {int(cols['node'][i])} at {_where_off(X, Z)}"
    )
    outside_projection(message, "a lenient export writes them without lon/lat", diagnostics)


def csv_text(
    route: Route, step: float = 10.0, *, lonlat: bool = True, diagnostics: Diagnostics | None = None
) -> str:
    """The sampled points as CSV (header :data:`CSV_COLUMNS`; empty cell = NaN). Points
    with no lon/lat (outside the projection) raise :class:`ExportError`, or with a lenient
    ``diagnostics`` are written with empty lon/lat cells and an ``OUTSIDE_PROJECTION``
    finding (``lonlat=False`` leaves both columns empty on purpose)."""
    cols = sample_track(route, step, lonlat=lonlat)
    if lonlat:
        _report_off_projection(cols, diagnostics)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    digits = {"offset": 3, "x": 4, "y": 4, "z": 4, "lon": 8, "lat": 8, "grade_permille": 3, "curvature": 8}
    text_cols = []
    for c in CSV_COLUMNS:
        a = cols[c]
        if a.dtype.kind in "iu":
            text_cols.append([str(v) for v in a.tolist()])
        else:
            d = digits[c]
            text_cols.append([_fmt(v, d) for v in a.tolist()])
    w.writerows(zip(*text_cols))
    return buf.getvalue()


def write_csv(
    route: Route,
    path: str | Path,
    step: float = 10.0,
    *,
    overwrite: bool = False,
    lonlat: bool = True,
    diagnostics: Diagnostics | None = None,
) -> Path:
    p = check_target(path, overwrite)
    write_bytes_atomic(p, csv_text(route, step, lonlat=lonlat, diagnostics=diagnostics).encode("utf-8"))
    return p


# -- VTK XML PolyData ------------------------------------------------------------------

_VTK_TYPES = {
    np.dtype(np.float64): "Float64",
    np.dtype(np.float32): "Float32",
    np.dtype(np.int64): "Int64",
    np.dtype(np.int32): "Int32",
    np.dtype(np.uint8): "UInt8",
}


def _data_array(name: str | None, a: np.ndarray, ncomp: int, binary: bool) -> str:
    a = np.ascontiguousarray(a)
    t = _VTK_TYPES[a.dtype]
    attrs = (
        f'type="{t}"'
        + (f' Name="{name}"' if name else "")
        + (f' NumberOfComponents="{ncomp}"' if ncomp > 1 else "")
    )
    if binary:
        raw = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        data = base64.b64encode(np.uint32(len(raw)).tobytes() + raw).decode("ascii")
        return f'<DataArray {attrs} format="binary">{data}</DataArray>'
    flat = a.reshape(-1)
    if a.dtype.kind == "f":
        body = " ".join(repr(float(v)) if v == v else "nan" for v in flat.tolist())
    else:
        body = " ".join(str(v) for v in flat.tolist())
    return f'<DataArray {attrs} format="ascii">{body}</DataArray>'


def vtp_text(route: Route, step: float = 10.0, *, binary: bool = False, origin: str = "first") -> str:
    """The track as VTK XML PolyData: one polyline (``Lines`` cell) per vector node
    through the :func:`sample_track` points, with point data ``node`` (Int64),
    ``offset``, ``grade_permille`` (‰) and ``curvature`` (Float64) and cell data ``node``.

    Points are (east, north, up) = (X, Z, Y) in metres: MSTS's left-handed frame
    (X east, Y up, Z north) turned into ParaView's right-handed one. ``origin="first"``
    subtracts the centre of the first point's tile (keeps float precision in the
    viewer; the tile is in the ``FieldData`` ``origin_tile``); ``"world"`` keeps
    absolute coordinates. ``binary`` writes base64 ``binary`` arrays instead of ASCII.
    """
    cols = sample_track(route, step, lonlat=False)
    node = cols["node"]
    X = cols["tile_x"] * 2048.0 + cols["x"]
    Z = cols["tile_z"] * 2048.0 + cols["z"]
    ox = oz = 0
    if origin == "first" and len(node):
        ox, oz = int(cols["tile_x"][0]), int(cols["tile_z"][0])
    elif origin not in ("first", "world"):
        raise ExportError(f"unknown origin {origin!r} (first or world)")
    pts = np.stack([X - ox * 2048.0, Z - oz * 2048.0, cols["y"]], axis=1).astype(np.float64)
    change = np.flatnonzero(node[1:] != node[:-1]) + 1 if len(node) else np.zeros(0, np.int64)
    ends = np.concatenate([change, [len(node)]]).astype(np.int64) if len(node) else np.zeros(0, np.int64)
    cell_nodes = node[np.concatenate([[0], change]).astype(np.int64)] if len(node) else np.zeros(0, np.int64)
    conn = np.arange(len(node), dtype=np.int64)
    da = lambda name, a, k=1: _data_array(name, a, k, binary)  # noqa: E731
    parts = [
        '<?xml version="1.0"?>',
        '<VTKFile type="PolyData" version="1.0" byte_order="LittleEndian" header_type="UInt32">',
        "<PolyData>",
        "<FieldData>" + da("origin_tile", np.array([ox, oz], dtype=np.int64)) + "</FieldData>",
        f'<Piece NumberOfPoints="{len(node)}" NumberOfVerts="0" NumberOfLines="{len(ends)}" '
        'NumberOfStrips="0" NumberOfPolys="0">',
        '<PointData Scalars="grade_permille">',
        da("node", node.astype(np.int64)),
        da("offset", cols["offset"].astype(np.float64)),
        da("grade_permille", cols["grade_permille"].astype(np.float64)),
        da("curvature", cols["curvature"].astype(np.float64)),
        "</PointData>",
        "<CellData>",
        da("node", cell_nodes.astype(np.int64)),
        "</CellData>",
        "<Points>",
        da("Points", pts, 3),
        "</Points>",
        "<Lines>",
        da("connectivity", conn),
        da("offsets", ends),
        "</Lines>",
        "</Piece>",
        "</PolyData>",
        "</VTKFile>",
    ]
    return "\n".join(parts) + "\n"


def check_vtk_name(path: str | Path) -> None:
    """The VTK export is VTK's XML PolyData, whose extension is ``.vtp``: VTK reads a
    ``.vtk`` file as the legacy format and rejects it, so that name is refused."""
    if Path(path).suffix.lower() == ".vtk":
        raise ExportError(
            f"{str(path)!r}: VTK reads .vtk files as its legacy format; tdbtools writes VTK XML "
            "PolyData, whose extension is .vtp: name the file .vtp"
        )


def write_vtp(
    route: Route,
    path: str | Path,
    step: float = 10.0,
    *,
    binary: bool = False,
    origin: str = "first",
    overwrite: bool = False,
) -> Path:
    check_vtk_name(path)
    p = check_target(path, overwrite)
    write_bytes_atomic(p, vtp_text(route, step, binary=binary, origin=origin).encode("ascii"))
    return p
