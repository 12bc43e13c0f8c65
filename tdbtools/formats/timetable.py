"""Open Rails timetables (``.timetable-or``): a typed, frozen model, a reader and a
lossless writer (docs/timetables.md); lists are :mod:`.timetable_list`, the cell
language :mod:`.timetable_cells`.

A timetable is a grid of cells: the file is cut into rows (CR, LF or CRLF) and cells
(the separator, ``;`` ``,`` or tab, is the first of those on the first line), as Open
Rails cuts it; the text of each cell is then parsed with the Lark grammar
``grammars/timetable.lark`` for its kind. The grid keeps every cell's raw text, each
row's line ending, the encoding and byte-order mark, so :func:`write_timetable`
gives back the same bytes where nothing changed. The trains, stations and commands
are derived from the grid (:attr:`Timetable.trains`).

Bad cells are :class:`~tdbtools.errors.SourceError` with the row (line), column and a
caret; unknown commands are findings (code ``TT_UNKNOWN_COMMAND``), as Open Rails
ignores what it does not know.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from lark import Token, Tree

from ..errors import DecodeError, Diagnostics, Finding, Location, caret_line
from .timetable_cells import (
    DELAY_COMMANDS,
    DISPOSE_COMMANDS,
    NOTE_COMMANDS,
    PATH_COMMANDS,
    SPEED_COMMANDS,
    START_COMMANDS,
    STATION_COMMANDS,
    TIMING_COMMANDS,
    Cell,
    Command,
    ConsistPart,
    Row,
    Stamp,
    TimetableError,
    _CellReader,
    _stamp,
    _values,
)
from .timetable_refs import TRAIN_REFS, relative_file_name

#: A timetable file larger than this is refused (real ones are a few hundred kB).
MAX_TIMETABLE_BYTES = 16 << 20
#: At most this many rows, cells in a row, and characters in a cell.
MAX_ROWS = 20_000
MAX_COLUMNS = 5_000
MAX_CELL_CHARS = 4_000

SEPARATORS = (";", ",", "\t")

#: Reserved first-row/first-column words (docs/timetables.md §2).
ROW_KINDS = (
    "#comment",
    "#path",
    "#consist",
    "#start",
    "#note",
    "#dispose",
    "#speed",
    "#speedkph",
    "#speedmph",
    "#restartdelay",
    "#briefing",
    "#direction",  # no longer used by Open Rails, still accepted (and ignored)
)


@dataclass(frozen=True, slots=True)
class Stop:
    """A train at a station: booked arrival/departure (seconds since midnight) and the
    commands of its cell (and of the blank columns after it)."""

    station: str
    arrival: Stamp | None
    depart: Stamp | None
    commands: tuple[Command, ...]
    location: Location | None = field(default=None, compare=False)

    @property
    def passing(self) -> bool:
        return self.depart is not None and self.depart.mark == "P"


@dataclass(frozen=True, slots=True)
class Station:
    name: str
    commands: tuple[Command, ...]
    line: int


@dataclass(frozen=True, slots=True)
class Train:
    name: str
    column: int  # 0-based grid column
    path: str
    path_qualifiers: tuple[tuple[str, tuple[str, ...]], ...]
    consist: tuple[ConsistPart, ...]
    start: Stamp | None
    start_commands: tuple[Command, ...]
    note: tuple[Command, ...]
    dispose: tuple[Command, ...]
    speed: tuple[Command, ...]
    speed_unit: str  # "m/s", "km/h" or "mph"
    restart_delay: tuple[Command, ...]
    briefing: str
    stops: tuple[Stop, ...]
    static: bool  # "$static" as its name or in #start

    def command(self, where: str, name: str) -> Command | None:
        for c in getattr(self, where):
            if c.name == name:
                return c
        return None


# -- the file -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Timetable:
    """A timetable file: its grid (kept as read) and the trains derived from it."""

    path: str
    encoding: str  # "utf-8", "utf-8-sig", "utf-16-le" (with BOM), "utf-16-be" (with BOM)
    separator: str
    rows: tuple[Row, ...]
    description: str
    stations: tuple[Station, ...]
    trains: tuple[Train, ...]
    findings: tuple[Finding, ...] = field(default=(), compare=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Timetable):
            return NotImplemented
        return (self.encoding, self.separator, self.rows, self.description, self.stations, self.trains) == (
            other.encoding,
            other.separator,
            other.rows,
            other.description,
            other.stations,
            other.trains,
        )

    __hash__ = None  # type: ignore[assignment]

    def train(self, name: str) -> Train | None:
        for t in self.trains:
            if t.name == name:
                return t
        return None

    def find(self, ref: str) -> Train | None:
        """The train a command names, as Open Rails finds it: case-insensitive, and
        ``name:description`` naming a train of the timetable whose first comment cell
        is that description (a name without ``:`` is of this timetable). A reference
        to another timetable of a list is None here."""
        key = ref.strip().lower()
        own = self.description.strip().lower()
        for t in self.trains:
            n = t.name.lower()
            if key == n or key == f"{n}:{own}":
                return t
        return None

    def grid(self) -> list[list[str]]:
        """The cells' values (quotes taken off), row by row."""
        return [[c.text for c in r.cells] for r in self.rows]


def _decode(data: bytes, path: str) -> tuple[str, str]:
    if len(data) > MAX_TIMETABLE_BYTES:
        raise TimetableError(
            f"timetable of {len(data)} bytes: at most {MAX_TIMETABLE_BYTES} are read", Location(path, 0, 0)
        )
    boms = (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    )
    for bom, enc in boms:
        if data.startswith(bom):
            body = data[len(bom) :] if enc != "utf-8-sig" else data
            try:
                return body.decode(enc), enc
            except UnicodeDecodeError as exc:
                raise DecodeError(f"not valid {enc} text at byte {exc.start}", Location(path, 0, 0)) from None
    if len(data) >= 4 and data[1::2][:8].count(0) >= 2 and data[0::2][:8].count(0) == 0:
        enc = "utf-16-le-nobom"
        try:
            return data.decode("utf-16-le"), enc
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        # Spreadsheets on Windows save "CSV" in the ANSI code page; Open Rails reads
        # through a .NET reader that falls back the same way.
        return data.decode("cp1252", errors="replace"), "cp1252"


def _encode(text: str, encoding: str) -> bytes:
    if encoding == "utf-16-le":
        return codecs.BOM_UTF16_LE + text.encode("utf-16-le")
    if encoding == "utf-16-be":
        return codecs.BOM_UTF16_BE + text.encode("utf-16-be")
    if encoding == "utf-16-le-nobom":
        return text.encode("utf-16-le")
    return text.encode(encoding, errors="strict")


def _read_limited(p: Path, what: str) -> bytes:
    """A timetable-family file's bytes, at most one byte past the size limit (the parser
    refuses a file over it)."""
    try:
        with open(p, "rb") as f:
            return f.read(MAX_TIMETABLE_BYTES + 1)
    except OSError as exc:
        raise TimetableError(
            f"cannot read the {what}: {exc.strerror or exc}", Location(str(p), 0, 0)
        ) from None


def _split_lines(text: str, path: str, unit: str = "rows") -> list[tuple[str, str]]:
    """``text`` as (line, line ending) pairs, each ending kept as written; more than
    MAX_ROWS lines is an error (``unit`` names them in its message)."""
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
            raise TimetableError(f"more than {MAX_ROWS} {unit}", Location(path, MAX_ROWS + 1, 1))
    return lines


def _split_rows(text: str, path: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    lines = _split_lines(text, path)
    first = lines[0][0] if lines else ""
    if first[:1] in SEPARATORS:
        # Open Rails takes the first character of the file (the first cell is empty)
        return first[0], tuple(lines)
    for sep in SEPARATORS:
        if sep in first:
            return sep, tuple(lines)
    raise TimetableError(
        "no separator on the first line: a timetable's cells are separated by ';', ',' or tab",
        Location(path, 1, 1),
        caret_line(first, 0, len(first), 1),
    )


def _grid(lines: tuple[tuple[str, str], ...], sep: str, path: str) -> tuple[Row, ...]:
    rows = []
    for k, (line, eol) in enumerate(lines, 1):
        parts = line.split(sep)
        if len(parts) > MAX_COLUMNS:
            raise TimetableError(f"more than {MAX_COLUMNS} cells in a row", Location(path, k, 1))
        cells, col = [], 1
        for p in parts:
            if len(p) > MAX_CELL_CHARS:
                raise TimetableError(
                    f"a cell of {len(p)} characters (at most {MAX_CELL_CHARS})", Location(path, k, col)
                )
            cells.append(Cell(p, col))
            col += len(p) + 1
        rows.append(Row(tuple(cells), eol, k))
    return tuple(rows)


def _cell(row: Row, col: int) -> Cell | None:
    return row.cells[col] if col < len(row.cells) else None


def _row_kind(first: str) -> str:
    f = first.strip().lower()
    for k in ROW_KINDS:
        if f == k or (f.startswith(k) and not f[len(k) : len(k) + 1].isalnum()):
            # "#path /binary"-like words keep their kind; "#speedkph" is its own kind
            if k == "#speed" and f.startswith(("#speedkph", "#speedmph")):
                continue
            return k
    return "#unknown" if f.startswith("#") else ("" if not f else "station")


def read_timetable(
    path: str | Path, *, strict: bool = True, diagnostics: Diagnostics | None = None
) -> Timetable:
    """Read a ``.timetable-or``. ``strict``: a bad cell raises :class:`TimetableError`;
    lenient: it is a finding and the cell is left out."""
    p = Path(path)
    data = _read_limited(p, "timetable")
    return parse_timetable(data, str(p), strict=strict, diagnostics=diagnostics)


def parse_timetable(
    data: bytes, path: str = "<timetable>", *, strict: bool = True, diagnostics: Diagnostics | None = None
) -> Timetable:
    """A timetable from the bytes of a file (see :func:`read_timetable`)."""
    diags = diagnostics if diagnostics is not None else Diagnostics(strict)
    text, enc = _decode(data, path)
    sep, lines = _split_rows(text, path)
    rows = _grid(lines, sep, path)
    return _build(path, text, enc, sep, rows, diags)


def _build(path: str, text: str, enc: str, sep: str, rows: tuple[Row, ...], diags: Diagnostics) -> Timetable:
    first_findings = len(diags.findings)
    cr = _CellReader(path, text, rows, diags)
    head = rows[0]
    if head.cells and head.cells[0].text:
        diags.problem(cr.error(head, head.cells[0], "the first cell of a timetable must be empty"))
    # columns: a train, a #comment column, or (blank) an extension of the column before
    owner: dict[int, int] = {}  # grid column -> the train column it belongs to
    train_cols: list[int] = []
    comment_cols: list[int] = []
    # blank-headed columns right after the first one hold more station commands (Open
    # Rails' "addStationInfo" columns; generators such as autotable write them)
    station_cols: list[int] = []
    last: int | None = None
    prev_kind = "station"
    for c in range(1, len(head.cells)):
        t = head.cells[c].text
        if not t:
            if prev_kind == "station":
                station_cols.append(c)
            elif last is not None:
                owner[c] = last
            continue
        if t.lower().startswith("#comment"):
            comment_cols.append(c)
            last, prev_kind = None, "comment"
            continue
        if t.startswith("#"):
            diags.add(
                Finding(f"unknown column {t!r} (ignored)", cr.location(head, head.cells[c]), "TT_UNKNOWN_ROW")
            )
            last, prev_kind = None, "invalid"
            continue
        train_cols.append(c)
        owner[c] = c
        last, prev_kind = c, "train"
    # rows
    kinds: list[str] = []
    prev = ""
    speed_row: int | None = None
    for r in rows[1:]:
        k = _row_kind(r.cells[0].text if r.cells else "")
        if k == "#unknown":
            diags.add(
                Finding(
                    f"unknown row {r.cells[0].text!r} (ignored)", cr.location(r, r.cells[0]), "TT_UNKNOWN_ROW"
                )
            )
        if k in ("#speed", "#speedkph", "#speedmph"):
            # Open Rails takes the first speed row and ignores any later one
            if speed_row is None:
                speed_row = r.line
            else:
                if any(c.text for c in r.cells[1:]):
                    diags.add(
                        Finding(
                            f"a second speed row ({r.cells[0].text.strip()}) is ignored: Open Rails reads "
                            f"only the first one (line {speed_row})",
                            cr.location(r, r.cells[0]),
                            "TT_SPEED_ROWS",
                        )
                    )
                k = "#ignored"
        if not k:
            # a blank first cell continues the station row just above; any other such
            # row is a comment (Open Rails: "continuation of other types not allowed")
            k = "station" if prev == "station" else "#ignored"
        kinds.append(k)
        prev = k if (r.cells and r.cells[0].text) else ""
    description = ""
    comment_rows = [r for r, k in zip(rows[1:], kinds) if k == "#comment" and r.cells[0].text]
    if comment_rows and comment_cols:
        dc = _cell(comment_rows[0], comment_cols[0])
        description = dc.text if dc else ""
    stations: list[Station] = []
    station_of_row: dict[int, str] = {}
    station_cmds: dict[str, list[Command]] = {}
    last_station: str | None = None
    for r, k in zip(rows[1:], kinds):
        if k != "station":
            continue
        c0 = r.cells[0]
        if not c0.text:  # continuation of the station above
            if last_station is not None:
                station_of_row[r.line] = last_station
            continue
        tree = cr.parse(r, c0, "station_cell")
        if tree is None:
            last_station = None
            continue
        name = str(tree.children[0]).strip()
        scmds = cr.commands(r, c0, tree, STATION_COMMANDS, "station")
        for sc in station_cols:
            extra = _cell(r, sc)
            if extra is not None and extra.text:
                etree = cr.parse(r, extra, "command_cell")
                scmds.extend(cr.commands(r, extra, etree, STATION_COMMANDS, "station"))
        stations.append(Station(name, tuple(scmds), r.line))
        station_cmds.setdefault(name, []).extend(scmds)
        station_of_row[r.line] = name
        last_station = name
    trains: list[Train] = []
    for tc in train_cols:
        cols = [c for c, o in owner.items() if o == tc]
        name = head.cells[tc].text
        if "$static" in name.lower() and not name.startswith("$"):
            # "Loco 7 $static": a static train named by the part before the '$' (Open
            # Rails, TTTrainInfo.BuildTrain)
            name = name.split("$", 1)[0].strip()
            static_named = True
        else:
            static_named = name.lower().startswith("$static")
        acc: dict[str, list] = {
            "path": [],
            "consist": [],
            "start": [],
            "note": [],
            "dispose": [],
            "speed": [],
            "restart": [],
            "brief": [],
        }
        stop_cells: dict[str, list[tuple[Row, Cell]]] = {}
        start_time: Stamp | None = None
        static = static_named
        for r, k in zip(rows[1:], kinds):
            for c in cols:
                cell = _cell(r, c)
                if cell is None or not cell.text:
                    continue
                if k == "#path":
                    tree = cr.parse(r, cell, "path_cell")
                    if tree is not None:
                        quals = [
                            (
                                str(q.children[0]).lower(),
                                _values(q.children[1]) if len(q.children) > 1 else (),
                            )
                            for q in tree.children[1:]
                            if isinstance(q, Tree) and q.data == "qualifier"
                        ]
                        # path commands ($endatlastsignal /reverse): (name, its qualifiers' names)
                        for pc in cr.commands(r, cell, tree, PATH_COMMANDS, "path"):
                            quals.append((pc.name, tuple(q for q, _v in pc.qualifiers)))
                        acc["path"].append((str(tree.children[0]).strip(), tuple(quals)))
                elif k == "#consist":
                    tree = cr.parse(r, cell, "consist_cell")
                    if tree is not None:
                        for part in tree.children:
                            toks = [x for x in part.children if isinstance(x, Token)]
                            acc["consist"].append(
                                ConsistPart(str(toks[0]).strip(), any(x.type == "REVERSE" for x in toks))
                            )
                elif k == "#start":
                    tree = cr.parse(r, cell, "start_cell")
                    if tree is not None:
                        for x in tree.children:
                            if isinstance(x, Token) and x.type == "TIME":
                                try:
                                    start_time = _stamp(x)
                                except ValueError as exc:
                                    diags.problem(cr.error(r, cell, str(exc)))
                        acc["start"].extend(cr.commands(r, cell, tree, START_COMMANDS, "start"))
                elif k in ("#note", "#dispose", "#speed", "#speedkph", "#speedmph", "#restartdelay"):
                    tree = cr.parse(r, cell, "command_cell")
                    allowed, key = {
                        "#note": (NOTE_COMMANDS, "note"),
                        "#dispose": (DISPOSE_COMMANDS, "dispose"),
                        "#restartdelay": (DELAY_COMMANDS, "restart"),
                    }.get(k, (SPEED_COMMANDS, "speed"))
                    acc[key].extend(cr.commands(r, cell, tree, allowed, key))
                elif k == "#briefing":
                    acc["brief"].append(cell.text)
                elif k == "station" and r.line in station_of_row:
                    stop_cells.setdefault(station_of_row[r.line], []).append((r, cell))
        stops: list[Stop] = []
        for st, cells in stop_cells.items():
            arr = dep = None
            cmds: list[Command] = []
            loc = None
            for r, cell in cells:
                tree = cr.parse(r, cell, "timing_cell")
                if tree is None:
                    continue
                loc = loc or cr.location(r, cell)
                for tm in tree.children:
                    if isinstance(tm, Tree) and tm.data in ("timing", "arrival_only", "departure_only"):
                        try:
                            stamps = [_stamp(x) for x in tm.children if isinstance(x, Token)]
                        except ValueError as exc:
                            diags.problem(cr.error(r, cell, str(exc)))
                            continue
                        if arr is not None or dep is not None:
                            diags.problem(cr.error(r, cell, f"a second timing for train {name!r} at {st!r}"))
                        if tm.data == "arrival_only":
                            arr, dep = stamps[0], None
                        else:
                            arr, dep = (stamps[0], stamps[1]) if len(stamps) == 2 else (None, stamps[0])
                cmds.extend(cr.commands(r, cell, tree, TIMING_COMMANDS, "timing"))
            stops.append(Stop(st, arr, dep, tuple(cmds), loc))
        if any(c.name == "static" for c in acc["start"]):
            static = True
        paths = acc["path"]
        unit = next((k for k in kinds if k in ("#speed", "#speedkph", "#speedmph")), "#speed")
        trains.append(
            Train(
                name=name,
                column=tc,
                path=paths[0][0] if paths else "",
                path_qualifiers=paths[0][1] if paths else (),
                consist=tuple(acc["consist"]),
                start=start_time,
                start_commands=tuple(acc["start"]),
                note=tuple(acc["note"]),
                dispose=tuple(acc["dispose"]),
                speed=tuple(acc["speed"]),
                speed_unit={"#speed": "m/s", "#speedkph": "km/h", "#speedmph": "mph"}[unit],
                restart_delay=tuple(acc["restart"]),
                briefing=" ".join(acc["brief"]),
                stops=tuple(stops),
                static=static,
            )
        )
    names = [t.name for t in trains if not t.static]
    for n in {n for n in names if names.count(n) > 1}:
        diags.add(
            Finding(
                f"train name {n!r} is used more than once",
                Location(path, 1, 1),
                "TT_DUPLICATE_TRAIN",
                "error",
            )
        )
    return Timetable(
        path,
        enc,
        sep,
        rows,
        description,
        tuple(stations),
        tuple(trains),
        tuple(diags.findings[first_findings:]),
    )


def with_train_refs(tt: Timetable, canon: Callable[[str], str]) -> Timetable:
    """``tt`` with every train name a command holds replaced by ``canon(name)``."""
    import dataclasses

    def fix(c: Command) -> Command:
        where = TRAIN_REFS.get(c.name)
        if not where:
            return c
        vals = tuple(canon(v) for v in c.values) if None in where else c.values
        quals = tuple((q, tuple(canon(v) for v in vs) if q in where else vs) for q, vs in c.qualifiers)
        return dataclasses.replace(c, values=vals, qualifiers=quals)

    def fixall(cs: tuple[Command, ...]) -> tuple[Command, ...]:
        return tuple(fix(c) for c in cs)

    trains = tuple(
        dataclasses.replace(
            t,
            start_commands=fixall(t.start_commands),
            note=fixall(t.note),
            dispose=fixall(t.dispose),
            stops=tuple(dataclasses.replace(x, commands=fixall(x.commands)) for x in t.stops),
        )
        for t in tt.trains
    )
    return dataclasses.replace(tt, trains=trains)


# -- writing --------------------------------------------------------------------------------


def timetable_bytes(tt: Timetable) -> bytes:
    """The file of ``tt``: its rows' raw cells joined by the separator, each with its
    own line ending, in its encoding (with its byte-order mark)."""
    text = "".join(tt.separator.join(c.raw for c in r.cells) + r.eol for r in tt.rows)
    return _encode(text, tt.encoding)


def write_timetable(tt: Timetable, path: str | Path) -> Path:
    from .._fs import write_bytes_atomic

    p = Path(path)
    write_bytes_atomic(p, timetable_bytes(tt))
    return p


def with_cells(tt: Timetable, changes: dict[tuple[int, int], str], *, strict: bool = True) -> Timetable:
    """``tt`` with the cells at (0-based row, column) set to new text (the grid grows
    as needed; a value holding the separator or a line break is refused)."""
    rows = [list(r.cells) for r in tt.rows]
    eols = [r.eol for r in tt.rows]
    for (ri, ci), value in sorted(changes.items()):
        if tt.separator in value or "\n" in value or "\r" in value:
            raise TimetableError(f"a cell cannot hold the separator or a line break: {value!r}")
        while ri >= len(rows):
            rows.append([Cell("", 1)])
            eols.append(eols[-2] if len(eols) > 1 and eols[-1] == "" else (eols[-1] or "\r\n"))
        while ci >= len(rows[ri]):
            rows[ri].append(Cell("", 1))
        rows[ri][ci] = Cell(value, 1)
    text = "".join(tt.separator.join(c.raw for c in r) + e for r, e in zip(rows, eols))
    return parse_timetable(_encode(text, tt.encoding), tt.path, strict=strict)


def make_timetable(
    grid: Iterable[Iterable[str]],
    *,
    separator: str = ";",
    encoding: str = "utf-8",
    eol: str = "\r\n",
    path: str = "<new>",
) -> Timetable:
    """A new timetable from a grid of cell texts (docs/timetables.md §6)."""
    lines = []
    for row in grid:
        cells = [str(c) for c in row]
        for c in cells:
            if separator in c or "\n" in c or "\r" in c:
                raise TimetableError(f"a cell cannot hold the separator or a line break: {c!r}")
        lines.append(separator.join(cells) + eol)
    return parse_timetable(_encode("".join(lines), encoding), path)


__all__ = [
    "Cell",
    "Command",
    "ConsistPart",
    "Row",
    "Stamp",
    "Station",
    "Stop",
    "Timetable",
    "TimetableError",
    "Train",
    "make_timetable",
    "parse_timetable",
    "read_timetable",
    "TRAIN_REFS",
    "with_train_refs",
    "relative_file_name",
    "timetable_bytes",
    "with_cells",
    "write_timetable",
]
