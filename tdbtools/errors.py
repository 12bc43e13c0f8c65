"""The one exception family of tdbtools, and the warnings that lenient readers collect.

Every error a user can cause with bad input is a :class:`TdbToolsError`. Errors
about a place in a file are :class:`SourceError`: they carry the path, line,
column and a caret snippet, like tomli and lark do.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Echoed input values longer than this are cut in messages (a hostile file can hold a
#: value of megabytes; one error line must stay readable).
MAX_ECHO_CHARS = 80


def truncate_value(value: object, limit: int = MAX_ECHO_CHARS) -> str:
    """``repr(value)`` for an error message, cut to about ``limit`` characters with the
    full length named when it is longer."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return repr(value) if isinstance(value, str) else text
    head = text[:limit]
    return (
        f"{head!r}… ({len(text)} characters)"
        if isinstance(value, str)
        else f"{head}… ({len(text)} characters)"
    )


class TdbToolsError(Exception):
    """Root of every error tdbtools raises for bad input or a failed operation.

    Each error class also derives from the builtin a caller would catch without knowing
    tdbtools: bad content is a :class:`ValueError`, a missing route or file a
    :class:`FileNotFoundError`, an output that exists a :class:`FileExistsError`."""


@dataclass(frozen=True, slots=True)
class Location:
    """A place in a source file (1-based line and column; line 0: the file as a whole,
    e.g. a file that is missing or cannot be read)."""

    path: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}" if self.line > 0 else self.path


def caret_snippet(text: str, line: int, column: int, *, width: int = 100) -> str:
    """The source line at ``line`` with a caret under ``column`` (both 1-based)."""
    # Split on LF only: Source.location counts lines that way (a lone CR, a form feed
    # or U+2028 does not start a line in STF).
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return ""
    src = lines[line - 1]
    return caret_line(src, 0, len(src), column, width=width)


def caret_line(text: str, start: int, end: int, column: int, *, width: int = 100) -> str:
    """:func:`caret_snippet` for the line ``text[start:end]`` (without its LF), reading
    only the ``width`` characters shown: a lenient read that reports thousands of
    defects in a big file must not copy the file, or a long line, for each one."""
    while end > start and text[end - 1] == "\r":
        end -= 1
    length = end - start
    col = max(column - 1, 0)
    # Long lines (a TrVectorSections run can be thousands of characters) are cut
    # around the caret so the message stays readable.
    first = max(0, min(col - width // 2, length - width))
    cut = text[start + first : start + min(first + width, length)].replace("\t", " ")
    prefix = "…" if first > 0 else ""
    suffix = "…" if first + width < length else ""
    return f"    {prefix}{cut}{suffix}\n    {' ' * (len(prefix) + col - first)}^"


class SourceError(TdbToolsError, ValueError):
    """An error at a place in a file: path, line, column and a caret snippet."""

    def __init__(
        self,
        message: str,
        location: Location | None = None,
        snippet: str = "",
        expected: tuple[str, ...] = (),
    ) -> None:
        self.message = message
        self.location = location
        self.snippet = snippet
        self.expected = tuple(expected)
        super().__init__(self._render())

    @property
    def path(self) -> str | None:
        return self.location.path if self.location else None

    @property
    def line(self) -> int | None:
        return self.location.line if self.location else None

    @property
    def column(self) -> int | None:
        return self.location.column if self.location else None

    def _render(self) -> str:
        head = f"{self.location}: {self.message}" if self.location else self.message
        parts = [head]
        if self.snippet:
            parts.append(self.snippet)
        if self.expected:
            parts.append("expected one of: " + ", ".join(self.expected))
        return "\n".join(parts)


class DecodeError(SourceError):
    """The bytes of a file cannot be read as STF text (encoding, binary body, compression)."""


class StfSyntaxError(SourceError):
    """The text is not well-formed STF (unbalanced parentheses, stray characters, ...)."""


class IncludeError(SourceError):
    """An ``include`` that cannot be followed: missing file, outside the install root, a cycle."""


class UnitError(SourceError):
    """A number with a unit suffix that is unknown or not allowed for the quantity."""


class FormatError(SourceError):
    """Well-formed STF whose content does not fit the file type (missing block, bad value)."""


class RouteError(TdbToolsError, FileNotFoundError):
    """A route folder that cannot be loaded: missing files, no .trk, wrong layout (a
    :class:`FileNotFoundError` too)."""


#: Severities of findings, lowest first.
SEVERITIES = ("info", "warning", "error")

#: Codes of the defects readers tolerate (see docs/findings.md), by error class.
_CODE_OF_ERROR = {
    "DecodeError": "DECODE",
    "StfSyntaxError": "STF_SYNTAX",
    "IncludeError": "INCLUDE_BROKEN",
    "UnitError": "UNIT_BAD",
    "FormatError": "FORMAT",
}

#: How many findings of one code a :class:`Diagnostics` keeps; the rest are counted on
#: the last one kept (a broken 100 MB file must not yield a million records).
MAX_PER_CODE = 50


@dataclass(frozen=True, slots=True)
class Finding:
    """A defect or remark: a stable ``code`` (docs/findings.md), a ``severity``
    (info, warning, error), where it is (file ``location`` and/or ``node``,
    ``section``, ``item`` ids) and a message. ``count`` > 1: this record stands for
    that many findings of its code (the repeats beyond :data:`MAX_PER_CODE`)."""

    message: str
    location: Location | None = None
    code: str = "FORMAT"
    severity: str = "warning"
    node: int | None = None
    section: int | None = None
    item: int | None = None
    count: int = 1

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        ids = ", ".join(
            f"{k} {v}"
            for k, v in (("node", self.node), ("section", self.section), ("item", self.item))
            if v is not None
        )
        more = f" (and {self.count - 1} more like it)" if self.count > 1 else ""
        return f"{where}{self.code}: {self.message}{f' [{ids}]' if ids else ''}{more}"

    def to_json(self) -> dict:
        loc = self.location
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "location": None if loc is None else {"path": loc.path, "line": loc.line, "column": loc.column},
            "node": self.node,
            "section": self.section,
            "item": self.item,
            "count": self.count,
        }


def summarize_findings(
    findings,
    *,
    first: int = 3,
    what: str = "tolerated",  # noqa: ANN001
    hint: str = "run `tdbtools audit` for all; --strict refuses such routes",
) -> str:
    """One short paragraph: counts by code, the first few, and where to see them all."""
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.code] = counts.get(f.code, 0) + getattr(f, "count", 1)
    total = sum(counts.values())
    if not total:
        return ""
    head = ", ".join(f"{n} {code}" for code, n in sorted(counts.items()))
    lines = [f"warning: {what} {total} defect(s) Open Rails also tolerates: {head}"]
    lines.extend(f"  {f}" for f in list(findings)[:first])
    if hint:
        lines.append(f"  {hint}")
    return "\n".join(lines)


class Diagnostics:
    """Strict or lenient handling of defects found while reading.

    Strict (the default) raises the error at the first defect. Lenient records a
    :class:`Finding` and lets the reader go on with what Open Rails would do.
    """

    __slots__ = ("strict", "findings", "_kept")

    def __init__(self, strict: bool = True) -> None:
        self.strict = strict
        self.findings: list[Finding] = []
        self._kept: dict[str, list[int]] = {}

    def problem(
        self,
        error: SourceError,
        code: str | None = None,
        severity: str = "warning",
        *,
        node: int | None = None,
        section: int | None = None,
        item: int | None = None,
    ) -> None:
        """A defect: raised when strict, else recorded (a warning unless told)."""
        if self.strict:
            raise error
        self.add(
            Finding(
                error.message,
                error.location,
                code or _CODE_OF_ERROR.get(type(error).__name__, "FORMAT"),
                severity,
                node,
                section,
                item,
            )
        )

    def note(self, message: str, location: Location | None = None, code: str = "IGNORED") -> None:
        """A remark that is never fatal (e.g. a legal but unusual construct)."""
        self.add(Finding(message, location, code, "info"))

    def add(self, finding: Finding) -> None:
        """Record ``finding``; repeats of a code beyond :data:`MAX_PER_CODE` only count."""
        kept = self._kept.setdefault(finding.code, [0, 0])  # [index of the last kept, how many]
        if kept[1] >= MAX_PER_CODE:
            last = self.findings[kept[0]]
            self.findings[kept[0]] = Finding(
                last.message,
                last.location,
                last.code,
                last.severity,
                last.node,
                last.section,
                last.item,
                last.count + finding.count,
            )
            return
        kept[0], kept[1] = len(self.findings), kept[1] + 1
        self.findings.append(finding)
