"""Encoding a route's records for the cache: records by class, column by column, numpy
columns as raw bytes (``cache.py``; docs/security.md §1)."""

from __future__ import annotations

import enum
import json
import operator
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .cache_lazy import _LazyTuple
from .cache_records import _FIELDS, _TAGS, _registry

#: Numeric dtypes that may be stored as raw bytes (object arrays are stored as JSON).
_DTYPES = frozenset({"<i8", "<i4", "<i2", "|i1", "<u8", "<u4", "<u2", "|u1", "<f8", "<f4", "|b1"})

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
