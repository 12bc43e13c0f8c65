"""Decoding a cache entry: the arrays from the memory-mapped blob (checked against the
table of dtypes and extents), and the records rebuilt class by class from checked columns
(``cache.py``; docs/security.md §1)."""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from .cache_encode import _DTYPES, _SEPARATORS
from .cache_lazy import _LazyRows, _LazyTuple
from .cache_records import _CLASSES, _FIELDS, _PLAIN, _check, _field_types, _items_of, _takes, _Trusted

#: A route entry's class tables of at least this many rows (and its tuples of records
#: from them) are made on first use, not while loading (see _LazyRows).
LAZY_ROWS = 2048


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
