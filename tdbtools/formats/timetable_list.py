"""Open Rails timetable lists (``.timetablelist-or``, docs/timetables.md §1): an
optional ``#display name`` first line and one timetable file name per line; read and
written back byte for byte."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import Location
from .timetable import MAX_ROWS, MAX_TIMETABLE_BYTES, _decode, _encode
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
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_TIMETABLE_BYTES + 1)
    except OSError as exc:
        raise TimetableError(f"cannot read the list: {exc.strerror or exc}", Location(str(p), 0, 0)) from None
    text, enc = _decode(data, str(p))
    lines: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        j = i
        while j < n and text[j] not in "\r\n":
            j += 1
        eol = "\r\n" if text.startswith("\r\n", j) else text[j : j + 1]
        lines.append((text[i:j], eol))
        i = j + len(eol)
        if len(lines) > MAX_ROWS:
            raise TimetableError(f"more than {MAX_ROWS} lines", Location(str(p), MAX_ROWS + 1, 1))
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


def timetable_list_bytes(tl: TimetableList) -> bytes:
    return _encode("".join(t + e for t, e in tl.lines), tl.encoding)


__all__ = ["TimetableList", "read_timetable_list", "timetable_list_bytes"]
