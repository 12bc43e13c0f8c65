"""Record tables and tuples of records made on first use, for big route cache entries
(``cache.py``; :data:`~tdbtools.formats.cache_decode.LAZY_ROWS`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..stf.parser import gc_paused


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

    def __init__(self, dec: Any, cls: type, n: int, cols: list) -> None:
        #: the cache_decode._Decoder that made the table (not imported: it imports this)
        self.dec: Any = dec
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
