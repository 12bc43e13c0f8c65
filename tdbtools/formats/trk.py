"""The route file ``.trk`` (docs/formats.md §7): ``Tr_RouteFile ( RouteID ( ) Name ( ) FileName ( ) ... )``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import Diagnostics
from ..stf import parse_file
from ..stf.tree import Block, Document
from ._read import Reader, to_float


@dataclass(frozen=True, slots=True)
class RouteStart:
    tile_x: float
    tile_z: float
    x: float
    z: float


@dataclass(frozen=True, slots=True)
class RouteFile:
    path: str = field(compare=False)  # where it was read from: not part of the model
    route_id: str
    name: str
    filename: str  # base name of the .tdb / .rdb
    description: str = ""
    route_start: RouteStart | None = None
    milepost_units_km: bool = False
    speed_limit: float = 500.0  # m/s
    electrified: bool = True
    overhead_wire_height: float = 6.0
    max_line_voltage: float | None = None
    track_gauge: float | None = None  # metres


def read_trk(path: str | Path, *, strict: bool = True, diagnostics: Diagnostics | None = None) -> RouteFile:
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=strict)
    return trk_from_document(parse_file(path, diagnostics=diags), diags)


def trk_from_document(doc: Document, diags: Diagnostics) -> RouteFile:
    rd = Reader(diags)
    root = doc.find("Tr_RouteFile")
    if root is None:
        rd.problem(doc, "no Tr_RouteFile block in route file")
        return RouteFile(doc.path, "", "", "")
    fields: dict = {}
    for blk in root.blocks():
        k = blk.key
        if k == "routeid":
            fields["route_id"] = rd.string(blk)
        elif k == "name":
            fields["name"] = rd.string(blk)
        elif k == "filename":
            fields["filename"] = rd.string(blk)
        elif k == "description":
            fields["description"] = rd.string(blk)
        elif k == "routestart" and "route_start" not in fields:  # the first one wins
            fields["route_start"] = RouteStart(
                *(rd.value(blk, i, to_float, 0.0, "RouteStart") for i in range(4))
            )
        elif k == "milepostunitskilometers":
            fields["milepost_units_km"] = True
        elif k == "speedlimit":
            fields["speed_limit"] = _quantity(rd, blk, "speed", 500.0)
        elif k == "electrified":
            fields["electrified"] = _flag(blk)
        elif k == "overheadwireheight":
            fields["overhead_wire_height"] = _quantity(rd, blk, "distance", 6.0)
        elif k == "maxlinevoltage":
            fields["max_line_voltage"] = _quantity(rd, blk, "voltage", 0.0)
        elif k == "trackgauge":
            fields["track_gauge"] = _quantity(rd, blk, "distance", 1.435)
    for req, label in (("route_id", "RouteID"), ("name", "Name"), ("filename", "FileName")):
        if not fields.get(req):
            rd.problem(root, f"Tr_RouteFile: missing {label}")
            fields[req] = fields.get(req, "")
    return RouteFile(doc.path, **fields)


def _quantity(rd: Reader, blk: Block, family: str, default: float) -> float:
    return rd.quantity(blk, 0, family, default=default)


def _flag(blk: Block) -> bool:
    v = blk.values
    if not v:
        return True
    s = str(v[0]).lower()
    if s in ("true", "false"):
        return s == "true"
    try:
        return int(s, 16) != 0  # written as 00000001
    except ValueError:
        return True
