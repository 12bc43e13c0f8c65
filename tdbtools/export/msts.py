"""Conversion back to MSTS files: ``.tdb``/``.rdb`` and ``tsection.dat`` (docs/formats.md §5, §6).

The typed model is turned into a generic STF tree (:class:`~tdbtools.stf.tree.Block`)
and written with :func:`~tdbtools.stf.writer.format_stf` and
:func:`~tdbtools.stf.writer.write_text_atomic`: UTF-16LE with BOM, CRLF, the MSTS
signature line, into a temporary file that replaces the target only when complete.

Reading a written file gives a model equal to the one written (``TrackDB.__eq__``,
``TSection.__eq__``): floats are written in their shortest exact form (``repr``),
flags as the text they were read from.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .._fs import check_target as _check_target
from .._fs import write_text_atomic
from ..errors import TdbToolsError
from ..formats.tdb import (
    SECTION_FIELDS,
    CrossoverItem,
    EndNode,
    JunctionNode,
    PlatformItem,
    SidingItem,
    SignalItem,
    SoundRegionItem,
    SpeedPostItem,
    TrackDB,
    TrItem,
    UiD,
    VectorNode,
)
from ..formats.tsection import ROUTE_LOCAL_SIGNATURE, TSection
from ..stf.tree import Block, QStr
from ..stf.writer import format_stf

#: The signature line of .tdb, .rdb and route-local tsection.dat files.
TDB_SIGNATURE = "SIMISA@@@@@@@@@@JINX0T0t______"
#: The signature line of the global tsection.dat (and its OPENRAILS override).
GLOBAL_TSECTION_SIGNATURE = "SIMISA@@@@@@@@@@JINX0F0t______"

__all__ = [
    "TDB_SIGNATURE",
    "GLOBAL_TSECTION_SIGNATURE",
    "ExportError",
    "fmt_float",
    "tdb_block",
    "tdb_text",
    "write_tdb",
    "tsection_text",
    "write_tsection",
    "split_tsection",
    "check_target",
]


class ExportError(TdbToolsError, ValueError):
    """An export or conversion that cannot be done (target exists, model not writable)."""


# -- values ----------------------------------------------------------------------------


def fmt_float(v: float) -> str:
    """The shortest text that reads back as exactly ``v`` (``200`` for 200.0, ``-0``
    for −0.0, else ``repr``)."""
    v = float(v)
    if not math.isfinite(v):
        raise ExportError(f"cannot write the non-finite number {v!r} to an MSTS file")
    if v == 0.0:
        return "-0" if math.copysign(1.0, v) < 0 else "0"
    if v.is_integer() and abs(v) < 1e16:
        return str(int(v))
    return repr(v)


def _s(v) -> str:
    """A raw text value, quoted on output where it must be."""
    return str(v)


def _q(v: str) -> QStr:
    return QStr(v)


def check_target(path: str | Path, overwrite: bool) -> Path:
    """Refuse to replace an existing file unless ``overwrite`` (the one rule of
    :func:`tdbtools._fs.check_target`, raising :class:`ExportError`)."""
    return _check_target(path, overwrite, ExportError)


# -- track database --------------------------------------------------------------------


def _uid_block(u: UiD) -> Block:
    vals = [
        str(u.world_tile_x),
        str(u.world_tile_z),
        str(u.world_id),
        str(u.unused),
        str(u.tile_x),
        str(u.tile_z),
    ] + [fmt_float(v) for v in (u.x, u.y, u.z, u.ax, u.ay, u.az)]
    return Block("UiD", vals)


def _pins_block(node) -> Block:
    items: list = [str(node.in_pins), str(node.out_pins)]
    items += [Block("TrPin", [str(p.link), str(p.direction)]) for p in node.pins]
    return Block("TrPins", items)


def _section_columns(db: TrackDB) -> list[list[str]]:
    """The 16 values of every row of ``db.sections`` as text, row-major."""
    s = db.sections
    cols: list[list[str]] = []
    for name in SECTION_FIELDS:
        col = getattr(s, name)
        if name == "flag3":
            cols.append([str(v) for v in col])
        elif col.dtype.kind in "iu":
            cols.append([str(v) for v in col.tolist()])
        else:
            cols.append([fmt_float(v) for v in col.tolist()])
    return [list(r) for r in zip(*cols)] if cols and len(s) else []


def _node_block(db: TrackDB, node, rows: list[list[str]]) -> Block:
    items: list = [str(node.index)]
    if isinstance(node, VectorNode):
        sl = node.section_slice
        vals = [str(node.section_count)]
        for r in rows[sl]:
            vals.extend(r)
        body: list = [Block("TrVectorSections", vals)]
        if node.item_refs:
            body.append(
                Block(
                    "TrItemRefs",
                    [str(len(node.item_refs))] + [Block("TrItemRef", [str(i)]) for i in node.item_refs],
                )
            )
        items.append(Block("TrVectorNode", body))
    elif isinstance(node, JunctionNode):
        vals = list(node.values) if node.values else ["0", str(node.shape_index), "0"]
        items.append(Block("TrJunctionNode", vals))
        if node.uid is not None:
            items.append(_uid_block(node.uid))
    elif isinstance(node, EndNode):
        items.append(Block("TrEndNode", list(node.values)))
        if node.uid is not None:
            items.append(_uid_block(node.uid))
    else:
        raise ExportError(
            f"track node {getattr(node, 'index', '?')}: unknown node type {type(node).__name__}"
        )
    items.append(_pins_block(node))
    return Block("TrackNode", items)


def _item_block(item: TrItem) -> Block:
    items: list = []
    if item.item_id is not None:
        items.append(Block("TrItemId", [str(item.item_id)]))
    if item.s_data is not None:
        items.append(Block("TrItemSData", [fmt_float(item.s_data.distance), _s(item.s_data.flags)]))
    if item.p_data is not None:
        p = item.p_data
        items.append(Block("TrItemPData", [fmt_float(p.x), fmt_float(p.z), str(p.tile_x), str(p.tile_z)]))
    if item.r_data is not None:
        r = item.r_data
        items.append(
            Block(
                "TrItemRData", [fmt_float(r.x), fmt_float(r.y), fmt_float(r.z), str(r.tile_x), str(r.tile_z)]
            )
        )
    if isinstance(item, CrossoverItem):
        items.append(Block("CrossoverTrItemData", [str(item.track_node), str(item.shape_index)]))
    elif isinstance(item, SignalItem):
        items.append(
            Block(
                "TrSignalType",
                [_s(item.flags), str(item.direction), fmt_float(item.sig_data1), _q(item.signal_type)],
            )
        )
        if item.signal_dirs:
            items.append(
                Block(
                    "TrSignalDirs",
                    [str(len(item.signal_dirs))]
                    + [
                        Block("TrSignalDir", [str(d.track_node), str(d.sd1), str(d.link_lr_path), str(d.sd3)])
                        for d in item.signal_dirs
                    ],
                )
            )
    elif isinstance(item, SpeedPostItem):
        vals = [str(item.flags)]
        if item.flags & 3 != 3:
            v = item.value if item.value is not None else 0.0
            vals.append(fmt_float(v))
        if item.flags & (1 << 4):
            vals.append(str(item.display_number if item.display_number is not None else 0))
        vals.append(fmt_float(item.angle))
        items.append(Block("SpeedpostTrItemData", vals))
    elif isinstance(item, PlatformItem):
        items += [
            Block("PlatformName", [_q(item.platform_name)]),
            Block("Station", [_q(item.station)]),
            Block("PlatformMinWaitingTime", [str(item.min_waiting_time)]),
            Block("PlatformNumPassengersWaiting", [str(item.passengers_waiting)]),
            Block("PlatformTrItemData", [_s(item.flags), str(item.linked_item)]),
        ]
    elif isinstance(item, SidingItem):
        items += [
            Block("SidingName", [_q(item.siding_name)]),
            Block("SidingTrItemData", [_s(item.flags), str(item.linked_item)]),
        ]
    elif isinstance(item, SoundRegionItem):
        a, b, c = item.sr_data
        items.append(Block("TrItemSRData", [str(a), str(b), fmt_float(c)]))
    if not type(item).token:
        raise ExportError(f"track item {item.index}: no MSTS token for {type(item).__name__}")
    return Block(type(item).token, items)


def tdb_block(db: TrackDB) -> Block:
    """The ``TrackDB ( ... )`` block of a track (or road) database."""
    rows = _section_columns(db)
    body: list = []
    if db.serial is not None:
        body.append(Block("Serial", [str(db.serial)]))
    nodes = []
    for i, n in enumerate(db.nodes[1:], start=1):
        if n is None:
            raise ExportError(f"track node {i} is missing (a lenient read dropped it): cannot write the file")
        if n.index != i:
            raise ExportError(f"track node at position {i} has index {n.index}")
        nodes.append(_node_block(db, n, rows))
    body.append(Block("TrackNodes", [str(len(nodes))] + nodes))
    if db.items:
        body.append(Block("TrItemTable", [str(len(db.items))] + [_item_block(it) for it in db.items]))
    return Block("TrackDB", body)


def _doc(blocks: list[Block]) -> Block:
    return Block("", list(blocks))


def tdb_text(db: TrackDB) -> str:
    """The STF text (LF line ends) of a .tdb/.rdb, signature line first."""
    return format_stf(_doc([tdb_block(db)]), signature=TDB_SIGNATURE)


def write_tdb(db: TrackDB, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write ``db`` as an MSTS ``.tdb`` (or ``.rdb``) file, atomically.

    Raises :class:`ExportError` if ``path`` exists and ``overwrite`` is False.
    """
    p = check_target(path, overwrite)
    write_text_atomic(p, tdb_text(db))
    return p


# -- tsection.dat ----------------------------------------------------------------------


def _radians_exact(deg: float) -> float:
    """A float ``a`` with ``math.degrees(a) == deg`` exactly (the reader keeps the
    route-local radians as degrees): ``math.radians`` and its neighbours."""
    a = math.radians(deg)
    if math.degrees(a) == deg:
        return a
    lo = hi = a
    for _ in range(64):
        lo, hi = math.nextafter(lo, -math.inf), math.nextafter(hi, math.inf)
        for c in (lo, hi):
            if math.degrees(c) == deg:
                return c
    raise ExportError(f"the curve angle {deg!r}° has no exact radian form for a route-local tsection.dat")


def _global_sections_block(ts: TSection, ids: np.ndarray | None) -> Block:
    s = ts.sections
    sel = np.arange(len(s)) if ids is None else s.rows(ids)[0][s.rows(ids)[1]]
    items: list = [str(int(s.ids.max()) + 1 if len(s) else 0)]
    for r in sel.tolist():
        sub = [Block("SectionSize", [fmt_float(s.width[r]), fmt_float(s.length[r])])]
        if not math.isnan(s.radius[r]):
            sub.append(Block("SectionCurve", [fmt_float(s.radius[r]), fmt_float(s.angle[r])]))
        items.append(Block("TrackSection", [str(int(s.ids[r]))] + sub))
    return Block("TrackSections", items)


def _local_sections_block(ts: TSection, ids: np.ndarray | None) -> Block:
    s = ts.sections
    sel = np.arange(len(s)) if ids is None else s.rows(ids)[0][s.rows(ids)[1]]
    items: list = [str(int(s.ids.max()) + 1 if len(s) else 0)]
    for r in sel.tolist():
        sid, width, length, radius, angle = (
            int(s.ids[r]),
            float(s.width[r]),
            float(s.length[r]),
            float(s.radius[r]),
            float(s.angle[r]),
        )
        if width != 1.5:
            raise ExportError(
                f"TrackSection {sid}: width {width} cannot be written in the route-local "
                "layout (always 1.5 m); write the global layout"
            )
        if math.isnan(radius):
            if not math.isnan(angle):
                raise ExportError(f"TrackSection {sid}: an angle without a radius")
            items.append(
                Block("TrackSection", [Block("SectionCurve", ["0"]), str(sid), fmt_float(length), "0"])
            )
        else:
            if length != 0.0 or radius == 0.0:
                raise ExportError(
                    f"TrackSection {sid}: a curve with length {length} and radius {radius} "
                    "cannot be written in the route-local layout"
                )
            items.append(
                Block(
                    "TrackSection",
                    [
                        Block("SectionCurve", ["1"]),
                        str(sid),
                        fmt_float(_radians_exact(angle)),
                        fmt_float(radius),
                    ],
                )
            )
    return Block("TrackSections", items)


def _shapes_block(ts: TSection) -> Block:
    t = ts.shapes
    items: list = [str(int(t.ids.max()) + 1 if len(t) else 0)]
    for i in range(len(t)):
        sub: list = [Block("FileName", [t.filenames[i]]), Block("NumPaths", [str(int(t.num_paths[i]))])]
        for j in range(int(t.path_start[i]), int(t.path_start[i + 1])):
            a, b = int(t.path_sec_start[j]), int(t.path_sec_start[j + 1])
            secs = [str(v) for v in t.path_sections[a:b].tolist()]
            sub.append(
                Block("SectionIdx", [str(b - a)] + [fmt_float(v) for v in t.path_offset[j].tolist()] + secs)
            )
        if int(t.main_route[i]) != 0:
            sub.append(Block("MainRoute", [str(int(t.main_route[i]))]))
        c = float(t.clearance[i])
        if not math.isnan(c):
            sub.append(Block("ClearanceDist", [fmt_float(c)]))
        f = int(t.flags[i])
        if f & 1:
            sub.append(Block("TunnelShape", []))
        if f & 2:
            sub.append(Block("RoadShape", []))
        if f & 4:
            sub.append(Block("ORTSRackShape", []))
        items.append(Block("TrackShape", [str(int(t.ids[i]))] + sub))
    return Block("TrackShapes", items)


def _paths_block(ts: TSection) -> Block:
    items: list = [str(len(ts.track_paths))]
    for pid in sorted(ts.track_paths):
        secs = ts.track_paths[pid]
        items.append(Block("TrackPath", [str(pid), str(len(secs))] + [str(s) for s in secs]))
    return Block("SectionIdx", items)


def tsection_text(ts: TSection, *, layout: str = "global", section_ids=None) -> str:
    """The STF text of a tsection.dat.

    ``layout="global"``: ``TrackSection ( id SectionSize ( w l ) [SectionCurve ( R deg )] )``,
    every ``TrackShape`` and (when there are any) the dynamic-track paths as
    ``SectionIdx ( TrackPath ... )``; signature ``JINX0F0t``. ``layout="local"``: the
    route-local layout (``TrackSection ( SectionCurve ( flag ) id a b )`` with the
    angle in radians, the ``SectionIdx`` paths, no shapes unless there are any) with
    the signature Open Rails insists on. ``section_ids`` limits the sections written.
    """
    ids = (
        None if section_ids is None else np.asarray(sorted(set(int(i) for i in section_ids)), dtype=np.int64)
    )
    blocks: list[Block] = []
    if layout == "global":
        blocks.append(_global_sections_block(ts, ids))
        if len(ts.shapes):
            blocks.append(_shapes_block(ts))
        if ts.track_paths:
            blocks.append(_paths_block(ts))
        sig = GLOBAL_TSECTION_SIGNATURE
    elif layout == "local":
        blocks.append(_local_sections_block(ts, ids))
        if len(ts.shapes):
            blocks.append(_shapes_block(ts))
        blocks.append(_paths_block(ts))
        sig = ROUTE_LOCAL_SIGNATURE
    else:
        raise ExportError(f"unknown tsection layout {layout!r} (global or local)")
    return format_stf(_doc(blocks), signature=sig)


def write_tsection(
    ts: TSection, path: str | Path, *, layout: str = "global", section_ids=None, overwrite: bool = False
) -> Path:
    """Write ``ts`` as a tsection.dat of the given layout (see :func:`tsection_text`),
    atomically; refuses to replace an existing file unless ``overwrite``."""
    p = check_target(path, overwrite)
    write_text_atomic(p, tsection_text(ts, layout=layout, section_ids=section_ids))
    return p


def split_tsection(ts: TSection) -> tuple[TSection, TSection]:
    """Split a route's merged tables into a global part (sections and shapes) and a
    route-local part (the dynamic-track paths and the sections only they use, where
    the local layout can hold them), so that reading the global file and then the
    local one gives ``ts`` again."""
    from ..formats.tsection import SectionTable

    s = ts.sections
    used: set[int] = set()
    for secs in ts.track_paths.values():
        used.update(secs)
    shape_secs = set(ts.shapes.path_sections.tolist())
    local_mask = np.zeros(len(s), dtype=bool)
    for r, sid in enumerate(s.ids.tolist()):
        if sid in used and sid not in shape_secs and s.width[r] == 1.5:
            curved = not math.isnan(s.radius[r])
            if (curved and s.length[r] == 0.0 and s.radius[r] != 0.0) or (
                not curved and math.isnan(s.angle[r])
            ):
                local_mask[r] = True

    def table(mask: np.ndarray) -> SectionTable:
        return SectionTable(
            *(getattr(s, f)[mask].copy() for f in ("ids", "width", "length", "radius", "angle"))
        )

    from ..formats.tsection import ShapeTable

    empty_shapes = ShapeTable(
        np.zeros(0, np.int64),
        (),
        np.zeros(0, np.int64),
        np.zeros(0, np.int64),
        np.zeros(0),
        np.zeros(0, np.uint8),
        np.zeros(1, np.int64),
        np.zeros((0, 4)),
        np.zeros(1, np.int64),
        np.zeros(0, np.int64),
    )
    glob = TSection(table(~local_mask), ts.shapes, {}, ts.files)
    local = TSection(table(local_mask), empty_shapes, dict(ts.track_paths), ts.files)
    return glob, local


def trk_text(trk) -> str:  # noqa: ANN001 - a formats.trk.RouteFile
    """A ``.trk`` route file with the fields tdbtools models (Tr_RouteFile; signature
    ``JINX0r1t``): enough for Open Rails' route loading and for :func:`load_route`."""
    items: list = [
        Block("RouteID", [_q(trk.route_id)]),
        Block("Name", [_q(trk.name)]),
        Block("Description", [_q(trk.description)]),
        Block("FileName", [_q(trk.filename)]),
    ]
    if trk.route_start is not None:
        st = trk.route_start
        items.append(Block("RouteStart", [fmt_float(v) for v in (st.tile_x, st.tile_z, st.x, st.z)]))
    if trk.milepost_units_km:
        items.append(Block("MilepostUnitsKilometers", []))
    items.append(Block("Electrified", ["00000001" if trk.electrified else "00000000"]))
    items.append(Block("OverheadWireHeight", [fmt_float(trk.overhead_wire_height)]))
    if trk.max_line_voltage is not None:
        items.append(Block("MaxLineVoltage", [fmt_float(trk.max_line_voltage)]))
    if trk.track_gauge is not None:
        items.append(Block("TrackGauge", [fmt_float(trk.track_gauge)]))
    items.append(Block("SpeedLimit", [fmt_float(trk.speed_limit)]))
    return format_stf(_doc([Block("Tr_RouteFile", items)]), signature="SIMISA@@@@@@@@@@JINX0r1t______")


def write_trk(trk, path: str | Path, *, overwrite: bool = False) -> Path:  # noqa: ANN001
    target = check_target(path, overwrite)
    write_text_atomic(target, trk_text(trk))
    return target
