"""On-disk cache of loaded routes, in a format that cannot run code.

An entry lives under the user's cache folder (``$TDBTOOLS_CACHE_DIR``, else the
platform's own from platformdirs: ``$XDG_CACHE_HOME/tdbtools`` or ``~/.cache/tdbtools``
on Linux, ``~/Library/Caches/tdbtools`` on macOS, ``%LOCALAPPDATA%/tdbtools/Cache`` on
Windows), keyed by the route folder
and the reading mode. It holds JSON for the records (frozen dataclasses of the
modules in :data:`_RECORD_MODULES` only, named by class) and the raw bytes of the
numpy columns (plain numeric dtypes, read with ``np.frombuffer`` from the memory-mapped
entry; big record tables are made on first use, after numpy checks of every column at
load): nothing in it is ever unpickled or evaluated, so whoever wrote it, loading it can
at worst give a wrong route -- which the ownership rules below prevent (docs/security.md §1).

An entry is used only if: the folder is not writable by other users (or is sticky),
the entry is a regular file owned by the user and writable by no one else, every
source file has the size, mtime, ctime and inode it had when the entry was written,
no candidate file that was absent has appeared, the tdbtools version and the format
are the same, and the CRC matches. Anything else is ignored (and rebuilt when the
folder is safe); the cache never raises.

:class:`RecordCache` keeps other records made from a route folder (the signals' sigcfg
and world objects) the same way; :func:`conforms` checks a decoded record's field types.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import mmap
import operator
import os
import stat
import tempfile
import types
import typing
import zlib
from collections.abc import Callable, Iterator, Sequence
from itertools import chain as _chain
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from .._fs import clean_stale_temps
from ..stf.parser import gc_paused

#: Bump when the stored model changes shape.
CACHE_FORMAT = 3
#: A route entry's class tables of at least this many rows (and its tuples of records
#: from them) are made on first use, not while loading (see _LazyRows).
LAZY_ROWS = 2048
_MAGIC = b"TDBTOOLS-ROUTE-CACHE-JSON\n"
_SUFFIX = ".route"
#: A temporary entry older than this was left by a killed run (writing one takes well
#: under a second) and is removed when the cache is next written.
STALE_TEMP_SECONDS = 60.0
#: Numeric dtypes that may be stored as raw bytes (object arrays are stored as JSON).
_DTYPES = frozenset({"<i8", "<i4", "<i2", "|i1", "<u8", "<u4", "<u2", "|u1", "<f8", "<f4", "|b1"})
_RECORD_MODULES = (
    "tdbtools.errors",
    "tdbtools.formats.trk",
    "tdbtools.formats.tdb",
    "tdbtools.formats.tsection",
    "tdbtools.formats.route",
    # the signals' inputs (RecordCache "signals")
    "tdbtools.formats.sigcfg",
    "tdbtools.formats.world",
)


def cache_dir() -> Path:
    """``$TDBTOOLS_CACHE_DIR``, else the user cache folder the OS expects (platformdirs;
    on Linux it honours ``$XDG_CACHE_HOME``)."""
    env = os.environ.get("TDBTOOLS_CACHE_DIR")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("tdbtools", appauthor=False))


#: Files up to this size are hashed whole in their stamp; larger ones by their first and
#: last :data:`STAMP_EDGE_BYTES` (with the size and mtime, which any edit changes).
STAMP_HASH_BYTES = 4 << 20
STAMP_EDGE_BYTES = 64 << 10


def _stamp(path: str | Path) -> list | None:
    """What says a source file is unchanged: its size, its mtime (ns) and a CRC-32 of its
    content (whole up to :data:`STAMP_HASH_BYTES`, else its two ends). Not the inode nor
    the ctime: a hard-linked copy of an install (``cp -al``, ``rsync --link-dest``) or a
    ``chmod`` keeps the content, and must keep the cache warm (docs/security.md §1)."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):  # a folder: its entries (a new file) change its mtime
            return [st.st_size, st.st_mtime_ns]
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if st.st_size <= STAMP_HASH_BYTES:
                crc = zlib.crc32(fh.read(STAMP_HASH_BYTES + 1))
            else:
                crc = zlib.crc32(fh.read(STAMP_EDGE_BYTES))
                fh.seek(-STAMP_EDGE_BYTES, os.SEEK_END)
                crc = zlib.crc32(fh.read(STAMP_EDGE_BYTES), crc)
    except (OSError, ValueError):
        return None
    return [st.st_size, st.st_mtime_ns, crc]


# -- the record registry ----------------------------------------------------------------

_CLASSES: dict[str, type] = {}
_TAGS: dict[type, str] = {}
_FIELDS: dict[type, tuple[str, ...]] = {}


def _registry() -> None:
    if _CLASSES:
        return
    import importlib

    for name in _RECORD_MODULES:
        mod = importlib.import_module(name)
        for obj in vars(mod).values():
            if not isinstance(obj, type) or obj.__module__ != mod.__name__:
                continue
            if dataclasses.is_dataclass(obj) or issubclass(obj, enum.Enum):
                # Class names start with a capital: they never clash with the one-letter
                # lower-case markers of the encoding.
                tag = obj.__name__ if obj.__name__ not in _CLASSES else f"{name}.{obj.__name__}"
                _CLASSES[tag] = obj
                _TAGS[obj] = tag
                if dataclasses.is_dataclass(obj):
                    _FIELDS[obj] = tuple(f.name for f in dataclasses.fields(obj) if f.init)


# -- encoding ---------------------------------------------------------------------------
#
# Records are stored by class, column by column (docs/security.md §1): a column of
# ints or floats is a numpy array, a column of references to records of one class is
# an array of row numbers, tuples of ints/references/strings are a flat array plus
# offsets, strings are one separator-joined string; any other column is generic JSON.
# Decoding builds each class's rows with one ``map(cls, *columns)``, classes in an
# order where every record's parts are built before it. Generic JSON values use
# one-key objects as markers: ``t`` tuple, ``s`` joined strings, ``d`` dict (pairs),
# ``D`` dict of int -> tuple of ints, ``a`` array, ``o`` object array, ``g`` numpy
# scalar, ``e`` enum member, ``r`` record, ``M`` sequence of records (or None).

_INT64 = (-(1 << 63), (1 << 63) - 1)
_SEPARATORS = ("|", "\t", "^", "~", "`", "\u00a6", "\u2063")


def _separator(strings: list[str]) -> str | None:
    for sep in _SEPARATORS:
        if not any(sep in x for x in strings):
            return sep
    return None


def _all_ints(values) -> bool:
    lo, hi = _INT64
    return all(v.__class__ is int and lo <= v <= hi for v in values)


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """The values of the fields ``names`` of a record, as a tuple."""
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda o: (one(o),)
    if not names:
        return lambda o: ()
    return operator.attrgetter(*names)


#: Values whose parts :meth:`_Encoder.scan` looks into (besides records).
_CONTAINERS = frozenset({tuple, list, dict})


class _Encoder:
    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self.index: dict[int, tuple[type, int]] = {}
        self.rows: dict[type, list[tuple]] = {}
        self.deps: dict[type, set[type]] = {}
        self.keep: list[Any] = []  # keeps ids stable while encoding
        self.getters: dict[type, Callable[[Any], tuple]] = {}

    # -- registering records
    def record(self, o: Any) -> tuple[type, int]:
        hit = self.index.get(id(o))
        if hit is not None:
            return hit
        cls = o.__class__
        get = self.getters.get(cls)
        if get is None:
            get = self.getters[cls] = _getter(_FIELDS[cls])
        vals = get(o)
        deps = self.deps.setdefault(cls, set())
        for v in vals:
            t = v.__class__
            # (only records and containers can hold records: the rest is skipped here,
            # not in a call per value; a million records at 92× DK24)
            if t in _FIELDS:
                if id(v) not in self.index:
                    self.record(v)
                deps.add(t)
            elif t in _CONTAINERS or t is _LazyTuple:
                self.scan(v, deps)
        rows = self.rows.setdefault(cls, [])
        hit = (cls, len(rows))
        rows.append(vals)
        self.index[id(o)] = hit
        self.keep.append(o)
        return hit

    def scan(self, v: Any, deps: set[type]) -> None:
        t = v.__class__
        if t is _LazyTuple:
            v, t = v.materialize(), tuple
        if t in _FIELDS:
            self.record(v)
            deps.add(t)
        elif t is tuple or t is list:
            index = self.index
            for x in v:
                tx = x.__class__
                if tx in _FIELDS:
                    if id(x) not in index:
                        self.record(x)
                    deps.add(tx)
                elif tx in _CONTAINERS or tx is _LazyTuple:
                    self.scan(x, deps)
        elif t is dict:
            for k, x in v.items():
                self.scan(k, deps)
                self.scan(x, deps)

    def order(self) -> list[type]:
        done: list[type] = []
        state: dict[type, int] = {}

        def visit(c: type) -> None:
            if state.get(c) == 2:
                return
            if state.get(c) == 1:
                raise TypeError(f"records of {c.__name__} contain themselves")
            state[c] = 1
            for d in sorted(self.deps.get(c, ()), key=lambda k: k.__name__):
                visit(d)
            state[c] = 2
            done.append(c)

        for c in self.rows:
            visit(c)
        return done

    # -- arrays and columns
    def array(self, a: np.ndarray) -> dict:
        if a.dtype.hasobject:
            items = a.ravel().tolist()
            sep = _separator(items) if items and all(x.__class__ is str for x in items) else None
            if sep is not None:
                uniq = sorted(set(items)) if len(items) > 256 else None
                if uniq is not None and len(uniq) <= len(items) // 16:
                    # A column of a few distinct strings (a .tdb's flag3: "00" on a million
                    # rows): the strings once and a code per row, decoded by one take.
                    pos = {x: i for i, x in enumerate(uniq)}
                    codes = self._add(np.array([pos[x] for x in items], dtype=np.int32))
                    return {"k": [list(a.shape), bool(a.flags.writeable), sep, sep.join(uniq), codes]}
                return {"o": [list(a.shape), bool(a.flags.writeable), sep, sep.join(items)]}
            if not all(x is None or x.__class__ in (str, int, float, bool) for x in items):
                raise TypeError("object array with non-plain values")
            return {"o": [list(a.shape), bool(a.flags.writeable), items]}
        if a.dtype.str not in _DTYPES:
            raise TypeError(f"cannot cache an array of dtype {a.dtype.str}")
        self.arrays.append(a)
        return {"a": len(self.arrays) - 1}

    def _add(self, a: np.ndarray) -> int:
        self.arrays.append(a)
        return len(self.arrays) - 1

    def _flat(self, tuples: list[tuple]) -> tuple[list, int]:
        flat = [x for t in tuples for x in t]
        off = np.zeros(len(tuples) + 1, dtype=np.int64)
        np.cumsum([len(t) for t in tuples], out=off[1:])
        return flat, self._add(off)

    def column(self, values: list) -> list:
        values = [v.materialize() if v.__class__ is _LazyTuple else v for v in values]
        if _all_ints(values):
            return ["i", self._add(np.array(values, dtype=np.int64))]
        if all(v.__class__ is float for v in values):
            return ["f", self._add(np.array(values, dtype=np.float64))]
        classes = {v.__class__ for v in values if v is not None}
        if len(classes) == 1 and next(iter(classes)) in _FIELDS:
            idx = [-1 if v is None else self.index[id(v)][1] for v in values]
            return ["r", _TAGS[next(iter(classes))], self._add(np.array(idx, dtype=np.int64))]
        if all(v.__class__ is str for v in values):
            sep = _separator(values)
            if sep is not None:
                return ["S", sep, sep.join(values)]
        if all(v.__class__ is tuple for v in values):
            flat, off = self._flat(values)
            if _all_ints(flat):
                return ["I", self._add(np.array(flat, dtype=np.int64)), off]
            inner = {x.__class__ for x in flat}
            if len(inner) == 1 and next(iter(inner)) in _FIELDS:
                idx = [self.index[id(x)][1] for x in flat]
                return ["R", _TAGS[next(iter(inner))], self._add(np.array(idx, dtype=np.int64)), off]
            if inner == {str}:
                sep = _separator(flat)
                if sep is not None:
                    return ["T", sep, sep.join(flat), off]
            self.arrays.pop()  # the unused offsets
        return ["j", [self.value(v) for v in values]]

    # -- generic values
    def value(self, o: Any) -> Any:
        t = o.__class__
        if t is _LazyTuple:
            o, t = o.materialize(), tuple
        if t is int or t is float or t is str or t is bool or o is None:
            return o
        if t in _FIELDS:
            c, i = self.index[id(o)]
            return {"r": [_TAGS[c], i]}
        if t is tuple or t is list:
            if o and all(x is None or x.__class__ in _FIELDS for x in o) and any(x is not None for x in o):
                tags: list[str] = []
                codes, idx = [], []
                for x in o:
                    if x is None:
                        codes.append(-1)
                        idx.append(-1)
                        continue
                    c, i = self.index[id(x)]
                    tag = _TAGS[c]
                    if tag not in tags:
                        tags.append(tag)
                    codes.append(tags.index(tag))
                    idx.append(i)
                return {"M": [t is tuple, tags, codes, idx]}
            if t is list:
                return [self.value(x) for x in o]
            if len(o) > 8 and all(x.__class__ is str for x in o):
                sep = _separator(list(o))
                if sep is not None:
                    return {"s": [sep, sep.join(o)]}
            return {"t": [self.value(x) for x in o]}
        if t is dict:
            if o and all(k.__class__ is int for k in o) and all(v.__class__ is tuple for v in o.values()):
                flat, off = self._flat(list(o.values()))
                if _all_ints(flat) and _all_ints(o):
                    return {
                        "D": [
                            self._add(np.array(list(o), dtype=np.int64)),
                            self._add(np.array(flat, dtype=np.int64)),
                            off,
                        ]
                    }
                self.arrays.pop()
            return {"d": [[self.value(k), self.value(v)] for k, v in o.items()]}
        if t is np.ndarray:
            return self.array(o)
        if isinstance(o, np.generic) and o.dtype.str in _DTYPES:
            return {"g": [o.dtype.str, o.item()]}
        if t in _TAGS and isinstance(o, enum.Enum):
            return {"e": [_TAGS[t], self.value(o.value)]}
        raise TypeError(f"cannot cache a {t.__module__}.{t.__qualname__}")


def _encode(route: Any) -> tuple[bytes, list[list], list[np.ndarray]]:
    """The records' JSON, the array table and the arrays (C-contiguous) in blob order:
    :func:`_blob_parts` lays them out, so that a big entry is written without a copy of
    its blob in memory (+540 MB at 92× DK24)."""
    _registry()
    enc = _Encoder()
    if route.__class__ not in _FIELDS:
        raise TypeError("not a record")
    enc.record(route)
    classes = []
    for cls in enc.order():
        rows = enc.rows[cls]
        cols = [enc.column(list(c)) for c in zip(*rows)] if _FIELDS[cls] else []
        classes.append([_TAGS[cls], len(rows), cols])
    doc = {"classes": classes, "root": enc.value(route)}
    records = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    table: list[list] = []
    arrays: list[np.ndarray] = []
    pos = 0
    for a in enc.arrays:
        pos += -pos % 8  # aligned, so that frombuffer is fast
        c = np.ascontiguousarray(a)
        table.append([a.dtype.str, list(a.shape), pos, c.nbytes, bool(a.flags.writeable)])
        arrays.append(c)
        pos += c.nbytes
    return records, table, arrays


def _blob_parts(table: list[list], arrays: list[np.ndarray]) -> Iterator[Any]:
    """The blob of :func:`_encode`'s arrays, chunk by chunk (zero padding, array bytes)."""
    pos = 0
    for row, a in zip(table, arrays):
        offset, nbytes = row[2], row[3]
        if offset > pos:
            yield b"\0" * (offset - pos)
        if nbytes:
            yield a.reshape(-1).view(np.uint8)
        pos = offset + nbytes


# -- decoding ---------------------------------------------------------------------------


class _LazyTuple(Sequence):
    """A tuple of records from lazily made class tables: it behaves as the tuple (index,
    slice, iterate, compare, hash, pickle as a plain tuple) and makes it on first use.
    Its length is known without making anything."""

    __slots__ = ("_make", "_n", "_t", "kinds", "none")

    def __init__(
        self, make: Callable[[], tuple], n: int, kinds: tuple[type, ...] = (), none: bool = True
    ) -> None:
        self._make: Callable[[], tuple] | None = make
        self._n = n
        self._t: tuple | None = None
        #: The classes of its records and whether it may hold None (for the type checks).
        self.kinds = kinds
        self.none = none

    def materialize(self) -> tuple:
        t = self._t
        if t is None:
            make = self._make
            assert make is not None
            with gc_paused():
                t = self._t = make()
            self._make = None
        return t

    def __getitem__(self, i):  # noqa: ANN001, ANN204
        t = self._t
        if t is None:
            t = self.materialize()
        return t[i]

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator:
        return iter(self.materialize())

    def __contains__(self, x: object) -> bool:
        return x in self.materialize()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is _LazyTuple:
            other = other.materialize()
        if other.__class__ is not tuple:
            return NotImplemented
        return self.materialize() == other

    def __hash__(self) -> int:
        return hash(self.materialize())

    def __add__(self, other: tuple) -> tuple:
        return self.materialize() + tuple(other)

    def __radd__(self, other: tuple) -> tuple:
        return tuple(other) + self.materialize()

    def __reduce__(self) -> tuple:
        return (tuple, (self.materialize(),))

    def __repr__(self) -> str:
        return repr(self.materialize())


class _LazyRows:
    """The records of one class table, made from columns checked while loading: one
    by one as they are asked for, or all at once (:meth:`rows`) for whoever wants most
    of them. A record is made once: the full table reuses those made before."""

    __slots__ = ("dec", "cls", "n", "cols", "made", "some", "splits")

    def __init__(self, dec: _Decoder, cls: type, n: int, cols: list) -> None:
        self.dec: _Decoder | None = dec
        self.cls = cls
        self.n = n
        self.cols = cols
        self.made: list | None = None
        self.some: dict[int, Any] = {}
        self.splits: dict[int, list[str]] = {}

    def rows(self) -> list:
        made = self.made
        if made is None:
            dec = self.dec
            assert dec is not None
            with gc_paused():
                columns = [dec.column(c, self.n) for c in self.cols]
                made = list(map(self.cls, *columns))
                for i, rec in self.some.items():
                    made[i] = rec
            self.made = made
            self.dec = None
            self.some = {}
            self.splits = {}
        return made

    def __getitem__(self, i: int) -> Any:
        made = self.made
        if made is not None:
            return made[i]
        rec = self.some.get(i)
        if rec is None:
            rec = self.some[i] = self.cls(*[self._value(k, c, i) for k, c in enumerate(self.cols)])
        return rec

    def __len__(self) -> int:
        return self.n

    def _strings(self, k: int, spec: list, count: int) -> list[str]:
        got = self.splits.get(k)
        if got is None:
            got = self.splits[k] = spec[2].split(spec[1]) if count else []
        return got

    def _value(self, k: int, spec: list, i: int) -> Any:
        """Row ``i`` of column ``spec`` (checked by _Decoder.check), as column() gives it."""
        dec = self.dec
        assert dec is not None
        arrays = dec.arrays
        kind = spec[0]
        if kind == "i" or kind == "f":
            return arrays[spec[1]][i].item()
        if kind == "r":
            j = int(arrays[spec[2]][i])
            return None if j < 0 else dec.tables[spec[1]][j]
        if kind == "S":
            return self._strings(k, spec, self.n)[i]
        if kind == "j":
            return spec[1][i]
        off = arrays[spec[-1]]
        a, b = int(off[i]), int(off[i + 1])
        if kind == "T":
            return tuple(self._strings(k, spec, int(off[-1]))[a:b])
        flat = arrays[spec[-2]][a:b].tolist()
        if kind == "R":
            tbl = dec.tables[spec[1]]
            return tuple([tbl[j] for j in flat])
        return tuple(flat)


def _check_joined(spec: list, count: int) -> None:
    """Refuse a joined-strings column (``[kind, sep, joined, ...]``) that does not split
    into ``count`` strings, without splitting it."""
    sep, joined = spec[1], spec[2]
    if sep not in _SEPARATORS or joined.__class__ is not str:
        raise ValueError("bad joined strings")
    if (joined.count(sep) + 1 if count else 0) != count or (count == 0 and joined):
        raise ValueError("bad joined strings")


#: Column kinds that check() can vouch for ("j" only when it holds plain values).
_CHECKED = frozenset("ifrSIRTj")


def _checkable(spec: Any) -> bool:
    if spec.__class__ is not list or not spec or spec[0] not in _CHECKED:
        return False
    if spec[0] == "j":  # plain values only: revive() gives them back as they are
        vals = spec[1] if len(spec) > 1 else None
        return vals.__class__ is list and all(v is None or v.__class__ in _PLAIN for v in vals)
    return True


def _rows(tbl: Any, wanted: int | None = None) -> Any:
    """The records of a table: a lazy table made whole if ``wanted`` (how many of them
    the caller will look up) is None or a good part of it, else left to make them one
    by one."""
    if tbl.__class__ is _LazyRows and (wanted is None or wanted * 4 >= tbl.n):
        return tbl.rows()
    return tbl


class _Decoder:
    def __init__(self, arrays: list[np.ndarray], lazy: bool = False) -> None:
        self.arrays = arrays
        self.tables: dict[str, Any] = {}
        #: Make big class tables (and tuples of their records) on first use.
        self.lazy = lazy

    def ints(self, i: int, n: int | None = None, dtype: str = "<i8") -> list:
        a = self.arrays[i]
        if a.ndim != 1 or a.dtype.str != dtype or (n is not None and len(a) != n):
            raise ValueError("bad column")
        return a.tolist()

    def offsets(self, i: int, n: int, total: int) -> list[int]:
        a = self.arrays[i]
        if (
            a.ndim != 1
            or a.dtype.str != "<i8"
            or len(a) != n + 1
            or a[0] != 0
            or a[-1] != total
            or (np.diff(a) < 0).any()
        ):
            raise ValueError("bad offsets")
        return a.tolist()

    def split(self, sep: str, joined: str, count: int | None) -> list[str]:
        if sep not in _SEPARATORS:
            raise ValueError("bad separator")
        parts = joined.split(sep) if count != 0 else []
        if count is not None and len(parts) != count:
            raise ValueError("bad joined strings")
        return parts

    def column(self, spec: list, n: int) -> list:
        kind = spec[0]
        if kind == "i":
            return self.ints(spec[1], n)
        if kind == "f":
            return self.ints(spec[1], n, "<f8")
        if kind == "r":
            tbl = _rows(self.tables[spec[1]], n)
            return [None if i < 0 else tbl[i] for i in self.ints(spec[2], n)]
        if kind == "S":
            return self.split(spec[1], spec[2], n)
        if kind in ("I", "R", "T"):
            if kind == "T":
                off_i = spec[3]
                total = self.arrays[off_i][-1] if len(self.arrays[off_i]) else 0
                flat: list = self.split(spec[1], spec[2], int(total))
            else:
                flat = self.ints(spec[-2])
            off = self.offsets(spec[-1], n, len(flat))
            if kind == "R":
                tbl = _rows(self.tables[spec[1]], len(flat))
                flat = [tbl[i] for i in flat]
            return [tuple(flat[a:b]) for a, b in zip(off, off[1:])]
        if kind == "j":
            vals = spec[1]
            if len(vals) != n:
                raise ValueError("bad column length")
            return [self.revive(v) for v in vals]
        raise ValueError("unknown column kind")

    def build(self, doc: dict) -> Any:
        # Every column is checked against its field's annotated type as its table is
        # read, so a record of a checked table holds values of its fields' types (an entry
        # with a correct CRC but, say, strings for a pin's link is refused here, not
        # reported later by the code using the route: docs/security.md §1).
        trusted = _Trusted()
        for tag, n, cols in doc["classes"]:
            cls = _CLASSES[tag]
            if cls not in _FIELDS or len(cols) != len(_FIELDS[cls]) or tag in self.tables:
                raise ValueError("bad class table")
            types = _field_types(cls)
            if self.lazy and n >= LAZY_ROWS and cols and all(_checkable(c) for c in cols):
                for c, tp in zip(cols, types):
                    self.check(c, n)  # everything column() would refuse, refused now
                    self.fits(c, tp, trusted, None)
                self.tables[tag] = _LazyRows(self, cls, n, cols)
            else:
                columns = [self.column(c, n) for c in cols]
                for c, tp, values in zip(cols, types, columns):
                    self.fits(c, tp, trusted, values)
                self.tables[tag] = list(map(cls, *columns)) if columns else [cls() for _ in range(n)]
            trusted.classes.add(cls)
        return self.revive(doc["root"])

    def fits(self, spec: list, tp: Any, trusted: _Trusted, values: list | None) -> None:
        """Refuse (ValueError) a column whose values are not all of type ``tp``: its kind
        tells for the numeric, string and reference columns (checked whole: lengths of its
        tuples, whether a reference is None); generic values one by one (``values``: as
        column() made them; None: the plain values of the spec)."""
        kind = spec[0]
        ok = _check(tp)
        if kind == "i":
            good = ok(0, trusted)
        elif kind == "f":
            good = ok(0.0, trusted)
        elif kind == "S":
            good = ok("", trusted)
        elif kind == "r":
            refs = self.arrays[spec[2]]
            good = _takes(tp, _CLASSES[spec[1]]) and (
                not (len(refs) and refs.min() < 0) or _takes(tp, type(None))
            )
        elif kind in ("I", "T"):
            off = self.arrays[spec[-1]]
            lengths = np.unique(np.diff(off)).tolist() if len(off) > 1 else []
            one = 0 if kind == "I" else ""
            good = all(ok((one,) * int(k), trusted) for k in lengths)
        elif kind == "R":
            cls = _CLASSES[spec[1]]
            good = any(_takes(x, cls) for x in _items_of(tp))
        else:
            vals = spec[1] if values is None else values
            good = all(ok(v, trusted) for v in vals)
        if not good:
            raise ValueError("a column of the wrong type")

    def _array(self, i: Any, n: int | None = None, dtype: str = "<i8") -> np.ndarray:
        if i.__class__ is not int:
            raise ValueError("bad array reference")
        a = self.arrays[i]
        if a.ndim != 1 or a.dtype.str != dtype or (n is not None and len(a) != n):
            raise ValueError("bad column")
        return a

    def _refs(self, a: np.ndarray, tag: Any, none_ok: bool) -> None:
        if tag.__class__ is not str:
            raise ValueError("bad reference")
        if len(a) and not (-1 if none_ok else 0) <= a.min() <= a.max() < len(self.tables[tag]):
            raise ValueError("reference out of range")

    def check(self, spec: list, n: int) -> None:
        """Refuse (ValueError) a column spec that column() would refuse or that would
        make it index outside a table, without building anything."""
        kind = spec[0]
        if kind in ("i", "f"):
            self._array(spec[1], n, "<i8" if kind == "i" else "<f8")
        elif kind == "r":
            self._refs(self._array(spec[2], n), spec[1], True)
        elif kind == "S":
            _check_joined(spec, n)
        elif kind in ("I", "R", "T"):
            off = self._array(spec[-1], n + 1)
            total = int(off[-1])
            if off[0] != 0 or (np.diff(off) < 0).any():
                raise ValueError("bad offsets")
            if kind == "T":
                _check_joined(spec, total)
            else:
                flat = self._array(spec[-2], total)
                if kind == "R":
                    self._refs(flat, spec[1], False)
        elif kind == "j":
            vals = spec[1]
            if vals.__class__ is not list or len(vals) != n:
                raise ValueError("bad column length")
            if not all(v is None or v.__class__ in _PLAIN for v in vals):
                raise ValueError("not a plain column")
        else:
            raise ValueError("unknown column kind")

    def _lazy_tuple(self, tags: list, codes: Any, idx: Any) -> _LazyTuple | None:
        """A tuple of records (the "M" marker) from lazy tables, checked now and made
        on first use; None if none of its tables is lazy."""
        tbls = [self.tables[g] for g in tags]
        if not any(t.__class__ is _LazyRows for t in tbls):
            return None
        c = np.array(codes)
        i = np.array(idx)
        if c.ndim != 1 or i.shape != c.shape or (len(c) and (c.dtype != np.int64 or i.dtype != np.int64)):
            raise ValueError("bad record sequence")
        if len(c) and not -1 <= c.min() <= c.max() < len(tbls):
            raise ValueError("bad record sequence")
        for k, t in enumerate(tbls):
            sel = i[c == k]
            if len(sel) and not 0 <= sel.min() <= sel.max() < len(t):
                raise ValueError("reference out of range")

        def make() -> tuple:
            rows = [_rows(t) for t in tbls]
            return tuple([None if a < 0 else rows[a][b] for a, b in zip(codes, idx)])

        kinds = tuple(_CLASSES[g] for g in tags)
        return _LazyTuple(make, len(c), kinds, bool(len(c) and c.min() < 0))

    def revive(self, v: Any) -> Any:
        t = v.__class__
        if t is list:
            return [self.revive(x) for x in v]
        if t is not dict:
            return v
        if len(v) != 1:
            raise ValueError("not a cache value")
        ((k, x),) = v.items()
        if k == "t":
            return tuple([self.revive(y) for y in x])
        if k == "r":
            return self.tables[x[0]][x[1]]
        if k == "M":
            is_tuple, tags, codes, idx = x
            if self.lazy and is_tuple is True:
                lazy = self._lazy_tuple(tags, codes, idx)
                if lazy is not None:
                    return lazy
            tbls = [_rows(self.tables[g], len(codes)) for g in tags]
            out = [None if c < 0 else tbls[c][i] for c, i in zip(codes, idx)]
            return tuple(out) if is_tuple else out
        if k == "s":
            return tuple(self.split(x[0], x[1], None))
        if k == "D":
            keys = self.ints(x[0])
            flat = self.ints(x[1])
            off = self.offsets(x[2], len(keys), len(flat))
            return {key: tuple(flat[a:b]) for key, a, b in zip(keys, off, off[1:])}
        if k == "d":
            return {self.revive(a): self.revive(b) for a, b in x}
        if k == "a":
            return self.arrays[x]
        if k == "o":
            items = self.split(x[2], x[3], None) if len(x) == 4 else x[2]
            obj = np.empty(len(items), dtype=object)
            obj[:] = items
            obj = obj.reshape(x[0])
            obj.flags.writeable = bool(x[1])
            return obj
        if k == "k":
            shape, writeable, sep, joined, ci = x
            uniq = self.split(sep, joined, None)
            codes = self.arrays[ci] if ci.__class__ is int else None
            count = 1
            for d in shape:
                if d.__class__ is not int or d < 0:
                    raise ValueError("bad shape")
                count *= d
            if codes is None or codes.ndim != 1 or codes.dtype.str != "<i4" or len(codes) != count:
                raise ValueError("bad codes")
            if count and not 0 <= codes.min() <= codes.max() < len(uniq):
                raise ValueError("bad codes")
            table = np.empty(len(uniq), dtype=object)
            table[:] = uniq
            obj = table[codes].reshape(shape)
            obj.flags.writeable = bool(writeable)
            return obj
        if k == "g":
            dt, y = x
            if dt not in _DTYPES:
                raise ValueError("bad scalar dtype")
            return np.dtype(dt).type(y)
        if k == "e":
            enum_cls = _CLASSES[x[0]]
            if not issubclass(enum_cls, enum.Enum):
                raise ValueError("not an enum")
            return enum_cls(self.revive(x[1]))
        raise ValueError(f"unknown cache marker {k[:20]!r}")


def _arrays(table: Any, blob: memoryview) -> list[np.ndarray]:
    out = []
    for dt, shape, offset, nbytes, writeable in table:
        if dt not in _DTYPES:
            raise ValueError("bad dtype")
        dtype = np.dtype(dt)
        shape = tuple(int(s) for s in shape)
        count = 1
        for s in shape:
            if s < 0:
                raise ValueError("bad shape")
            count *= s
        if count * dtype.itemsize != nbytes or not 0 <= offset <= len(blob) - nbytes:
            raise ValueError("bad array extent")
        a = np.frombuffer(blob, dtype=dtype, count=count, offset=offset).reshape(shape)
        out.append(a.copy() if writeable else a)
    return out


# -- the store --------------------------------------------------------------------------


def _folder_safe(folder: Path) -> bool:
    """False if users other than the owner may plant or swap entries in ``folder``:
    writable by group or others without the sticky bit (docs/security.md §1)."""
    try:
        st = folder.stat()
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        return False
    if hasattr(os, "getuid") and st.st_uid not in (os.getuid(), 0) and not st.st_mode & stat.S_ISVTX:
        return False
    return True


def _read_own_file(path: Path, mapped: bool = False) -> bytes | mmap.mmap | None:
    """The bytes of ``path`` if it is a regular file (not a link) owned by this user
    and writable by no one else; else None. ``mapped``: the file memory-mapped (read
    only) instead of read, so that numpy columns can stay in the page cache."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return None
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return None
        if mapped and st.st_size > 0:
            # The mapping outlives the descriptor. Entries are replaced (os.replace), never
            # rewritten in place, so a mapped entry does not change under the reader.
            return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    except OSError:
        return None
    finally:
        os.close(fd)


class RouteCache:
    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or cache_dir()

    def _entry(self, files, strict: bool) -> Path:
        # One entry per route whatever ``strict`` says: load_route keeps the lenient model
        # with its findings and decides strictness from them (docs/security.md §1).
        key = f"{files.folder}|one|{__version__}|{CACHE_FORMAT}"
        digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
        return self.folder / f"{files.folder.name}-{digest}{_SUFFIX}"

    #: Map the entry and make big record tables on first use (route entries); a
    #: RecordCache entry is small and read whole.
    lazy = True

    def get(self, files, strict: bool):
        if not _folder_safe(self.folder):
            return None
        data = _read_own_file(self._entry(files, strict), mapped=self.lazy)
        if data is None:
            return None
        try:
            # no reference cycles in a route: the collector would only rescan the many
            # objects being made
            with gc_paused():
                return self._decode(data)
        except Exception:  # noqa: BLE001 - any damage means "not cached"
            return None

    def _decode(self, data: bytes | mmap.mmap):
        view = memoryview(data)
        if view[: len(_MAGIC)] != _MAGIC:
            return None
        pos = len(_MAGIC)
        head_len = int.from_bytes(view[pos : pos + 8], "little")
        crc = int.from_bytes(view[pos + 8 : pos + 12], "little")
        head_end = pos + 12 + head_len
        if head_end > len(data):
            return None
        header = json.loads(bytes(view[pos + 12 : head_end]))
        if header["version"] != [__version__, CACHE_FORMAT]:
            return None
        for p, st in header["stamps"]:
            if _stamp(p) != st:
                return None
        if zlib.crc32(view[head_end:]) != crc:
            return None
        rec_len = header["records"]
        blob_start = head_end + rec_len + (-(head_end + rec_len) % 8)
        arrays = _arrays(header["arrays"], view[blob_start:])
        _registry()
        # The caller checks that this is a Route (importing route.py here would be a cycle).
        return _Decoder(arrays, self.lazy).build(json.loads(bytes(view[head_end : head_end + rec_len])))

    def put(self, files, strict: bool, route) -> None:
        try:
            records, table, arrays = _encode(route)
        except (TypeError, ValueError, RecursionError):
            return  # a model the format cannot hold is simply not cached
        stamps = [[p, _stamp(p)] for p in route.sources]
        stamps += [[str(p), None] for p in files.absent]
        stamps += [[str(files.folder), _stamp(files.folder)]]
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not _folder_safe(self.folder):
                return
            clean_stale_temps(self.folder, ".tmp-*" + _SUFFIX, STALE_TEMP_SECONDS)
            header = json.dumps(
                {
                    "version": [__version__, CACHE_FORMAT],
                    "stamps": stamps,
                    "records": len(records),
                    "arrays": table,
                },
                separators=(",", ":"),
            ).encode("utf-8")
            head_end = len(_MAGIC) + 12 + len(header)
            pad = b"\0" * (-(head_end + len(records)) % 8)  # the blob starts 8-aligned
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=_SUFFIX)
            try:
                with os.fdopen(fd, "wb") as fh:
                    # the CRC (of everything after the header) is known at the end
                    fh.write(_MAGIC + len(header).to_bytes(8, "little") + bytes(4))
                    fh.write(header)
                    crc = 0
                    for part in _chain((records, pad), _blob_parts(table, arrays)):
                        crc = zlib.crc32(part, crc)
                        fh.write(part)
                    fh.seek(len(_MAGIC) + 8)
                    fh.write(crc.to_bytes(4, "little"))
                os.replace(tmp, self._entry(files, strict))
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except (OSError, ValueError):
            pass  # a cache that cannot be written only costs time

    def clear(self) -> int:
        n = 0
        if self.folder.is_dir():
            # *.pickle: entries of the old, unsafe format (never read any more).
            for pattern in ("*" + _SUFFIX, "*.pickle", ".tmp-*"):
                for p in self.folder.glob(pattern):
                    try:
                        p.unlink()
                        n += 1
                    except OSError:
                        continue
        return n


# -- other records of a route folder ----------------------------------------------------

#: Entries of a :class:`RecordCache` larger than this are neither read nor kept.
MAX_RECORD_BYTES = 64 << 20


class RecordCache(RouteCache):
    """Entries for records other than a route, derived from a route folder (the signals'
    sigcfg and world objects: ``kind`` "signals"), in the same format under the same
    checks, named apart by ``kind`` and bounded to :data:`MAX_RECORD_BYTES`. The record
    needs a ``sources`` field; the caller checks the class of what :meth:`get` gives
    (and :func:`conforms`)."""

    lazy = False

    def __init__(self, kind: str, folder: Path | None = None) -> None:
        super().__init__(folder)
        self.kind = kind

    def _entry(self, files, strict: bool) -> Path:
        key = f"{files.folder}|{self.kind}|{'strict' if strict else 'lenient'}|{__version__}|{CACHE_FORMAT}"
        digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
        return self.folder / f"{files.folder.name}-{self.kind}-{digest}{_SUFFIX}"

    def _small(self, files, strict: bool) -> bool:
        try:
            return os.lstat(self._entry(files, strict)).st_size <= MAX_RECORD_BYTES
        except OSError:
            return False

    def get(self, files, strict: bool):
        return super().get(files, strict) if self._small(files, strict) else None

    def put(self, files, strict: bool, route) -> None:
        super().put(files, strict, route)
        entry = self._entry(files, strict)
        try:
            if os.lstat(entry).st_size > MAX_RECORD_BYTES:
                entry.unlink()
        except OSError:
            pass


_CHECKS: dict[Any, Any] = {}
_PLAIN = (int, float, str, bool)


def conforms(root: Any) -> bool:
    """True if the record ``root`` and every record in it hold in each field a value of
    the field's annotated type. A decoded entry has only registered classes, but any
    values in their fields: it is checked before use (docs/security.md §1)."""
    _registry()
    try:
        return root.__class__ in _FIELDS and _check(root.__class__)(root, set())
    except (TypeError, NameError, AttributeError, RecursionError):
        return False


def _check(tp: Any) -> Callable[[Any, set[int]], bool]:
    """A function ``(value, seen) -> bool`` telling whether a value is of type ``tp``,
    made once per type (``seen``: ids of the records already checked)."""
    hit = _CHECKS.get(tp)
    if hit is not None:
        return hit
    origin, args = typing.get_origin(tp), typing.get_args(tp)

    def check(v: Any, seen: set[int]) -> bool:
        return False  # a type the cache never holds

    if tp is Any:

        def check(v: Any, seen: set[int]) -> bool:
            return True

    elif tp is float:

        def check(v: Any, seen: set[int]) -> bool:
            return v.__class__ is float or v.__class__ is int

    elif tp is type(None) or tp is None:

        def check(v: Any, seen: set[int]) -> bool:
            return v is None

    elif tp is tuple:  # a bare tuple: of plain values

        def check(v: Any, seen: set[int]) -> bool:
            return v.__class__ is tuple and all(x is None or x.__class__ in _PLAIN for x in v)

    elif origin is typing.Union or origin is types.UnionType:
        parts = [_check(a) for a in args if a is not type(None)]
        optional = len(parts) < len(args)

        def check(v: Any, seen: set[int]) -> bool:
            return (optional and v is None) or any(p(v, seen) for p in parts)

    elif origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        inner = _check(args[0])
        item = args[0]
        plain = _plain_classes(item)

        def check(v: Any, seen: set[int]) -> bool:
            if v.__class__ is _LazyTuple:  # its records' classes, without making it
                return all(_takes(item, c) for c in v.kinds) and (not v.none or _takes(item, type(None)))
            if v.__class__ is not tuple:
                return False
            # (the classes of its items found in C: plain values and records of checked
            # tables need nothing more; a route holds hundreds of thousands of them)
            kinds = set(map(type, v))
            if kinds <= plain or all(
                k in plain or (k in getattr(seen, "classes", ()) and _takes(item, k)) for k in kinds
            ):
                return True
            return all(inner(x, seen) for x in v)

    elif origin is tuple:
        items = [_check(a) for a in args]

        def check(v: Any, seen: set[int]) -> bool:
            return v.__class__ is tuple and len(v) == len(items) and all(p(x, seen) for p, x in zip(items, v))

    elif origin is dict:
        kf, vf = _check(args[0]), _check(args[1])
        keys = _plain_classes(args[0])
        vargs = typing.get_args(args[1])
        # dict[K, tuple[X, ...]] of plain K and X (a route's dynamic-track paths): checked in C
        flat = (
            _plain_classes(vargs[0])
            if typing.get_origin(args[1]) is tuple and len(vargs) == 2 and vargs[1] is Ellipsis
            else set()
        )

        def check(v: Any, seen: set[int]) -> bool:
            if v.__class__ is not dict:
                return False
            if (
                keys
                and flat
                and set(map(type, v)) <= keys
                and set(map(type, v.values())) <= {tuple}
                and set(map(type, _chain.from_iterable(v.values()))) <= flat
            ):
                return True
            return all(kf(k, seen) and vf(x, seen) for k, x in v.items())

    elif origin is None and isinstance(tp, type):
        subclasses: list[type] = tp.__subclasses__()
        record = tp in _FIELDS or any(c in _FIELDS for c in subclasses)

        def check(v: Any, seen: set[int]) -> bool:
            return isinstance(v, tp) and (not record or _record_fits(v, seen))

    _CHECKS[tp] = check
    return check


_RECORD_CHECKS: dict[type, tuple] = {}


def _plain_classes(tp: Any) -> set[type]:
    """The classes of plain values a field of type ``tp`` holds as they are (no record)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return set().union(*(_plain_classes(a) for a in typing.get_args(tp)))
    if tp is None or tp is type(None):
        return {type(None)}
    if tp is float:
        return {float, int}
    if tp in (int, str, bool):
        return {tp}
    return set()


class _Trusted(set):
    """``seen`` for the checks while an entry is built: records of ``classes`` come from
    tables whose columns were checked against their fields' types (not checked again)."""

    def __init__(self) -> None:
        super().__init__()
        self.classes: set[type] = set()


_FIELD_TYPES: dict[type, tuple] = {}


def _field_types(cls: type) -> tuple:
    """The annotated types of a record class's fields, in _FIELDS order."""
    got = _FIELD_TYPES.get(cls)
    if got is None:
        hints = typing.get_type_hints(cls)
        got = _FIELD_TYPES[cls] = tuple(hints[n] for n in _FIELDS[cls])
    return got


def _takes(tp: Any, cls: type) -> bool:
    """True if a field of type ``tp`` may hold an instance of ``cls`` (a record class or NoneType)."""
    if tp is Any:
        return True
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return any(_takes(a, cls) for a in typing.get_args(tp))
    if tp is None:
        tp = type(None)
    return isinstance(tp, type) and issubclass(cls, tp)


def _items_of(tp: Any) -> list[Any]:
    """The item types X of the ``tuple[X, ...]`` that a field of type ``tp`` may hold."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return [x for a in typing.get_args(tp) for x in _items_of(a)]
    args = typing.get_args(tp)
    if typing.get_origin(tp) is tuple and len(args) == 2 and args[1] is Ellipsis:
        return [args[0]]
    return []


def _record_fits(v: Any, seen: set[int]) -> bool:
    if id(v) in seen or v.__class__ in getattr(seen, "classes", ()):
        return True
    seen.add(id(v))
    cls = v.__class__
    checks = _RECORD_CHECKS.get(cls)
    if checks is None:
        if cls not in _FIELDS:
            return False
        hints = typing.get_type_hints(cls)
        checks = _RECORD_CHECKS[cls] = tuple((n, _check(hints[n])) for n in _FIELDS[cls])
    return all(f(getattr(v, n), seen) for n, f in checks)
