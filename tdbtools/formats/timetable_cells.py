"""The cell language of Open Rails timetables (docs/timetables.md §3): the records a
cell reads to (commands, times, consist parts), the grammar ``grammars/timetable.lark``
that reads them, and located errors with a caret; the grid of cells is
:mod:`tdbtools.formats.timetable`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache, lru_cache

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput

from ..errors import Diagnostics, Finding, Location, SourceError, caret_line
from ..stf.resources import grammar_text

#: Commands by where Open Rails reads them (docs/timetables.md §4); others are findings.
TIMING_COMMANDS = frozenset(
    {
        "wait",
        "follow",
        "connect",
        "waitany",
        "callon",
        "hold",
        "nohold",
        "forcehold",
        "forcewait",
        "nowaitsignal",
        "waitsignal",
        "noclaim",
        "detach",
        "attach",
        "pickup",
        "transfer",
        "activate",
        "req",
        "terminal",
        "stoptime",
        "closeupsignal",
        "closeup",
        "keepclear",
        "endstop",
        "extendplatformtosignal",
        "restrictplatformtosignal",
    }
)
STATION_COMMANDS = frozenset(
    {
        "hold",
        "nohold",
        "forcehold",
        "forcewait",
        "nowaitsignal",
        "terminal",
        "closeupsignal",
        "extendplatformtosignal",
        "restrictplatformtosignal",
        "stoptime",
        "closeup",
        "keepclear",
        "endstop",
        "req",
    }
)
START_COMMANDS = frozenset({"create", "pool", "next", "static", "activated"})
PATH_COMMANDS = frozenset({"endatlastsignal"})
NOTE_COMMANDS = TIMING_COMMANDS | {"acc", "dec", "doo", "forcereversal"}
DISPOSE_COMMANDS = frozenset(
    {
        "forms",
        "triggers",
        "static",
        "stable",
        "pool",
        "remove",
        "attach",
        "detach",
        "pickup",
        "transfer",
        "activate",
    }
)
SPEED_COMMANDS = frozenset(
    {"max", "cruise", "maxdelay", "creep", "attach", "detach", "movingtable", "gradient"}
)
DELAY_COMMANDS = frozenset({"new", "path", "station", "follow", "attach", "detach", "movingtable", "reverse"})


class TimetableError(SourceError):
    """A timetable that cannot be read: encoding, structure or a cell's syntax."""


# -- the grid ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cell:
    """One cell: ``raw`` as in the file, ``text`` without enclosing quotes and blanks;
    ``column``: 1-based character column of its first character on its line."""

    raw: str
    column: int

    @property
    def text(self) -> str:
        return unquote(self.raw)


@dataclass(frozen=True, slots=True)
class Row:
    cells: tuple[Cell, ...]
    eol: str  # "\r\n", "\n", "\r" or "" (the last line without one)
    line: int  # 1-based


def unquote(raw: str) -> str:
    """A cell's value: enclosing double or single quotes taken off (a doubled quote
    inside stands for one), blanks trimmed. Quotes do not protect separators: Open
    Rails cuts at every one (docs/timetables.md §1)."""
    s = raw.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'":
        s = s[1:-1].replace(s[0] * 2, s[0]).strip()
    return s


# -- the cell language ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Command:
    """``$name = v1 + v2 /q1=x /q2``: ``values`` and ``qualifiers`` (name, values)."""

    name: str
    values: tuple[str, ...] = ()
    qualifiers: tuple[tuple[str, tuple[str, ...]], ...] = ()
    location: Location | None = field(default=None, compare=False)

    @property
    def value(self) -> str | None:
        return self.values[0] if self.values else None

    def qualifier(self, name: str) -> tuple[str, ...] | None:
        for q, v in self.qualifiers:
            if q == name:
                return v
        return None

    def has(self, name: str) -> bool:
        return any(q == name for q, _ in self.qualifiers)


@dataclass(frozen=True, slots=True)
class Stamp:
    """A time of day in seconds, or None for a lone mark; ``mark``: ':' (plain), 'x'
    (request stop), '*' (may depart early), 'P' (passing time)."""

    seconds: int | None
    mark: str = ":"


@dataclass(frozen=True, slots=True)
class ConsistPart:
    name: str
    reverse: bool = False


@cache
def _parser() -> Lark:
    return Lark(
        grammar_text("timetable.lark"),
        parser="lalr",
        start=["timing_cell", "station_cell", "start_cell", "consist_cell", "path_cell", "command_cell"],
        propagate_positions=False,
        maybe_placeholders=False,
    )


_TIME = r"[Pp]?[0-9]{1,2}[:xX*Pp][0-9]{2}(?::[0-9]{2})?"
#: A timing cell that is just "time" or "time-time" (most cells of a real timetable):
#: read without the parser, to the tree the grammar gives it.
_PLAIN_TIMING = re.compile(rf"[ \t\u00a0]*({_TIME})[ \t\u00a0]*(?:-[ \t\u00a0]*({_TIME})[ \t\u00a0]*)?")


@lru_cache(maxsize=8192)
def _parse_cell(kind: str, text: str) -> Tree:
    """The tree of a cell (trees are only read, so equal cells share one; real
    timetables repeat their paths, consists and commands in every column)."""
    if kind == "timing_cell":
        cut = text.find("$")
        head, rest = (text, "") if cut < 0 else (text[:cut], text[cut:])
        m = _PLAIN_TIMING.fullmatch(head)
        if m or not head.strip():
            # the time as above, the commands (which repeat) parsed once
            children: list = []
            if m:
                children.append(Tree("timing", [Token("TIME", g) for g in m.groups() if g is not None]))
            if rest:
                try:
                    children.extend(_parse_cell("command_cell", rest).children)
                except UnexpectedInput:
                    return _parser().parse(text, start=kind)  # raises, located in the whole cell
            return Tree("timing_cell", children)
    return _parser().parse(text, start=kind)


def _stamp(tok: Token) -> Stamp:
    s = str(tok)
    if tok.type == "MARK":
        return Stamp(None, s.lower())
    passing = s[0] in "Pp"  # P10:05: a passing time written with a leading P
    if passing:
        s = s[1:]
    # h?mm[:ss] or hh?mm[:ss]: the mark is the first character after the hours
    i = 1 if not s[1].isdigit() else 2
    h, mark, m = int(s[:i]), s[i], int(s[i + 1 : i + 3])
    sec = int(s[i + 4 : i + 6]) if len(s) > i + 3 else 0
    if m > 59 or sec > 59 or h > 47:
        raise ValueError(f"time {str(tok)!r} out of range")
    if passing:
        return Stamp(h * 3600 + m * 60 + sec, "P")
    return Stamp(h * 3600 + m * 60 + sec, ":" if mark == ":" else ("P" if mark in "Pp" else mark.lower()))


def _values(t: Tree | None) -> tuple[str, ...]:
    if t is None:
        return ()
    return tuple(str(v).strip() for v in t.children)


def _command(t: Tree, loc: Location | None) -> Command:
    name = str(t.children[0]).strip().lower()
    vals: tuple[str, ...] = ()
    quals: list[tuple[str, tuple[str, ...]]] = []
    for ch in t.children[1:]:
        if isinstance(ch, Tree) and ch.data == "values":
            vals = _values(ch)
        elif isinstance(ch, Tree) and ch.data == "qualifier":
            q = str(ch.children[0]).lower()
            quals.append((q, _values(ch.children[1]) if len(ch.children) > 1 else ()))
    return Command(name, vals, tuple(quals), loc)


class _CellReader:
    """Parses cells of one file into commands, with located errors."""

    def __init__(self, path: str, text: str, rows: tuple[Row, ...], diags: Diagnostics) -> None:
        self.path = path
        self.text = text
        self.rows = rows
        self.diags = diags
        self._line_starts: list[int] = []
        pos = 0
        for r in rows:
            self._line_starts.append(pos)
            pos += sum(len(c.raw) for c in r.cells) + max(len(r.cells) - 1, 0) + len(r.eol)

    def location(self, row: Row, cell: Cell, offset: int = 0) -> Location:
        lead = len(cell.raw) - len(cell.raw.lstrip())
        quote = 1 if cell.text and cell.raw.strip()[:1] in "\"'" and cell.raw.strip() != cell.text else 0
        return Location(self.path, row.line, cell.column + lead + quote + offset)

    def error(self, row: Row, cell: Cell, message: str, offset: int = 0) -> TimetableError:
        loc = self.location(row, cell, offset)
        start = self._line_starts[row.line - 1]
        end = start + sum(len(c.raw) for c in row.cells) + max(len(row.cells) - 1, 0)
        return TimetableError(message, loc, caret_line(self.text, start, end, loc.column))

    def parse(self, row: Row, cell: Cell, kind: str) -> Tree | None:
        text = cell.text
        try:
            return _parse_cell(kind, text)
        except UnexpectedInput as exc:
            col = getattr(exc, "column", 1) or 1
            what = {
                "timing_cell": "a timing (hh:mm, hh:mm:ss or arrival-departure) and $commands",
                "station_cell": "a station name and $commands",
                "start_cell": "a start time and $commands",
                "consist_cell": "consist names joined by '+', each optionally with $reverse",
                "path_cell": "a path name and /qualifiers",
                "command_cell": "$commands",
            }[kind]
            self.diags.problem(self.error(row, cell, f"cannot read {text!r}: expected {what}", col - 1))
            return None

    def commands(
        self, row: Row, cell: Cell, tree: Tree | None, allowed: frozenset[str], where: str
    ) -> list[Command]:
        out: list[Command] = []
        if tree is None:
            return out
        loc = self.location(row, cell)
        for t in tree.find_data("command"):
            c = _command(t, loc)
            if c.name not in allowed:
                self.diags.add(
                    Finding(
                        f"unknown {where} command ${c.name} (Open Rails ignores it)",
                        loc,
                        "TT_UNKNOWN_COMMAND",
                        "warning",
                    )
                )
            out.append(c)
        return out


__all__ = [
    "DELAY_COMMANDS",
    "DISPOSE_COMMANDS",
    "NOTE_COMMANDS",
    "PATH_COMMANDS",
    "SPEED_COMMANDS",
    "START_COMMANDS",
    "STATION_COMMANDS",
    "TIMING_COMMANDS",
    "Cell",
    "Command",
    "ConsistPart",
    "Row",
    "Stamp",
    "TimetableError",
    "unquote",
]
