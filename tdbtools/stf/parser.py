"""Parsing STF text with the Lark LALR grammar in ``grammars/stf.lark``.

The parse builds the generic tree directly (an inline transformer: no Lark Tree
is ever made). Comments and ``include`` are resolved here, so the tree holds only
data. Lark exceptions never escape: they become :class:`StfSyntaxError` with the
path, line, column, a caret snippet and what was expected.
"""

from __future__ import annotations

import bisect
import functools
import gc
import os
import re
import threading
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.utils import TextSlice

from .._fs import find_install_root, is_file, links_allowed, resolve_case_insensitive
from ..errors import Diagnostics, IncludeError, Location, StfSyntaxError
from . import tree as _tree
from .prescan import _blank_first_line, _prepare, _scan_markers, has_long_word
from .resources import grammar_path, grammar_text
from .source import Source, read_source
from .tree import COMMENT_WORDS, Block, Document, QStr, split_items, split_words

#: Include nesting deeper than this is refused (real content nests two or three).
MAX_INCLUDE_DEPTH = 16
#: At most this many includes are followed per parse (real files hold one or two): each
#: costs file-system look-ups, so a file of 100,000 include lines must not take minutes.
MAX_INCLUDES = 1000

_ESCAPE = re.compile(r"\\(.)", re.S)
_STRING_PART = re.compile(r'"((?:[^"\\]|\\.)*)"', re.S)
_ESCAPES = {"n": "\n", "t": "\t"}


def _unescape(s: str) -> str:
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), s)


class _Drop:
    """Placeholder for a comment block: removed from its parent's items."""


class _Include:
    __slots__ = ("target", "source", "pos")

    def __init__(self, target: str | None, source: Source | None, pos: int) -> None:
        self.target = target
        self.source = source
        self.pos = pos


_DROP = _Drop()
_INCLUDE_TARGET: list = []  # marks an include block while splitting DATA


class _Builder(Transformer):
    """Lark callbacks that build :class:`Block` objects as rules are reduced."""

    def __init__(self) -> None:
        super().__init__(visit_tokens=False)
        self.source: Source | None = None
        self.includes: list[tuple[list, _Include]] = []
        self.notes: list[tuple[str, int]] = []
        #: Keys of blocks kept as raw text when their content is one DATA token (see
        #: parse_source's ``bulk``); empty when the parse may not defer.
        self.defer: frozenset[str] = frozenset()
        #: Sorted offsets of the include blocks of the text (none may be deferred).
        self.include_blocks: list[int] = []
        #: Table runs the lexer takes without its regex (_hook_table_runs), in the text
        #: ``hinted_text``.
        self.table_runs: dict[int, int] = {}
        self.hinted_text: str | None = None
        #: What a table-run hint found about its run (TABLE_RUN_ENDS), by the run's start:
        #: given to the block kept raw from exactly that run (Block.take_hint).
        self.run_payloads: dict[int, Any] = {}

    # rules ---------------------------------------------------------------------------
    def start(self, children: list) -> list:
        return self._items(children, 0)

    def block(self, children: list):
        tok = children[0]
        key = tok.lower()
        if key[:1] in ("#", "_") or key in COMMENT_WORDS:
            return _DROP
        if key == "include":
            inner = self._items(children, 1)
            target = inner[0] if inner and inner[0].__class__ is not Block else None
            return _Include(target, self.source, tok.start_pos)
        if key in self.defer and len(children) >= 2:
            raw = self._raw_of(children)
            if raw is not None:
                blk = Block(str(tok), None, self.source, tok.start_pos, raw[0], raw[1], key, raw[2])
                payload = self.run_payloads.pop(raw[1], None) if raw[2] >= 0 else None
                if payload is not None and self.table_runs.get(raw[1]) == raw[2]:
                    # (_raw_of found the source's text equal to the run the hint walked)
                    blk.hint = payload
                return blk
        return Block(str(tok), self._items(children, 1), self.source, tok.start_pos)

    def _raw_of(self, children: list) -> tuple[str, int, int] | None:
        """The content of a block to keep raw, if it is DATA runs (plain words and blocks:
        no strings, escapes or markers, the parse checked the whole text) and dropped
        comment blocks only, holding no include block; else None. What lies between two
        runs (white space and the comment blocks) is blanked, so every offset holds and
        splitting the text gives the items the tree would hold. Returns Block's
        ``(raw, rawpos, rawend)``: one run is kept as its span of the source's text.
        (The one run of an item table that the lexer took whole may hold quoted
        strings: ITEM_TABLE_RUN_ENDS; Block.items then parses it, split_quoted.)"""
        runs = []
        for c in children[1:]:
            if c is _DROP:
                continue
            if c.__class__ is not Token or c.type not in ("DATA", "stf__DATA"):
                return None
            v = c.value
            if v.holds("\\") if v.__class__ is _Run else "\\" in v:
                return None
            runs.append(c)
        if not runs:
            return None
        first = runs[0].start_pos or 0
        last = runs[-1].end_pos or 0
        inc = self.include_blocks
        if inc and bisect.bisect_left(inc, first) < bisect.bisect_left(inc, last):
            return None  # an include block to follow
        src = self.source
        if len(runs) == 1 and src is not None and _same_text(src.text, first, runs[0].value):
            # A span of the source's text, not the token: a token lexed by Lark's regex
            # is a copy of the table, ~190 MB held through the whole model build of a
            # 200 MB .tdb (a hinted run's is a _Run, no copy). (The text Lark lexed
            # differs from the source's only on line 1, blanked; the comparison, in C
            # without a copy, makes sure.)
            return src.text, first, first + len(runs[0].value)
        if len(runs) == 1:
            return _token_text(runs[0]), first, -1
        parts = [_token_text(runs[0])]
        for prev, run in zip(runs, runs[1:]):
            parts.append(" " * ((run.start_pos or 0) - (prev.end_pos or 0)))
            parts.append(_token_text(run))
        return "".join(parts), first, -1

    def group(self, children: list):
        return Block("", self._items(children, 0), self.source, -1)

    # stf_plain.lark imports these rules from stf.lark, which prefixes their names.
    stf__block = block
    stf__group = group

    # items -----------------------------------------------------------------------------
    def _items(self, children: list, first: int) -> list:
        out: list = []
        pending = None  # "drop" after a comment marker, "include" after a bare include
        include_pos = -1
        src = self.source
        for i in range(first, len(children)):
            c = children[i]
            cls = c.__class__
            if cls is Token:
                t = c.type
                if t[:5] == "stf__":
                    t = t[5:]
                if t == "DATA":
                    if pending is None:
                        self._data(c, out)
                        continue
                    elems: list = []
                    self._data(c, elems)
                    head = elems.pop(0) if elems else None
                    if pending == "include":
                        target = head if head.__class__ is str else None
                        self._add_include(out, _Include(target, src, c.start_pos))
                    pending = None
                    for e in elems:
                        if e.__class__ is _Include:
                            self.includes.append((out, e))
                    out.extend(elems)
                elif t == "GLUED":  # abc" : a word whose opening quote is missing
                    word = str(c)[:-1]
                    if "\\" in word:
                        word = _unescape(word)
                    if pending == "include":
                        self._add_include(out, _Include(word, src, c.start_pos))
                    elif pending is None:
                        out.append(word)
                    pending = None
                elif t == "STRING":
                    if pending == "include":
                        self._add_include(out, _Include(self._string(c), src, c.start_pos))
                    elif pending is None:
                        out.append(self._string(c))
                    pending = None
                elif t == "MARKER":
                    pending = "drop" if pending is None else pending
                else:  # INCLUDE
                    pending = "include"
                    include_pos = c.start_pos
            elif c is _DROP:
                pending = None
            elif cls is _Include:
                pending = None
                self._add_include(out, c)
            else:  # Block (named or anonymous group)
                if pending == "include":
                    tgt = c.items[0] if c.items and c.items[0].__class__ is not Block and not c.name else None
                    self._add_include(out, _Include(tgt, src, c.pos))
                elif pending is None:
                    out.append(c)
                pending = None
        if pending == "include":
            self._add_include(out, _Include(None, src, include_pos))
        return out

    def _add_include(self, out: list, inc: _Include) -> None:
        out.append(inc)
        self.includes.append((out, inc))

    def _string(self, tok: Token) -> QStr:
        if tok[-1] == "+":
            self.notes.append(
                (
                    "'+' after a quoted string is not followed by another quoted string; ignored",
                    (tok.start_pos or 0) + len(tok) - 1,
                )
            )
        parts = _STRING_PART.findall(tok)
        s = "".join(parts)
        if "\\" in s:
            s = _unescape(s) if len(parts) == 1 else "".join(_unescape(p) for p in parts)
        return QStr(s)

    def _data(self, tok: Token, out: list) -> None:
        """Split a DATA token (plain words and nested blocks, no strings) into items."""
        text = tok.value  # the plain str: str(tok) would copy a big DATA token once more
        if text.__class__ is _Run:  # (a table run in a block not kept raw: rare)
            text = text.value()
            tok = Token(tok.type, text, start_pos=tok.start_pos)
        if '"' in text:  # only a table run the lexer took whole (_table_run_hints)
            out.extend(split_quoted(self.source, tok.start_pos or 0, text))
            return
        if "\\" in text:
            return self._data_escaped(tok, out)
        if "(" not in text:
            out.extend(split_words(text, self.source))
            return
        split_items(
            text,
            tok.start_pos or 0,
            self.source,
            out,
            lambda cur, blk: self._add_include(cur, _IncludeBlock(blk)),
            lazy=True,
        )

    def _data_escaped(self, tok: Token, out: list) -> None:
        # Rare: backslash escapes in plain words. Split as usual, then unescape.
        tmp: list = []
        first_include = len(self.includes)
        self._data(Token("DATA", str(tok).replace("\\", "\x00"), start_pos=tok.start_pos), tmp)
        # An include path is an item like any other: unescaped (`..\x` reads `..x`, as in
        # Open Rails and the full grammar), never left holding the NUL placeholder.
        for _parent, inc in self.includes[first_include:]:
            if inc.target.__class__ is str and "\x00" in inc.target:
                inc.target = _unescape(inc.target.replace("\x00", "\\"))

        def fix(items: list) -> None:
            for j, it in enumerate(items):
                if it.__class__ is Block:
                    if "\x00" in it.name:  # a name is kept as written (as by the grammar)
                        it.name = it.name.replace("\x00", "\\")
                        it.key = it.name.lower()
                    fix(it.items)
                elif it.__class__ is str and "\x00" in it:
                    items[j] = _unescape(it.replace("\x00", "\\"))

        fix(tmp)
        out.extend(tmp)
        for e in tmp:  # includes at the top of the run are in `out` now
            if e.__class__ is _Include:
                self.includes.append((out, e))


def _IncludeBlock(blk: Block) -> _Include:
    """An ``include ( path )`` block found inside a DATA token."""
    target = blk.items[0] if blk.items and blk.items[0].__class__ is str else None
    return _Include(target, blk.source, blk.pos)


class _ParserPool(threading.local):
    """Lark parsers (and their callbacks) per thread: the callbacks hold per-parse state."""

    def __init__(self) -> None:
        self.builder = _Builder()
        folder = str(grammar_path("stf.lark").parent)
        options = dict(
            parser="lalr",
            lexer="basic",
            transformer=self.builder,
            maybe_placeholders=False,
            import_paths=[folder],
        )
        self.full = Lark(grammar_text("stf.lark"), **options)
        self.plain = Lark(grammar_text("stf_plain.lark"), **options)
        self.bulk = Lark(grammar_text("stf_bulk.lark"), **options)
        _hook_table_runs(self.bulk, self.builder)
        self.options = options
        self.others: dict[str, Lark] = {}
        self.quoted: tuple[Lark, _Builder] | None = None

    def bulk_for(self, kind: str) -> Lark:
        """The bulk parser of ``kind`` (see BULK_GRAMMARS), made on first use."""
        lark = self.others.get(kind)
        if lark is None:
            lark = self.others[kind] = Lark(grammar_text(BULK_GRAMMARS[kind][0]), **self.options)
        return lark


#: Per bulk kind, a function ``(text, pos)`` -> the end of the DATA run that the
#: lexer would match at ``pos``, the start of a table's content, found without the
#: lexer's regex; or None (the lexer then matches it). It must answer only where the
#: answer is certain (formats/tdb_bulk_nodes.py registers the .tdb one: it accepts only the
#: node shapes its bulk reader reads, which the DATA regex of stf_bulk.lark matches
#: as one run up to the table's closing parenthesis). It may answer ``(end, payload)``:
#: the payload (what its walk found) then goes with the block kept raw from exactly
#: that run, for its reader (Block.take_hint), so that the table is walked once.
TABLE_RUN_ENDS: dict[str, Any] = {}
#: At most this many tables per file get a run end (real files hold one).
_MAX_TABLE_HINTS = 8


#: Per bulk kind, as TABLE_RUN_ENDS for the content of a ``TrItemTable (`` table,
#: which may hold quoted strings: the run is then no DATA regex match but the whole
#: content, kept raw (a TrItemTable is deferred, see BULK_TABLES) and split with the
#: STF grammar if its items are asked for (split_quoted). It must accept only content
#: that parses without a finding and holds no include, escape or "+" (formats/tdb_bulk_items.py
#: registers the .tdb one: the item shapes of its bulk reader).
ITEM_TABLE_RUN_ENDS: dict[str, Any] = {}
#: What may come just before a table's name that the lexer then gives as a NAME of
#: its own (white space, a parenthesis, a quote), not the end of a longer word.
_NAME_BEFORE = frozenset(chr(c) for c in range(33)) | frozenset('()"')


def _table_run_hints(text: str, kind: str, payloads: dict[int, Any] | None = None) -> dict[int, int]:
    """{offset of a ``TrackNodes (`` table's content: end of its DATA run} (see
    TABLE_RUN_ENDS), for the lexer hook of :func:`_hook_table_runs`; the hints'
    payloads by offset into ``payloads``."""
    find_end = TABLE_RUN_ENDS.get(kind)
    hints: dict[int, int] = {}
    if find_end is None:
        return hints
    i = text.find("TrackNodes")
    while i >= 0 and len(hints) < _MAX_TABLE_HINTS:
        m = _TABLE_OPEN.match(text, i + 10)
        end = None
        if m is not None:
            end = find_end(text, m.end())
            if isinstance(end, tuple):
                end, payload = end
                if payloads is not None:
                    payloads[m.end()] = payload
            if end is not None:
                hints[m.end()] = end
        # Not within a run: the lexer takes it whole (~0.16 s for a 200 MB table).
        i = text.find("TrackNodes", i + 10 if end is None else end)
    find_items = ITEM_TABLE_RUN_ENDS.get(kind)
    if find_items is not None:
        _item_table_hints(text, find_items, hints)
    return hints


def _item_table_hints(text: str, find_end: Any, hints: dict[int, int]) -> None:
    """Adds the runs of the ``TrItemTable (`` tables (ITEM_TABLE_RUN_ENDS) to ``hints``,
    looking only outside the runs already there (the lexer takes those whole)."""
    # Past line 1 only (blanked in ``text``): the run kept raw is then the source's text.
    first_line = text.find("\n")
    if first_line < 0:
        return
    gaps, at = [], first_line
    for a, b in sorted(hints.items()):
        gaps.append((at, a))
        at = max(at, b)
    gaps.append((at, len(text)))
    found = 0
    for lo, hi in gaps:
        i = text.find("TrItemTable", lo, hi)
        while i >= 0 and found < _MAX_TABLE_HINTS:
            m = _TABLE_OPEN.match(text, i + 11)
            end = None
            if m is not None and text[i - 1] in _NAME_BEFORE:
                end = find_end(text, m.end())
                if end is not None:
                    hints[m.end()] = end
                    found += 1
            i = text.find("TrItemTable", i + 11 if end is None else end, hi)


_TABLE_OPEN = re.compile(r"[\x00-\x20]*\([\x00-\x20]*")


class _Run(str):
    """A table run the lexer takes whole (_hook_table_runs), as the value of its DATA
    token, without copying it: ``text[start:stop]``. The run of a 200 MB .tdb's
    TrackNodes table was copied twice (the slice, then the str that Lark's Token is made
    of), 0.28 s of CPU and ~400 MB of fresh memory touched, to be dropped at once: the
    block kept raw holds a span of the source's text (_Builder._raw_of).

    What Lark does with a token's value is what this answers as the run would: its
    length and its line ends (LineCounter.feed); the Token made from it holds an empty
    str (str() of this is ""), so everything here that reads a DATA token reads
    ``_token_text`` of it, and the value where it is a ``_Run``."""

    text: str
    start: int
    stop: int

    def __new__(cls, text: str, start: int, stop: int) -> _Run:
        self = super().__new__(cls, "")
        self.text, self.start, self.stop = text, start, stop
        return self

    def __len__(self) -> int:
        return self.stop - self.start

    def __str__(self) -> str:
        return ""  # (what Token(type, value) holds: see above)

    def count(self, sub: str, *bounds: Any) -> int:  # (LineCounter.feed, without bounds)
        if bounds:
            return self.value().count(sub, *bounds)
        return self.text.count(sub, self.start, self.stop)

    def rindex(self, sub: str, *bounds: Any) -> int:  # (LineCounter.feed, without bounds)
        if bounds:
            return self.value().rindex(sub, *bounds)
        return self.text.rindex(sub, self.start, self.stop) - self.start

    def holds(self, sub: str) -> bool:
        return self.text.find(sub, self.start, self.stop) >= 0

    def value(self) -> str:
        """The run itself (a copy)."""
        return self.text[self.start : self.stop]


def _same_text(text: str, at: int, value: str) -> bool:
    """Whether ``text`` holds the DATA token value ``value`` at ``at`` (in C, no copy)."""
    if value.__class__ is _Run:
        run: Any = value
        return run.text is text and run.start == at or text.startswith(run.value(), at)
    return text.startswith(value, at)


def _token_text(tok: Token) -> str:
    """A DATA token's text: its value, or the run a ``_Run`` stands for (a copy)."""
    v = tok.value
    return v.value() if v.__class__ is _Run else v


def _hook_table_runs(lark: Lark, builder: _Builder) -> None:
    """Let the lexer of ``lark`` take a table's content as the DATA token that its
    regex would match, when the builder's hints (_table_run_hints) know where that run
    ends: Lark's regex goes through a 200 MB TrackNodes table at ~9 ns a character
    (a character class per character), the hint's walk from node to node in a fraction.
    The token, its type and everything after are the same: the hint is used only when
    no terminal tried before DATA matches there. (An item table's run may be longer
    than the regex's, past quoted names: ITEM_TABLE_RUN_ENDS. The tree is the same.)"""
    lexer: Any = lark.parser.lexer
    orig = lexer.match
    names = [t.name for t in lexer.scanner.terminals]
    data = next((n for n in names if n in ("DATA", "stf__DATA")), None)
    if data is None:
        return
    before = [re.compile(t.pattern.to_regexp()) for t in lexer.scanner.terminals[: names.index(data)]]

    def match(text: Any, pos: int) -> Any:
        hints = builder.table_runs
        if hints:
            end = hints.get(pos)
            whole = builder.hinted_text
            if end is not None and whole is not None and getattr(text, "text", text) is whole:
                if end <= getattr(text, "end", len(whole)) and not any(r.match(whole, pos) for r in before):
                    return _Run(whole, pos, end), data
        return orig(text, pos)

    lexer.match = match


_POOL = _ParserPool()


def _parse_items(
    source: Source, bulk: bool | str = False
) -> tuple[list, list[tuple[list, _Include]], list[tuple[str, int]]]:
    pool = _POOL
    b = pool.builder
    b.source = source
    b.includes = []
    b.notes = []
    try:
        text, start, keywords, long_word = _prepare(source)
        full, include_blocks = _scan_markers(text, keywords, start)
        if full or (has_long_word(text) if long_word is None else long_word):
            lark = pool.full
        elif bulk and not source.exact_split:
            # Blocks kept raw must never hold an include block (_Builder._raw_of checks):
            # they are split without the include machinery if asked for.
            kind = "tdb" if bulk is True else str(bulk)
            lark = pool.bulk if kind == "tdb" else pool.bulk_for(kind)
            b.defer = BULK_GRAMMARS[kind][1]
            b.include_blocks = include_blocks
            if kind == "tdb":
                b.table_runs, b.hinted_text = _table_run_hints(text, kind, b.run_payloads), text
        else:
            lark = pool.plain
        # The transformer builds a list, not a Tree. A TextSlice keeps every offset.
        items: Any = lark.parse(TextSlice(text, start, len(text)) if start else text)
    except UnexpectedInput as exc:
        raise _syntax_error(source, exc) from None
    finally:
        includes, notes = b.includes, b.notes
        b.includes, b.notes, b.source, b.defer, b.include_blocks = [], [], None, frozenset(), []
        b.table_runs, b.hinted_text, b.run_payloads = {}, None, {}
    return items, includes, notes


#: Blocks that a bulk parse keeps as raw text (the lexer of stf_bulk.lark isolates them).
BULK_TABLES = frozenset({"tracknodes", "tritemtable"})
#: Per kind of bulk parse (parse_source's ``bulk``): its grammar and the blocks kept raw.
BULK_GRAMMARS = {
    "tdb": ("stf_bulk.lark", BULK_TABLES),
    "tsection": ("tsection_bulk.lark", frozenset({"tracksections", "trackshapes"})),
}


def _parse_items_tolerant(source: Source, diags: Diagnostics, bulk: bool | str = False):  # noqa: ANN202
    """:func:`_parse_items`; a lenient read skips every ``)`` that closes no block (Open
    Rails' reader ignores them: real ``carspawn.dat`` files end with one), docs/findings.md."""
    try:
        return _parse_items(source, bulk)
    except StfSyntaxError as exc:
        if diags.strict or not exc.message.startswith("unmatched ')'") or exc.location is None:
            raise
        text = _blank_first_line(source.text)
        stray = _stray_closers(text)
        if source._starts()[exc.location.line - 1] + exc.location.column - 1 not in stray:
            raise  # the scan disagrees with the grammar: report what the grammar saw
        chars = list(source.text)
        for pos in stray:
            loc = source.location(pos)
            diags.problem(
                StfSyntaxError("unmatched ')' ignored: no block is open here", loc), code="STRAY_PAREN"
            )
            chars[pos] = " "  # same length: every later offset, line and column holds
        fixed = Source(source.path, "".join(chars), source.encoding, source.compressed, source.exact_split)
    return _parse_items(fixed, bulk)


def _stray_closers(text: str) -> set[int]:
    """Positions of the ')' that close no block (strings skipped)."""
    depth = 0
    out: set[int] = set()
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|[()]', text):
        ch = m.group()
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth:
                depth -= 1
            else:
                out.add(m.start())
    return out


@contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while building many objects: its passes over
    a large, growing tree cost more than the parse (the tree has no cycles)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def split_quoted(source: Source | None, start: int, raw: str) -> list:
    """The items of ``raw``, the raw content at ``start`` of a block that holds quoted
    strings (a table run the lexer took whole, see ITEM_TABLE_RUN_ENDS), parsed with
    the STF grammar in place in the source's text: the same items, offsets and lines
    as a parse of the whole file gives them."""
    if source is None or not source.text.startswith(raw, start):
        raise AssertionError("a quoted raw run is always a span of its source's text")
    pool = _POOL
    if pool.quoted is None:
        builder = _Builder()
        pool.quoted = (
            Lark(grammar_text("stf_plain.lark"), **{**pool.options, "transformer": builder}),
            builder,
        )
    lark, b = pool.quoted
    b.source = source
    try:
        items: Any = lark.parse(TextSlice(source.text, start, start + len(raw)))
        includes, notes = b.includes, b.notes
    finally:
        b.includes, b.notes, b.source = [], [], None
    if includes or notes:
        raise AssertionError("a quoted raw run holds no include and no '+'")
    return items


_tree.QUOTED_SPLIT.append(split_quoted)


def parse_source(
    source: Source,
    *,
    diagnostics: Diagnostics | None = None,
    root: str | Path | None = None,
    bulk: bool | str = False,
) -> Document:
    """Parse decoded text into a :class:`Document`, following ``include``.

    With ``bulk`` (True: a .tdb's tables; "tsection": a tsection.dat's, see
    :data:`BULK_GRAMMARS`), those blocks may be kept as raw text (when the file has no
    bare comment marker or long word, and the block holds no include block, quoted
    string or escape outside its comment blocks): :meth:`Block.raw` hands the text to a
    bulk reader, and the items are split only if asked for. The tree is the same
    either way.
    """
    with gc_paused():
        return _parse_source(source, diagnostics, root, bulk)


def _parse_source(
    source: Source, diagnostics: Diagnostics | None, root: str | Path | None, bulk: bool | str = False
) -> Document:
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=True)
    top = Path(source.path).resolve() if source.path and not source.path.startswith("<") else None
    confine: Path | Callable[[], Path] | None
    if root is not None:
        confine = Path(root).resolve()
    elif top is not None:
        # Looked for only when the file has an include: the search lists every folder
        # above the file (a PATHS folder of 300 .pat files, read one by one, made it
        # most of the reading).
        confine = functools.partial(find_install_root, top)
    else:
        confine = None
    seen: list[str] = []
    items = _resolve(source, diags, confine, [str(top)] if top else [], seen, bulk=bulk)
    return Document(items, source, tuple(seen))


def parse_file(
    path: str | Path,
    *,
    strict: bool = True,
    diagnostics: Diagnostics | None = None,
    root: str | Path | None = None,
    bulk: bool | str = False,
) -> Document:
    """Read, decode and parse one STF file into the generic tree.

    ``include`` paths are resolved relative to the including file and must stay
    inside ``root`` (default: the install above the file, a folder holding both
    ``ROUTES`` and ``GLOBAL``; else the file's own folder; docs/security.md §3).
    """
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=strict)
    return parse_source(read_source(path), diagnostics=diags, root=root, bulk=bulk)


def parse_text(text: str, path: str = "<text>") -> Document:
    """Parse STF text held in memory (its first line is the signature and is discarded)."""
    return parse_source(Source(path, text, "str"))


def _resolve(
    source: Source,
    diags: Diagnostics,
    confine: Path | Callable[[], Path] | None,
    stack: list[str],
    seen: list[str],
    budget: list[int] | None = None,
    bulk: bool | str = False,
) -> list:
    items, includes, notes = _parse_items_tolerant(source, diags, bulk)
    for message, pos in notes:
        diags.note(message, source.location(pos))
    if not includes:
        return items
    if callable(confine):
        confine = confine()
    budget = budget if budget is not None else [MAX_INCLUDES]
    # An include can be registered with more than one list (a DATA run is split into a
    # temporary list first), and one that a comment marker dropped is in none: each is
    # followed once, if it is still in the tree; then every list is spliced once (not
    # one search per include: a file may hold thousands).
    parents: dict[int, tuple[list, set[int]]] = {}
    expansions: dict[int, list] = {}
    for parent, inc in includes:
        entry = parents.get(id(parent))
        if entry is None:
            entry = parents[id(parent)] = (parent, {id(x) for x in parent if x.__class__ is _Include})
        if id(inc) not in entry[1] or id(inc) in expansions:
            continue
        if budget[0] <= 0:
            if budget[0] == 0:
                loc = source.location(inc.pos) if inc.pos >= 0 else Location(source.path, 1, 1)
                diags.problem(
                    IncludeError(
                        f"more than {MAX_INCLUDES} includes; the rest are not followed",
                        loc,
                        source.snippet(loc),
                    )
                )
                budget[0] = -1
            expansions[id(inc)] = []
            continue
        budget[0] -= 1
        expansions[id(inc)] = _follow(inc, diags, confine, stack, seen, budget, bulk)
    for parent, _ids in parents.values():
        if _ids:
            new: list = []
            for x in parent:
                if x.__class__ is _Include:
                    new.extend(expansions.get(id(x), ()))
                else:
                    new.append(x)
            parent[:] = new
    return items


def _follow(
    inc: _Include,
    diags: Diagnostics,
    confine: Path | None,
    stack: list[str],
    seen: list[str],
    budget: list[int],
    bulk: bool | str = False,
) -> list:
    src = inc.source
    assert src is not None, "an include block always comes from a parsed source"
    loc = src.location(inc.pos) if inc.pos >= 0 else Location(src.path, 1, 1)
    if not inc.target:
        diags.problem(IncludeError("'include' without a file name", loc, src.snippet(loc)))
        return []
    name = str(inc.target)
    low = name.lower()
    if "[[samename]]" in low:
        # Open Rails replaces the token with the including file's name, anywhere in the
        # path: `../[[samename]]` in an OpenRails/ overlay means the original file.
        at = low.index("[[samename]]")
        name = name[:at] + Path(src.path).name + name[at + len("[[samename]]") :]
    base = Path(src.path).parent
    joined = base / name.replace("\\", "/")
    if links_allowed():  # "..": the folder the name shows, not the one a link leads to
        joined = Path(os.path.normpath(os.path.abspath(joined)))
    target = resolve_case_insensitive(joined)
    try:
        resolved = target.resolve()
    except (OSError, ValueError, RuntimeError) as exc:  # a NUL, a symlink loop, ...
        diags.problem(IncludeError(f"include {name!r} cannot be resolved: {exc}", loc, src.snippet(loc)))
        return []
    if (
        confine is not None
        and not resolved.is_relative_to(confine)
        # A user who follows links out of the install (docs/security.md §3) reads an include
        # of linked content where its name puts it, inside the install.
        and not (links_allowed() and Path(os.path.normpath(os.path.abspath(target))).is_relative_to(confine))
    ):
        diags.problem(
            IncludeError(
                f"include {name!r} points outside the install root {str(confine)!r}", loc, src.snippet(loc)
            )
        )
        return []
    if str(resolved) in stack:
        chain = " -> ".join([*stack[stack.index(str(resolved)) :], str(resolved)])
        diags.problem(IncludeError(f"include cycle: {chain}", loc, src.snippet(loc)))
        return []
    if len(stack) > MAX_INCLUDE_DEPTH:
        diags.problem(IncludeError(f"includes nested deeper than {MAX_INCLUDE_DEPTH}", loc, src.snippet(loc)))
        return []
    if not is_file(resolved):
        diags.problem(
            IncludeError(
                f"included file not found: {name!r} (looked for {str(target)!r})", loc, src.snippet(loc)
            )
        )
        return []
    seen.append(str(resolved))
    child = read_source(resolved)
    return _resolve(child, diags, confine, [*stack, str(resolved)], seen, budget, bulk)


# -- errors -----------------------------------------------------------------------------

_TERMINAL_NAMES = {
    "LPAR": "'('",
    "RPAR": "')'",
    "NAME": "a block name",
    "FLAT": "a block",
    "VALUES": "a value",
    "STRING": "a quoted string",
    "MARKER": "a comment",
    "INCLUDE": "include",
    "$END": "end of file",
}


def _open_blocks(text: str) -> list[int]:
    """Positions of the '(' still open at the end of ``text`` (strings skipped)."""
    stack: list[int] = []
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|[()]', text):
        ch = m.group()
        if ch == "(":
            stack.append(m.start())
        elif ch == ")" and stack:
            stack.pop()
    return stack


def _block_name_before(text: str, pos: int) -> str:
    m = re.search(r'([^\x00-\x20()"]+)[\x00-\x20]*$', text[max(0, pos - 200) : pos])
    return m.group(1) if m else ""


def _syntax_error(source: Source, exc: UnexpectedInput) -> StfSyntaxError:
    text = _blank_first_line(source.text)
    offset = 0
    if isinstance(exc, UnexpectedCharacters):
        pos = offset + (exc.pos_in_stream or 0)
        ch = source.text[pos : pos + 1]
        if ch == '"':
            msg = "unterminated quoted string"
        else:
            msg = f"unexpected character {ch!r}"
        loc = source.location(pos)
        return StfSyntaxError(msg, loc, source.snippet(loc))
    if isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken) and exc.token.type == "$END"):
        opened = _open_blocks(text)
        if opened:
            pos = opened[-1]
            name = _block_name_before(text, pos)
            what = f"block {name!r}" if name else "a '(' block"
            msg = f"unexpected end of file: {what} opened here is not closed ({len(opened)} unclosed)"
            loc = source.location(offset + pos)
        else:
            msg = "unexpected end of file"
            loc = source.location(len(source.text))
        return StfSyntaxError(msg, loc, source.snippet(loc), ("')'",))
    assert isinstance(exc, UnexpectedToken)
    tok = exc.token
    pos = offset + (tok.start_pos or 0)
    loc = source.location(pos)
    expected = tuple(sorted({_TERMINAL_NAMES.get(t, t) for t in exc.expected}))
    if tok.type == "RPAR":
        msg = "unmatched ')': no block is open here"
    else:
        run = tok.value
        shown = (
            run.text[run.start : min(run.stop, run.start + 40)] if run.__class__ is _Run else str(tok)[:40]
        )
        msg = f"unexpected {_TERMINAL_NAMES.get(tok.type, tok.type)} {shown!r}"
    return StfSyntaxError(msg, loc, source.snippet(loc), expected)
