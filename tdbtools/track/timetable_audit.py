"""Checking a route's Open Rails timetables (``ACTIVITIES/OpenRails/*.timetable-or``
and ``*.timetablelist-or``) against the route: docs/findings.md §3, codes ``TT_*``.

What is checked: the file reads (``TT_READ``, with the reader's own findings); every
``#path`` and ``#consist`` exists (``TT_PATH_MISSING``, ``TT_CONSIST_MISSING``); every
station row names a station of the route (``TT_STATION_UNKNOWN``); with ``paths``,
each train's path passes its stations (``TT_STATION_OFF_PATH``) and its times run
forward along the path (``TT_TIME_ORDER``); commands that name another train name one
of the file (``TT_TRAIN_MISSING``: ``$forms``, ``$triggers``, ``$wait``, ``$attach``,
``$detach /forms``, ``$pickup``, ``$transfer``, … as ``formats/timetable_refs.py`` lists them); lists name files that exist (``TT_LIST_MISSING``).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import SourceError
from ..formats.route import Route
from ..formats.tdb import PlatformItem
from ..formats.timetable import Timetable, read_timetable, relative_file_name
from ..formats.timetable_list import read_timetable_list
from ..formats.timetable_pool import POOL_SUFFIXES, read_pool_file
from ..formats.timetable_refs import TRAIN_REFS
from ..stf import resolve_case_insensitive
from .pathbuild import platforms
from .paths import resolve_path

#: At most this many timetable files of a route are checked.
MAX_FILES = 200

#: Open Rails reads both spellings of the suffixes (ProcessTimetable.cs, GetFilenames).
TIMETABLE_SUFFIXES = (".timetable-or", ".timetable_or")
LIST_SUFFIXES = (".timetablelist-or", ".timetablelist_or")


def timetable_folder(route: Route) -> Path | None:
    p = resolve_case_insensitive(Path(route.folder) / "ACTIVITIES" / "OpenRails")
    return p if p.is_dir() else None


#: A finding: (code, message, severity); track/audit.py makes them AuditFindings.
TTFinding = tuple[str, str, str]


def _f(code: str, message: str, level: str) -> TTFinding:
    return (code, message, level)


def _exists(folder: Path, name: str, suffix: str) -> bool:
    rel = relative_file_name(name, suffix)
    if rel is None:
        return False
    p = resolve_case_insensitive(folder / (rel + suffix))
    return p.is_file()


def audit_timetables(route: Route, *, paths: bool = True) -> list[TTFinding]:
    """The findings of every timetable of ``route`` (module docstring)."""
    folder = timetable_folder(route)
    if folder is None:
        return []
    out: list[TTFinding] = []
    # Open Rails reads every pool file of the folder (PoolInfo.cs), "_or" suffixes too
    pool_keys: set[str] = set()
    path_dir = resolve_case_insensitive(Path(route.folder) / "PATHS")
    for p in sorted(p for p in folder.iterdir() if p.suffix.lower() in POOL_SUFFIXES)[:MAX_FILES]:
        try:
            pf = read_pool_file(p)
        except SourceError as exc:
            out.append(_f("TT_READ", str(exc).splitlines()[0], "error"))
            continue
        out.extend((f.code, f"{p.name}: " + str(f).split(": ", 1)[-1], f.severity) for f in pf.findings)
        for pool in pf.pools:
            pool_keys.add(pool.key)
            for st in pool.storages:
                for what, name in (("storage", st.path), *(("access", a) for a in st.access)):
                    if not _exists(path_dir, name, ".pat"):
                        out.append(
                            _f(
                                "TT_PATH_MISSING",
                                f"{p.name}: pool {pool.name!r}: {what} path {name!r} is not in PATHS",
                                "error",
                            )
                        )
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in TIMETABLE_SUFFIXES + LIST_SUFFIXES)
    for p in files[:MAX_FILES]:
        if p.suffix.lower() in LIST_SUFFIXES:
            try:
                tl = read_timetable_list(p)
            except SourceError as exc:
                out.append(_f("TT_READ", str(exc).splitlines()[0], "error"))
                continue
            for name in tl.files:
                if not (folder / name).is_file():
                    out.append(
                        _f(
                            "TT_LIST_MISSING",
                            f"{p.name}: lists {name!r}, which is not in {folder.name}/",
                            "error",
                        )
                    )
            continue
        try:
            tt = read_timetable(p, strict=False)
        except SourceError as exc:
            out.append(_f("TT_READ", str(exc).splitlines()[0], "error"))
            continue
        out.extend((f.code, f"{p.name}: " + str(f).split(": ", 1)[-1], f.severity) for f in tt.findings)
        out.extend(_check(route, tt, p.name, paths))
        out.extend(_check_pools(tt, p.name, pool_keys))
    return out


def _check_pools(tt: Timetable, fname: str, pool_keys: set[str]) -> list[TTFinding]:
    """Pools named by ``$pool`` (#start, #dispose) and ``$static /pool`` that no pool
    file of the folder defines: Open Rails does not create such a train."""
    out: list[TTFinding] = []
    for t in tt.trains:
        for c in (*t.start_commands, *t.dispose):
            names = (
                c.values if c.name == "pool" else (c.qualifier("pool") or ()) if c.name == "static" else ()
            )
            for n in names:
                if n and n.strip().lower() not in pool_keys:
                    out.append(
                        _f(
                            "TT_POOL_UNKNOWN",
                            f"{fname}: train {t.name!r}: pool {n!r} is defined in no .pool-or file of the folder",
                            "warning",
                        )
                    )
    return out


def _check(route: Route, tt: Timetable, fname: str, with_paths: bool) -> list[TTFinding]:
    out: list[TTFinding] = []
    rf = Path(route.folder)
    install = Path(route.install_root)
    path_dir = resolve_case_insensitive(rf / "PATHS")
    con_dirs = [
        resolve_case_insensitive(install / "TRAINS" / "CONSISTS"),
        resolve_case_insensitive(rf / "CONSISTS"),
    ]
    plats = platforms(route)
    # every platform item names its station (a platform whose two items are broken apart
    # is an ITEM_LINK_BROKEN finding, its station still exists)
    # Open Rails matches station rows to platform names ignoring case
    stations = {it.station.strip().lower() for it in route.tdb.items if isinstance(it, PlatformItem)}
    for s in tt.stations:
        if s.name.strip().lower() not in stations:
            out.append(
                _f("TT_STATION_UNKNOWN", f"{fname}:{s.line}: {s.name!r} is no station of the route", "error")
            )
    resolved: dict[str, dict[str, list[float]] | None] = {}
    for t in tt.trains:
        who = f"{fname}: train {t.name!r}"
        if t.path and not _exists(path_dir, t.path, ".pat"):
            out.append(_f("TT_PATH_MISSING", f"{who}: path {t.path!r} is not in PATHS", "error"))
        for c in t.consist:
            if not any(_exists(d, c.name, ".con") for d in con_dirs):
                out.append(
                    _f("TT_CONSIST_MISSING", f"{who}: consist {c.name!r} is not in TRAINS/CONSISTS", "error")
                )
        for cmd in (*t.start_commands, *t.note, *t.dispose, *(x for s in t.stops for x in s.commands)):
            for q in TRAIN_REFS.get(cmd.name, ()):
                refs = cmd.values if q is None else (cmd.qualifier(q) or ())
                for ref in refs:
                    # "name:description" may name a train of another timetable of a list
                    own = ref.rsplit(":", 1)[-1].strip().lower() == tt.description.strip().lower()
                    if ref and tt.find(ref) is None and (":" not in ref or own):
                        out.append(
                            _f(
                                "TT_TRAIN_MISSING",
                                f"{who}: ${cmd.name} names no train of the file: {ref!r}",
                                "error",
                            )
                        )
        if not with_paths or not t.path or not _exists(path_dir, t.path, ".pat"):
            continue
        if t.path not in resolved:
            resolved[t.path] = _station_positions(route, path_dir, t.path, plats)
        pos = resolved[t.path]
        if pos is None:
            continue  # PATH_UNRESOLVED says why
        along = []
        for stp in t.stops:
            key = stp.station.strip().lower()
            if key not in pos:
                if key in stations:
                    out.append(
                        _f(
                            "TT_STATION_OFF_PATH",
                            f"{who}: path {t.path!r} does not pass {stp.station!r}",
                            "warning",
                        )
                    )
                continue
            along.append((min(pos[key]), stp))
        along.sort(key=lambda x: x[0])
        last = t.start.seconds if t.start is not None and t.start.seconds is not None else None
        for _d, stp in along:
            for stamp in (stp.arrival, stp.depart):
                if stamp is None or stamp.seconds is None:
                    continue
                if last is not None and stamp.seconds < last:
                    out.append(
                        _f(
                            "TT_TIME_ORDER",
                            f"{who}: {stp.station} at {stamp.seconds // 3600:02d}:{stamp.seconds // 60 % 60:02d} "
                            "is before the time before it along the path",
                            "warning",
                        )
                    )
                last = stamp.seconds
    return out


def _station_positions(route: Route, path_dir: Path, name: str, plats: dict) -> dict[str, list[float]] | None:
    """Metres along the path to each station's platforms it passes."""
    rel = relative_file_name(name, ".pat")
    if rel is None:
        return None
    p = resolve_case_insensitive(path_dir / (rel + ".pat"))
    try:
        res = resolve_path(route, p)
    except SourceError:
        return None
    if not res.legs:
        return None
    by_node: dict[int, list[tuple[float, float, str]]] = {}
    for node, a, b, it, _o in plats.values():
        by_node.setdefault(node, []).append((a, b, it.station))
    out: dict[str, list[float]] = {}
    acc = 0.0
    for leg in res.legs:
        for tr in leg.traversals:
            lo, hi = sorted((tr.start, tr.end))
            for a, b, st in by_node.get(tr.node, ()):
                if b >= lo and a <= hi:
                    mid = min(max((a + b) / 2.0, lo), hi)
                    out.setdefault(st.strip().lower(), []).append(acc + abs(mid - tr.start))
            acc += tr.length
    return out


__all__ = ["audit_timetables", "timetable_folder"]
