"""World files (``WORLD/w±XXXXXX±ZZZZZZ.w``): every placed object with its UiD, shape file,
position and orientation; ``Signal`` and ``Speedpost`` objects typed (docs/signals.md §3.1).

Only names of exactly 17 characters are world files, as Open Rails reads them. The tile
comes from the name. Objects are kept generically (kind, UiD, file, position,
orientation); the signal-relevant ones get their units and track-item references.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import Diagnostics, Finding
from ..stf import parse_file
from ..stf.tree import Block, Document
from ._read import Reader, check_size, to_float, to_hex, to_int
from .sigcfg import SignalConfig, find_sigcfg, read_sigcfg

#: A world file larger than this is refused before parsing (DK24's largest is 0.37 MB; big
#: routes have a few MB): docs/security.md §2.
MAX_WORLD_BYTES = 64 << 20

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


def world_from_document(
    doc: Document, diags: Diagnostics, *, kinds: frozenset[str] | None = None
) -> WorldFile:
    r = Reader(diags)
    name = Path(doc.path).name
    tile = world_tile(name) or (0, 0)
    root = doc.find("Tr_Worldfile")
    objs: list[WorldObject] = []
    if root is None:
        r.problem(doc, "world file: missing block 'Tr_Worldfile'")
    else:
        for b in root.blocks():
            # Blocks are split lazily: skipping the kinds not asked for never splits them.
            if kinds is not None and b.key not in kinds:
                continue
            o = _object(r, b)
            if o is not None:
                objs.append(o)
    return WorldFile(doc.path, tile[0], tile[1], tuple(objs), tuple(diags.findings))


#: The object kinds the signals use (block keys, lower-cased).
SIGNAL_KINDS = frozenset({"signal", "speedpost"})


def read_world(
    path: str | Path,
    *,
    strict: bool = False,
    diagnostics: Diagnostics | None = None,
    kinds: frozenset[str] | None = None,
) -> WorldFile:
    """Read one world file (lenient by default: a bad value is a warning, as in Open Rails).
    With ``kinds`` (lower-cased block names, e.g. :data:`SIGNAL_KINDS`), only those objects."""
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=strict)
    check_size(path, MAX_WORLD_BYTES, "world file")
    return world_from_document(parse_file(path, diagnostics=diags), diags, kinds=kinds)


def _world_folder(folder: Path) -> Path | None:
    if not folder.is_dir():
        return None
    return next((p for p in folder.iterdir() if p.is_dir() and p.name.lower() == "world"), None)


def world_files(route_folder: str | Path) -> list[Path]:
    """The world files Open Rails would read: ``WORLD/*.w`` with 17-character names."""
    world = _world_folder(Path(route_folder))
    if world is None:
        return []
    return sorted(p for p in world.iterdir() if p.is_file() and world_tile(p.name) is not None)


# -- what the signals read, cached (docs/signals.md §3) -------------------------------------

#: Entries of the signals' inputs holding more objects than this are not cached.
MAX_CACHED_OBJECTS = 200_000
#: Routes whose signal inputs are kept in memory (most recently used).
MEMO_ROUTES = 4


@dataclass(frozen=True, slots=True)
class SignalWorld:
    """What the signals read from a route folder: its sigcfg (None: it has none) and
    each world file with only its Signal and Speedpost objects (docs/signals.md §3)."""

    folder: str
    config: SignalConfig | None
    world: tuple[WorldFile, ...]
    #: Every file and folder read; the cached copy is used while all are unchanged.
    sources: tuple[str, ...] = ()


class _CacheKey:
    """What :class:`~tdbtools.formats.cache.RecordCache` names and stamps an entry by."""

    __slots__ = ("folder", "absent")

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.absent: tuple[Path, ...] = ()


#: (route folder, strict) -> (the inputs, the stamps of their sources when read).
_MEMO: dict[tuple[str, bool], tuple[SignalWorld, list]] = {}
_MEMO_LOCK = threading.Lock()


def _sources_now(folder: Path) -> tuple[tuple[Path, str] | None, list[Path], list[str]]:
    """The sigcfg Open Rails would use, the world files, and every path whose change
    changes the result: the folders (a file appearing changes its folder's stamp) and files."""
    found = find_sigcfg(folder)
    files = world_files(folder)
    srcs = [str(folder)]
    if folder.is_dir():
        srcs += [str(p) for p in folder.iterdir() if p.is_dir() and p.name.lower() == "openrails"][:1]
    if found is not None:
        srcs.append(str(found[0]))
    world = _world_folder(folder)
    if world is not None:
        srcs.append(str(world))
    srcs += [str(p) for p in files]
    return found, files, srcs


def _matches(hit: Any, folder: Path, sources: list[str], found: tuple[Path, str] | None) -> bool:
    """True if a cache entry is a well-formed :class:`SignalWorld` of exactly these sources
    (docs/security.md §1: an entry is checked, never trusted)."""
    from .cache import conforms

    if hit.__class__ is not SignalWorld or hit.folder != str(folder) or list(hit.sources) != sources:
        return False
    if hit.config is None:
        if found is not None:
            return False
    elif found is None or hit.config.path != str(found[0]) or hit.config.mode != found[1]:
        return False
    return conforms(hit)


def load_signal_world(route_folder: str | Path, *, strict: bool = False, cache: bool = True) -> SignalWorld:
    """The sigcfg and the Signal/Speedpost world objects of a route folder. With ``cache``
    they are kept in memory and in the route cache (docs/security.md §1) and reused while
    no world file, sigcfg or folder of them has changed: reading them takes seconds on a
    big route."""
    folder = Path(route_folder)
    found, files, sources = _sources_now(folder)
    if not cache:
        return _read_signal_world(folder, found, files, sources, strict)
    from .cache import RecordCache, _stamp

    key = (str(folder), strict)
    stamps = [_stamp(p) for p in sources]
    with _MEMO_LOCK:
        memo = _MEMO.get(key)
    if memo is not None and memo[1] == stamps and list(memo[0].sources) == sources:
        return memo[0]
    store = RecordCache("signals")
    hit = store.get(_CacheKey(folder), strict)
    if hit is not None and _matches(hit, folder, sources, found):
        _remember(key, hit, stamps)
        return hit
    out = _read_signal_world(folder, found, files, sources, strict)
    # Kept only if nothing changed while it was read (the entry is stamped after).
    if [_stamp(p) for p in sources] == stamps:
        if sum(len(w.objects) + len(w.warnings) for w in out.world) <= MAX_CACHED_OBJECTS:
            store.put(_CacheKey(folder), strict, out)
        _remember(key, out, stamps)
    return out


def _read_signal_world(
    folder: Path, found: tuple[Path, str] | None, files: list[Path], sources: list[str], strict: bool
) -> SignalWorld:
    config = read_sigcfg(found[0], mode=found[1], strict=strict) if found is not None else None
    world = tuple(read_world(p, kinds=SIGNAL_KINDS) for p in files)
    return SignalWorld(str(folder), config, world, tuple(sources))


def _remember(key: tuple[str, bool], value: SignalWorld, stamps: list) -> None:
    with _MEMO_LOCK:
        _MEMO.pop(key, None)
        _MEMO[key] = (value, stamps)
        while len(_MEMO) > MEMO_ROUTES:
            del _MEMO[next(iter(_MEMO))]


__all__ = [
    "MAX_CACHED_OBJECTS",
    "SIGNAL_KINDS",
    "SignalObj",
    "SignalUnit",
    "SignalWorld",
    "SpeedpostObj",
    "WorldFile",
    "WorldObject",
    "load_signal_world",
    "read_world",
    "world_files",
    "world_from_document",
    "world_tile",
]
