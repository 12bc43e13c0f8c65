"""The whole typed model as JSON, losslessly, and back (:func:`route_to_json`,
:func:`route_from_json`).

Layout (``"format": "tdbtools-route"``, ``"version": 1``): ``trk`` (every RouteFile
field), ``tdb`` and ``rdb`` (``serial``, ``nodes`` — ``null`` at position 0, then one
object per node with ``kind`` and every field —, ``sections`` — one list per numpy
column — and ``items`` with ``type`` = the MSTS token and every field), ``tsection``
(the section and shape columns, ``track_paths`` as ``[id, [sections]]`` pairs),
``section_length``, ``warnings`` and ``sources``. NaN (a straight's radius, an
unknown section length, an absent clearance) is written as ``null``. Floats are
written by ``json`` in their shortest exact form, so the round trip is exact.
"""

from __future__ import annotations

import json
import math
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Finding, Location
from ..formats.route import Route
from ..formats.tdb import (
    ITEM_TYPES,
    SECTION_COLUMNS,
    EndNode,
    JunctionNode,
    PData,
    RData,
    SData,
    SignalDir,
    TrackDB,
    TrPin,
    UiD,
    VectorNode,
    VectorSections,
)
from ..formats.trk import RouteFile, RouteStart
from ..formats.tsection import SectionTable, ShapeTable, TSection
from .msts import ExportError, check_target

FORMAT = "tdbtools-route"
VERSION = 1

__all__ = [
    "FORMAT",
    "VERSION",
    "route_to_dict",
    "route_to_json",
    "route_from_dict",
    "route_from_json",
    "tdb_to_dict",
    "tdb_from_dict",
    "tsection_to_dict",
    "tsection_from_dict",
    "write_json",
]

_NODE_TYPES = {"vector": VectorNode, "junction": JunctionNode, "end": EndNode}


def _plain(v: Any) -> Any:
    """Dataclasses → dicts, tuples → lists, numpy scalars → Python, NaN → None."""
    if is_dataclass(v) and not isinstance(v, type):
        return {f.name: _plain(getattr(v, f.name)) for f in fields(v)}
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _nan_list(a: np.ndarray) -> list:
    return [None if math.isnan(x) else x for x in a.tolist()]


def _from_nan_list(a: list) -> np.ndarray:
    return np.array([math.nan if x is None else x for x in a], dtype=np.float64).reshape(-1)


# -- track database --------------------------------------------------------------------


def tdb_to_dict(db: TrackDB) -> dict:
    nodes: list = [None]
    for n in db.nodes[1:]:
        if n is None:
            nodes.append(None)
            continue
        d = {"kind": n.kind}
        d.update(_plain(n))
        nodes.append(d)
    s = db.sections
    sections = {name: getattr(s, name).tolist() for name, _ in SECTION_COLUMNS}
    sections["flag3"] = [str(v) for v in s.flag3]
    sections["node"] = s.node.tolist()
    items = []
    for it in db.items:
        d = {"type": type(it).token}
        d.update(_plain(it))
        items.append(d)
    return {"path": db.path, "serial": db.serial, "nodes": nodes, "sections": sections, "items": items}


def _uid(d: dict | None) -> UiD | None:
    return None if d is None else UiD(**d)


def _node_from(d: dict | None):
    if d is None:
        return None
    d = dict(d)
    cls = _NODE_TYPES[d.pop("kind")]
    d["pins"] = tuple(TrPin(**p) for p in d["pins"])
    if cls is VectorNode:
        d["item_refs"] = tuple(d["item_refs"])
    else:
        d["uid"] = _uid(d.get("uid"))
        d["values"] = tuple(d["values"])
    return cls(**d)


_NESTED = {"s_data": SData, "r_data": RData, "p_data": PData}


def _item_from(d: dict):
    d = dict(d)
    cls = ITEM_TYPES[d.pop("type").lower()]
    for k, c in _NESTED.items():
        if d.get(k) is not None:
            d[k] = c(**d[k])
    if "signal_dirs" in d:
        d["signal_dirs"] = tuple(SignalDir(**x) for x in d["signal_dirs"])
    if "sr_data" in d:
        d["sr_data"] = tuple(d["sr_data"])
    return cls(**d)


def tdb_from_dict(d: dict) -> TrackDB:
    s = d["sections"]
    cols = {}
    for name, dtype in SECTION_COLUMNS:
        if dtype is object:
            arr = np.empty(len(s[name]), dtype=object)
            arr[:] = s[name]
        else:
            arr = np.array(s[name], dtype=dtype).reshape(-1)
        cols[name] = arr
    sections = VectorSections(**cols, node=np.array(s["node"], dtype=np.int64).reshape(-1))
    for f in fields(sections):
        getattr(sections, f.name).flags.writeable = False
    nodes = tuple(_node_from(n) for n in d["nodes"])
    items = tuple(_item_from(i) for i in d["items"])
    return TrackDB(d["path"], d["serial"], nodes, sections, items)


# -- tsection --------------------------------------------------------------------------


def tsection_to_dict(ts: TSection) -> dict:
    s, t = ts.sections, ts.shapes
    return {
        "sections": {
            "ids": s.ids.tolist(),
            "width": s.width.tolist(),
            "length": s.length.tolist(),
            "radius": _nan_list(s.radius),
            "angle": _nan_list(s.angle),
        },
        "shapes": {
            "ids": t.ids.tolist(),
            "filenames": list(t.filenames),
            "num_paths": t.num_paths.tolist(),
            "main_route": t.main_route.tolist(),
            "clearance": _nan_list(t.clearance),
            "flags": t.flags.tolist(),
            "path_start": t.path_start.tolist(),
            "path_offset": t.path_offset.tolist(),
            "path_sec_start": t.path_sec_start.tolist(),
            "path_sections": t.path_sections.tolist(),
        },
        "track_paths": [[k, list(v)] for k, v in ts.track_paths.items()],
        "files": list(ts.files),
    }


def tsection_from_dict(d: dict) -> TSection:
    s, t = d["sections"], d["shapes"]
    sections = SectionTable(
        np.array(s["ids"], dtype=np.int64).reshape(-1),
        np.array(s["width"], dtype=np.float64).reshape(-1),
        np.array(s["length"], dtype=np.float64).reshape(-1),
        _from_nan_list(s["radius"]),
        _from_nan_list(s["angle"]),
    )
    shapes = ShapeTable(
        ids=np.array(t["ids"], dtype=np.int64).reshape(-1),
        filenames=tuple(t["filenames"]),
        num_paths=np.array(t["num_paths"], dtype=np.int64).reshape(-1),
        main_route=np.array(t["main_route"], dtype=np.int64).reshape(-1),
        clearance=_from_nan_list(t["clearance"]),
        flags=np.array(t["flags"], dtype=np.uint8).reshape(-1),
        path_start=np.array(t["path_start"], dtype=np.int64).reshape(-1),
        path_offset=np.array(t["path_offset"], dtype=np.float64).reshape(-1, 4),
        path_sec_start=np.array(t["path_sec_start"], dtype=np.int64).reshape(-1),
        path_sections=np.array(t["path_sections"], dtype=np.int64).reshape(-1),
    )
    paths = {int(k): tuple(int(x) for x in v) for k, v in d["track_paths"]}
    return TSection(sections, shapes, paths, tuple(d.get("files", ())))


# -- route -----------------------------------------------------------------------------


def _trk_from(d: dict) -> RouteFile:
    d = dict(d)
    if d.get("route_start") is not None:
        d["route_start"] = RouteStart(**d["route_start"])
    return RouteFile(**d)


def route_to_dict(route: Route) -> dict:
    return {
        "format": FORMAT,
        "version": VERSION,
        "folder": route.folder,
        "install_root": route.install_root,
        "trk": _plain(route.trk),
        "tdb": tdb_to_dict(route.tdb),
        "rdb": None if route.rdb is None else tdb_to_dict(route.rdb),
        "tsection": tsection_to_dict(route.tsection),
        "section_length": _nan_list(np.asarray(route.section_length, dtype=np.float64)),
        "warnings": [_plain(w) for w in route.warnings],
        "sources": list(route.sources),
    }


def route_to_json(route: Route, *, indent: int | None = None) -> str:
    """The route as JSON text (strict JSON: no NaN)."""
    return json.dumps(route_to_dict(route), indent=indent, allow_nan=False, ensure_ascii=False)


def route_from_dict(d: dict) -> Route:
    if d.get("format") != FORMAT:
        raise ExportError(f"not a tdbtools route JSON (format {d.get('format')!r}, expected {FORMAT!r})")
    if d.get("version") != VERSION:
        raise ExportError(
            f"tdbtools route JSON version {d.get('version')!r} is not supported (expected {VERSION})"
        )
    try:
        lengths = _from_nan_list(d["section_length"])
        lengths.flags.writeable = False
        warnings = tuple(
            Finding(**{**w, "location": None if w.get("location") is None else Location(**w["location"])})
            for w in d.get("warnings", ())
        )
        return Route(
            d["folder"],
            d["install_root"],
            _trk_from(d["trk"]),
            tdb_from_dict(d["tdb"]),
            None if d["rdb"] is None else tdb_from_dict(d["rdb"]),
            tsection_from_dict(d["tsection"]),
            lengths,
            warnings,
            tuple(d.get("sources", ())),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ExportError(f"malformed tdbtools route JSON: {type(exc).__name__}: {exc}") from None


def route_from_json(source: str | bytes | Path | dict) -> Route:
    """A :class:`Route` from :func:`route_to_json` output: JSON text, a path to a
    ``.json`` file, or the parsed dict."""
    if isinstance(source, dict):
        return route_from_dict(source)
    if isinstance(source, Path):
        source = source.read_text(encoding="utf-8")
    elif isinstance(source, str) and not source.lstrip().startswith("{") and Path(source).is_file():
        source = Path(source).read_text(encoding="utf-8")
    try:
        d = json.loads(source)
    except json.JSONDecodeError as exc:
        raise ExportError(f"not valid JSON: {exc}") from None
    if not isinstance(d, dict):
        raise ExportError("not a tdbtools route JSON (the top level is not an object)")
    return route_from_dict(d)


def write_json(route: Route, path: str | Path, *, overwrite: bool = False, indent: int | None = None) -> Path:
    """Write :func:`route_to_json` to ``path`` (UTF-8), atomically."""
    from .._fs import write_bytes_atomic

    p = check_target(path, overwrite)
    write_bytes_atomic(p, route_to_json(route, indent=indent).encode("utf-8"))
    return p
