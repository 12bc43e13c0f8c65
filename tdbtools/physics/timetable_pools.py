"""Pools of a timetable replay (docs/timetables.md §5.3): storage tracks that hold units,
``#maxunits``, overflow and underflow, as Open Rails' ``TTPool`` keeps them.

A pool is a list of storage tracks in the order its pool file gives them; each track is
a stack of units, the last one in nearest the access path. A unit going in takes the
first track with room (fewer units than its ``#maxunits``); when none has room the pool
overflows: the unit is not stored (Open Rails: "overflow : cannot place train", the
train is abandoned at the end of its path). A train coming out takes the unit nearest
the access of the first track holding any: the last one stored there
(``TTPool.ExtractTrain``: ``StoredUnits[Count - 1]``).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import TdbToolsError
from ..formats.timetable_pool import POOL_SUFFIXES, read_pool_file

#: A pool no pool file defines: one storage track without a limit (the audit says
#: TT_POOL_UNKNOWN; Open Rails would not use it).
UNDEFINED: tuple[int | None, ...] = (None,)


def pool_limits(folder: Path) -> dict[str, tuple[int | None, ...]]:
    """Pool key (lower-case name) -> the ``#maxunits`` of each of its storage tracks
    (None: no limit), from every pool file of ``folder`` (``PoolInfo.cs`` reads them
    all). A storage track without an access path is not used, as in ``TTPool``."""
    out: dict[str, tuple[int | None, ...]] = {}
    if not folder.is_dir():
        return out
    for p in sorted(folder.iterdir()):
        if not p.is_file() or not p.name.lower().endswith(POOL_SUFFIXES):
            continue
        try:
            pf = read_pool_file(p)
        except (TdbToolsError, OSError):
            continue  # the audit says why (TT_READ)
        for pool in pf.pools:
            out.setdefault(pool.key, tuple(s.max_units for s in pool.storages if s.access))
    return out


class PoolYard:
    """The units in every pool, track by track (module docstring)."""

    def __init__(self, limits: dict[str, tuple[int | None, ...]]) -> None:
        self.limits = limits
        self.tracks: dict[str, list[list[str]]] = {}
        self.names: dict[str, str] = {}  # key -> the name as first written

    def _tracks(self, pool: str) -> list[list[str]]:
        key = pool.strip().lower()
        self.names.setdefault(key, pool)
        if key not in self.tracks:
            self.tracks[key] = [[] for _ in self.limits.get(key, UNDEFINED)]
        return self.tracks[key]

    def store(self, pool: str, unit: str) -> int | None:
        """Put ``unit`` on the first track of ``pool`` with room: its index, or None
        when the pool overflows."""
        tracks = self._tracks(pool)
        limits = self.limits.get(pool.strip().lower(), UNDEFINED)
        for i, (track, cap) in enumerate(zip(tracks, limits)):
            if cap is None or len(track) < cap:
                track.append(unit)
                return i
        return None

    def draw(self, pool: str) -> str | None:
        """Take the unit nearest the access of the first track holding any, or None
        (pool underflow)."""
        for track in self._tracks(pool):
            if track:
                return track.pop()
        return None

    def contents(self) -> dict[str, list[str]]:
        """Pool name -> its units, track by track, each track from its far end."""
        return {self.names[k]: [u for tr in v for u in tr] for k, v in self.tracks.items()}


__all__ = ["PoolYard", "UNDEFINED", "pool_limits"]
