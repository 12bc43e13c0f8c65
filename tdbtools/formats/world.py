"""World files (``WORLD/w±XXXXXX±ZZZZZZ.w``): every placed object with its UiD, shape file,
position and orientation; ``Signal`` and ``Speedpost`` objects typed (docs/signals.md §3.1).

Only names of exactly 17 characters are world files, as Open Rails reads them. The tile
comes from the name. Objects are kept generically (kind, UiD, file, position,
orientation); the signal-relevant ones get their units and track-item references.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import Diagnostics, Finding
from ..stf import parse_file
from ..stf.tree import Block, Document
from ._read import Reader, to_float, to_hex, to_int

_NAME = re.compile(r"^w([+-]\d{6})([+-]\d{6})\.w$", re.I)
#: Bound on the signal units of one object.
MAX_UNITS = 1024


@dataclass(frozen=True, slots=True)
class WorldObject:
    kind: str  # block name as written (Static, TrackObj, Signal ...)
    uid: int
    file_name: str
    position: tuple[float, float, float]  # metres in the tile
    #: Quaternion (a b c d) from QDirection; from a Matrix3x3 a quaternion is not made: None.
    q_direction: tuple[float, float, float, float] | None = None
    matrix: tuple[float, ...] | None = None  # Matrix3x3, 9 values, when given instead


@dataclass(frozen=True, slots=True)
class SignalUnit:
    sub_obj: int
    db: int  # 0 = TDB, 1 = RDB
    item_id: int


@dataclass(frozen=True, slots=True)
class SignalObj(WorldObject):
    sub_obj_mask: int = 0  # SignalSubObj, hex: bit i = sub-object i present
    units: tuple[SignalUnit, ...] = ()


@dataclass(frozen=True, slots=True)
class SpeedpostObj(WorldObject):
    items: tuple[tuple[int, int], ...] = ()  # (db, item id)
    digit_texture: str = ""
    sign_shape: tuple[float, ...] = ()
    text_size: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class WorldFile:
    path: str
    tile_x: int
    tile_z: int
    objects: tuple[WorldObject, ...]
    warnings: tuple[Finding, ...] = ()

    @property
    def signals(self) -> tuple[SignalObj, ...]:
        return tuple(o for o in self.objects if isinstance(o, SignalObj))

    @property
    def speedposts(self) -> tuple[SpeedpostObj, ...]:
        return tuple(o for o in self.objects if isinstance(o, SpeedpostObj))


def world_tile(name: str) -> tuple[int, int] | None:
    """Tile (x, z) of a world-file name, or None if the name is not one Open Rails reads."""
    m = _NAME.match(name)
    if m is None or len(name) != 17:
        return None
    return int(m.group(1)), int(m.group(2))


def _floats(r: Reader, b: Block | None, n: int) -> tuple[float, ...] | None:
    if b is None:
        return None
    return tuple(r.value(b, i, to_float, 0.0) for i in range(n))


def _object(r: Reader, b: Block) -> WorldObject | None:
    uid_b = b.find("UiD")
    if uid_b is None:
        return None
    uid = r.value(uid_b, 0, to_int, -1)
    fn = b.find("FileName")
    file_name = r.string(fn, 0) if fn is not None else ""
    pos = _floats(r, b.find("Position"), 3) or (0.0, 0.0, 0.0)
    q = _floats(r, b.find("QDirection"), 4)
    m = _floats(r, b.find("Matrix3x3"), 9)
    base = (b.name, uid, file_name, (pos[0], pos[1], pos[2]), (q[0], q[1], q[2], q[3]) if q else None, m)
    if b.key == "signal":
        mask_b = b.find("SignalSubObj")
        mask = r.value(mask_b, 0, to_hex, 0) if mask_b is not None else 0
        units: list[SignalUnit] = []
        ub = b.find("SignalUnits")
        if ub is not None:
            for u in list(ub.blocks("SignalUnit"))[:MAX_UNITS]:
                tid = u.find("TrItemId")
                if tid is None:
                    r.problem(u, "SignalUnit: missing TrItemId")
                    continue
                units.append(
                    SignalUnit(
                        r.value(u, 0, to_int, 0), r.value(tid, 0, to_int, 0), r.value(tid, 1, to_int, -1)
                    )
                )
        return SignalObj(*base, sub_obj_mask=mask, units=tuple(units))
    if b.key == "speedpost":
        items = tuple(
            (r.value(t, 0, to_int, 0), r.value(t, 1, to_int, -1))
            for t in list(b.blocks("TrItemId"))[:MAX_UNITS]
        )
        tex = b.find("Speed_Digit_Tex")
        shape = b.find("Speed_Sign_Shape")
        size = b.find("Speed_Text_Size")
        return SpeedpostObj(
            *base,
            items=items,
            digit_texture=r.string(tex, 0) if tex else "",
            sign_shape=tuple(r.value(shape, i, to_float, 0.0) for i in range(len(shape.values)))
            if shape
            else (),
            text_size=tuple(r.value(size, i, to_float, 0.0) for i in range(len(size.values))) if size else (),
        )
    return WorldObject(*base)


def world_from_document(doc: Document, diags: Diagnostics) -> WorldFile:
    r = Reader(diags)
    name = Path(doc.path).name
    tile = world_tile(name) or (0, 0)
    root = doc.find("Tr_Worldfile")
    objs: list[WorldObject] = []
    if root is None:
        r.problem(doc, "world file: missing block 'Tr_Worldfile'")
    else:
        for b in root.blocks():
            o = _object(r, b)
            if o is not None:
                objs.append(o)
    return WorldFile(doc.path, tile[0], tile[1], tuple(objs), tuple(diags.findings))


def read_world(
    path: str | Path, *, strict: bool = False, diagnostics: Diagnostics | None = None
) -> WorldFile:
    """Read one world file (lenient by default: a bad value is a warning, as in Open Rails)."""
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=strict)
    return world_from_document(parse_file(path, diagnostics=diags), diags)


def world_files(route_folder: str | Path) -> list[Path]:
    """The world files Open Rails would read: ``WORLD/*.w`` with 17-character names."""
    folder = Path(route_folder)
    world = (
        next((p for p in folder.iterdir() if p.is_dir() and p.name.lower() == "world"), None)
        if folder.is_dir()
        else None
    )
    if world is None:
        return []
    return sorted(p for p in world.iterdir() if p.is_file() and world_tile(p.name) is not None)


__all__ = [
    "SignalObj",
    "SignalUnit",
    "SpeedpostObj",
    "WorldFile",
    "WorldObject",
    "read_world",
    "world_files",
    "world_from_document",
    "world_tile",
]
