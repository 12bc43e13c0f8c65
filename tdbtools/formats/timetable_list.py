"""Open Rails timetable lists (``.timetablelist-or``, docs/timetables.md §1): an
optional ``#display name`` first line and one timetable file name per line; read and
written back byte for byte."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import Finding, Location
from .timetable import Station, Timetable, Train, _decode, _encode, _read_limited, _split_lines
from .timetable_cells import TimetableError


@dataclass(frozen=True, slots=True, eq=False)
class TimetableList:
    """A ``.timetablelist-or``: an optional ``#name`` first line and timetable file names."""

    path: str
    encoding: str
    name: str
    files: tuple[str, ...]
    lines: tuple[tuple[str, str], ...]  # (text, line ending) as read

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TimetableList):
            return NotImplemented
        return (self.encoding, self.name, self.files, self.lines) == (
            other.encoding,
            other.name,
            other.files,
            other.lines,
        )

    __hash__ = None  # type: ignore[assignment]


def read_timetable_list(path: str | Path) -> TimetableList:
    p = Path(path)
    text, enc = _decode(_read_limited(p, "list"), str(p))
    lines = _split_lines(text, str(p), "lines")
    name = ""
    files: list[str] = []
    for k, (line, _eol) in enumerate(lines):
        s = line.strip()
        if k == 0 and s.startswith("#"):
            name = s[1:].strip()
        elif s:
            if "/" in s or "\\" in s or s in (".", ".."):
                raise TimetableError(
                    f"{s!r}: a list names timetable files of its own folder", Location(str(p), k + 1, 1)
                )
            files.append(s)
    return TimetableList(str(p), enc, name, tuple(files), tuple(lines))


LIST_SUFFIXES = (".timetablelist-or", ".timetablelist_or")


def read_timetable_group(path: str | Path) -> tuple[Timetable, tuple[str, ...]]:
    """The timetables a list names, as one timetable whose trains run together (Open
    Rails, ``ProcessTimetable.cs``: it reads every file of the list into one train
    list). Each file is read leniently. Open Rails names a train ``name:description``
    (the description: the file's first comment cell, else its file name); here a train
    keeps its own name unless another file has a train of that name, then it is
    ``name:description``. A command's train name without ``:`` is a train of its own
    file, ``name:description`` one of the file with that description (ignoring case).
    Station commands are moved into the trains' stops of their own file. Returns the
    timetable and what was left out (a listed file that is missing or unreadable)."""
    import dataclasses

    from ..stf import resolve_case_insensitive
    from .timetable import read_timetable, with_train_refs

    tl = read_timetable_list(path)
    folder = Path(path).parent
    missing: list[str] = []
    tts: list[Timetable] = []
    for name in tl.files:
        f = resolve_case_insensitive(folder / name)
        if not f.is_file():
            missing.append(f"{Path(path).name} lists {name!r}, which is not in its folder")
            continue
        try:
            tts.append(read_timetable(f, strict=False))
        except TimetableError as exc:
            missing.append(f"{name}: {str(exc).splitlines()[0]}")
    if not tts:
        raise TimetableError(
            "no timetable of the list can be read" + (f": {'; '.join(missing)}" if missing else ""),
            Location(str(path), 1, 1),
        )
    descs = [(tt.description or Path(tt.path).stem).strip() for tt in tts]
    count: dict[str, int] = {}
    for tt in tts:
        for t in tt.trains:
            count[t.name.lower()] = count.get(t.name.lower(), 0) + 1

    def final(i: int, name: str) -> str:
        return name if count.get(name.lower(), 0) <= 1 else f"{name}:{descs[i]}"

    merged_trains: list[Train] = []
    stations: list[Station] = []
    findings: list[Finding] = []
    for i, tt in enumerate(tts):

        def canon(ref: str, i: int = i, tt: Timetable = tt) -> str:
            own = tt.find(ref)
            if own is not None:
                return final(i, own.name)
            name, _, desc = ref.rpartition(":")
            for k, other in enumerate(tts):
                if name and descs[k].lower() == desc.strip().lower():
                    t = other.find(name)
                    if t is not None:
                        return final(k, t.name)
            return ref

        fixed = with_train_refs(tt, canon)
        scmds = {st.name: st.commands for st in tt.stations}
        for t in fixed.trains:
            stops = tuple(
                dataclasses.replace(x, commands=x.commands + scmds.get(x.station, ())) for x in t.stops
            )
            merged_trains.append(dataclasses.replace(t, name=final(i, t.name), stops=stops))
        stations.extend(dataclasses.replace(st, commands=()) for st in tt.stations)
        findings.extend(tt.findings)
    head = tts[0]
    merged = dataclasses.replace(
        head,
        path=str(path),
        description=tl.name or Path(path).stem,
        stations=tuple(stations),
        trains=tuple(merged_trains),
        findings=tuple(findings),
    )
    return merged, tuple(missing)


def timetable_list_bytes(tl: TimetableList) -> bytes:
    return _encode("".join(t + e for t, e in tl.lines), tl.encoding)


__all__ = [
    "LIST_SUFFIXES",
    "TimetableList",
    "read_timetable_group",
    "read_timetable_list",
    "timetable_list_bytes",
]
