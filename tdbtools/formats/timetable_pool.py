"""Open Rails pool files (``.pool-or``, also ``.pool_or``; docs/timetables.md §5.3):
the storage tracks of the pools a timetable's ``$pool`` commands name. Read and
written back byte for byte.

A pool file is cut into rows and cells as a timetable is (the separator is its first
character, :mod:`.timetable`); its first row is not read. The first cell of a row
says what the row is (Open Rails, ``PoolInfo.cs`` and ``TTPool.cs``, read for facts):

* ``#comment``: ignored;
* ``#name``: a new pool, named by the second cell (Open Rails lower-cases it, so pool
  names are matched ignoring case);
* ``#storage``: a storage track of the pool above, the path in the second cell;
* ``#access``: the access paths of the storage track above, one a cell up to the
  first empty one (a storage track without any is not valid);
* ``#maxunits``: at most this many units on the storage track above;
* ``#settings``: read, nothing is defined for it yet.

Anything else is a finding (``TT_POOL_ROW``), as Open Rails reports it and goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import Finding, Location
from .timetable import _decode, _encode, _grid, _read_limited, _split_rows
from .timetable_cells import Row

POOL_SUFFIXES = (".pool-or", ".pool_or")


@dataclass(frozen=True, slots=True)
class PoolStorage:
    """A storage track: its path, the access paths to it, and its unit limit."""

    path: str
    access: tuple[str, ...]
    max_units: int | None
    line: int


@dataclass(frozen=True, slots=True)
class PoolDef:
    name: str  # as written; :attr:`key` is how Open Rails matches it
    storages: tuple[PoolStorage, ...]
    line: int

    @property
    def key(self) -> str:
        return self.name.strip().lower()


@dataclass(frozen=True, slots=True, eq=False)
class PoolFile:
    path: str
    encoding: str
    separator: str
    rows: tuple[Row, ...]
    pools: tuple[PoolDef, ...]
    findings: tuple[Finding, ...] = field(default=())

    def pool(self, name: str) -> PoolDef | None:
        key = name.strip().lower()
        return next((p for p in self.pools if p.key == key), None)


def parse_pool_file(data: bytes, path: str = "<pool>") -> PoolFile:
    """A pool file from its bytes (module docstring)."""
    text, enc = _decode(data, path)
    sep, lines = _split_rows(text, path)
    rows = _grid(lines, sep, path)
    findings: list[Finding] = []
    pools: list[PoolDef] = []
    name: str | None = None
    name_line = 0
    storages: list[PoolStorage] = []
    cur: dict | None = None

    def cell(r: Row, i: int) -> str:
        return r.cells[i].text if i < len(r.cells) else ""

    def close_storage() -> None:
        nonlocal cur
        if cur is not None:
            if not cur["access"]:
                findings.append(
                    Finding(
                        f"storage {cur['path']!r} of pool {name!r} has no #access paths: Open Rails "
                        "does not use it",
                        Location(path, cur["line"], 1),
                        "TT_POOL_ROW",
                    )
                )
            else:
                storages.append(PoolStorage(cur["path"], tuple(cur["access"]), cur["max"], cur["line"]))
        cur = None

    def close_pool() -> None:
        nonlocal name, storages
        close_storage()
        if name is not None:
            if any(p.key == name.strip().lower() for p in pools):
                findings.append(
                    Finding(f"pool {name!r} is defined twice", Location(path, name_line, 1), "TT_POOL_ROW")
                )
            else:
                pools.append(PoolDef(name, tuple(storages), name_line))
        name, storages = None, []

    for r in rows[1:]:
        kind = cell(r, 0).lower()
        if kind in ("", "#comment", "#settings"):
            continue
        if kind == "#name":
            close_pool()
            name, name_line = cell(r, 1), r.line
            continue
        if name is None or not name:
            findings.append(
                Finding(f"{cell(r, 0)} before any #name (ignored)", Location(path, r.line, 1), "TT_POOL_ROW")
            )
            continue
        if kind == "#storage":
            close_storage()
            cur = {"path": cell(r, 1), "access": [], "max": None, "line": r.line}
        elif kind == "#access" and cur is not None:
            for c in r.cells[1:]:
                if not c.text:
                    break
                cur["access"].append(c.text)
        elif kind == "#maxunits" and cur is not None:
            try:
                cur["max"] = int(cell(r, 1))
            except ValueError:
                findings.append(
                    Finding(
                        f"#maxunits {cell(r, 1)!r} is no number (ignored)",
                        Location(path, r.line, 1),
                        "TT_POOL_ROW",
                    )
                )
        else:
            findings.append(
                Finding(
                    f"unknown pool row {cell(r, 0)!r} (ignored)", Location(path, r.line, 1), "TT_POOL_ROW"
                )
            )
    close_pool()
    return PoolFile(path, enc, sep, rows, tuple(pools), tuple(findings))


def read_pool_file(path: str | Path) -> PoolFile:
    p = Path(path)
    return parse_pool_file(_read_limited(p, "pool file"), str(p))


def pool_file_bytes(pf: PoolFile) -> bytes:
    """The file of ``pf`` as read (cells joined by its separator, each row's ending)."""
    return _encode("".join(pf.separator.join(c.raw for c in r.cells) + r.eol for r in pf.rows), pf.encoding)


__all__ = [
    "POOL_SUFFIXES",
    "PoolDef",
    "PoolFile",
    "PoolStorage",
    "parse_pool_file",
    "pool_file_bytes",
    "read_pool_file",
]
