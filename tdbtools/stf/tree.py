"""The generic STF tree: blocks holding plain values, quoted strings and blocks.

A block the parser left as raw text (plain words and leaf blocks only) is split here,
when its items are first asked for; the parser uses the same splitting for such runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Union

from ..errors import Location
from .source import Source


class QStr(str):
    """A value that was written as a quoted string (``"a b"``), as opposed to a plain word."""

    __slots__ = ()


Item = Union[str, "Block"]


class Block:
    """``Name ( items )``: a named block. ``items`` keeps plain values (``str``), quoted
    strings (:class:`QStr`) and child blocks in file order. Names compare case-insensitively
    through :attr:`key`. The root of a file is a block with an empty name."""

    __slots__ = ("name", "key", "_items", "_raw", "_rawpos", "_rawend", "source", "pos", "hint")
    # Raw text is kept exactly while ``_items`` is None: ``_raw`` itself, or, when
    # ``_rawend`` >= 0, ``_raw[_rawpos:_rawend]`` with ``_raw`` the source's whole text
    # (a big table is then never copied out of it: see raw_span).
    _items: list[Any] | None
    _raw: Any

    def __init__(
        self,
        name: str,
        items: list[Any] | None,
        source: Source | None = None,
        pos: int = -1,
        raw: str | None = None,
        rawpos: int = -1,
        key: str | None = None,
        rawend: int = -1,
    ) -> None:
        self.name = name
        self.key = name.lower() if key is None else key
        # A block of plain words, or of plain words and leaf blocks, may be built from
        # its raw text and split only when its items are first asked for: bulk readers
        # take the text directly (values_text, leaf_view) and never make the objects.
        self._items = items
        self._raw = raw
        self._rawpos = rawpos
        self._rawend = rawend
        self.source = source
        self.pos = pos
        #: What the lexer's table-run hint found about a block kept raw (stf.parser's
        #: TABLE_RUN_ENDS), for its bulk reader: see take_hint.
        self.hint: Any = None

    @property
    def items(self) -> list[Any]:
        """Plain values (``str``), quoted strings (:class:`QStr`) and child blocks."""
        items = self._items
        if items is None:
            raw = self._raw_text()
            if '"' in raw:  # a table run holding quoted strings (stf.parser.split_quoted)
                items = QUOTED_SPLIT[0](self.source, self._rawpos, raw)
            elif "(" in raw:
                items = split_shallow(raw, self._rawpos, self.source)
            elif self.source is not None and self.source.exact_split:
                items = exact_split(raw)
            else:
                items = raw.split()
            self._items = items
            self._raw = None
        return items

    def raw(self) -> tuple[str, int] | None:
        """``(text, offset in the source)`` of a block still held as raw text (its
        items not split yet), else None: for bulk readers that scan the text themselves
        and fall back to :attr:`items` for anything unusual."""
        if self._items is None and self._raw is not None:
            return self._raw_text(), self._rawpos
        return None

    def take_hint(self) -> Any:
        """The table-run hint's payload of a block still held raw (else None), given once:
        the block forgets it (it may be large, and is of no use after its reader)."""
        hint, self.hint = self.hint, None
        return hint if self._items is None else None

    def raw_span(self) -> tuple[str, int, int] | None:
        """Like :meth:`raw` without a copy: ``(text, start, end)``, the raw content being
        ``text[start:end]``. ``text`` may be the source's whole text (a big table is not
        copied out of it), so scan it with ``pos``/``endpos``, never past ``end``."""
        if self._items is not None or self._raw is None:
            return None
        if self._rawend >= 0:
            return self._raw, self._rawpos, self._rawend
        return self._raw, 0, len(self._raw)

    def _raw_text(self) -> Any:
        raw = self._raw
        if raw is None or self._rawend < 0:
            return raw
        return raw[self._rawpos : self._rawend]

    def leaf_view(self) -> list | None:
        """The items with each child block given as ``(key, values_text)``, if every
        child block holds only plain words; else None. Reads lazily built blocks
        without making child objects, which is what bulk readers want."""
        raw = self._raw_text()
        exact = self.source is not None and self.source.exact_split
        if raw is not None and self._items is None and "\\" not in raw and '"' not in raw and not exact:
            if "(" not in raw:
                return raw.split()
            return leaf_view_of(raw)
        out: list = []
        for it in self.items:
            if it.__class__ is Block:
                text = it.values_text
                if text is None and it.items or exact:
                    return None
                out.append((it.key, text or ""))
            else:
                out.append(it)
        return out

    @property
    def values_text(self) -> str | None:
        """The raw text of a block that holds only plain words (no strings, no blocks),
        or None. Numeric readers hand it to numpy in one call."""
        raw = self._raw_text() if self._items is None else None
        if raw is not None:
            return raw if "(" not in raw and '"' not in raw else None
        items = self.items
        if items and all(i.__class__ is str for i in items):
            return " ".join(items)
        return None

    # -- navigation -----------------------------------------------------------------
    def blocks(self, name: str | None = None) -> Iterator[Block]:
        """Child blocks, optionally only those called ``name`` (any case)."""
        if name is None:
            return (i for i in self.items if i.__class__ is Block)
        key = name.lower()
        return (i for i in self.items if i.__class__ is Block and i.key == key)

    def find(self, name: str) -> Block | None:
        """The first child block called ``name`` (any case), or None."""
        key = name.lower()
        for i in self.items:
            if i.__class__ is Block and i.key == key:
                return i
        return None

    @property
    def values(self) -> list[str]:
        """The plain values and quoted strings, without child blocks."""
        return [i for i in self.items if i.__class__ is not Block]

    # -- where it came from ------------------------------------------------------------
    @property
    def location(self) -> Location | None:
        if self.source is None or self.pos < 0:
            return None
        return self.source.location(self.pos)

    def item_location(self, index: int) -> Location | None:
        """Best-effort location of ``items[index]``, found by re-scanning the block text."""
        if self.source is None or self.pos < 0:
            return None
        pos = locate_item(self.source.text, self.pos, index)
        return self.source.location(self.pos if pos is None else pos)

    def snippet(self, loc: Location | None) -> str:
        if loc is None or self.source is None or loc.path != self.source.path:
            return ""
        return self.source.snippet(loc)

    # -- comparison and dumping --------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Block):
            return NotImplemented
        # Iterative, so that deeply nested trees compare without recursion.
        stack: list[tuple[Any, Any]] = [(self, other)]
        while stack:
            a, b = stack.pop()
            if a.key != b.key or len(a.items) != len(b.items):
                return False
            for x, y in zip(a.items, b.items):
                xb, yb = x.__class__ is Block, y.__class__ is Block
                if xb != yb:
                    return False
                if xb:
                    stack.append((x, y))
                elif x != y:
                    return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        n = len(self.items)
        return f"Block({self.name!r}, {n} item{'s' if n != 1 else ''})"

    def to_json(self) -> dict:
        """A JSON-able dict: ``{"name": ..., "items": [str | {"quoted": str} | {...}]}``."""
        root: dict = {"name": self.name, "items": []}
        stack = [(self, root["items"])]
        while stack:
            blk, out = stack.pop()
            for it in blk.items:
                if it.__class__ is Block:
                    d = {"name": it.name, "items": []}
                    out.append(d)
                    stack.append((it, d["items"]))
                elif it.__class__ is QStr:
                    out.append({"quoted": str(it)})
                else:
                    out.append(str(it))
        return root


class Document(Block):
    """The root of a parsed file: its top-level items, plus the file's signature line."""

    __slots__ = ("signature", "includes")

    def __init__(self, items: list[Item], source: Source, includes: tuple[str, ...] = ()) -> None:
        super().__init__("", items, source, -1)
        self.signature = source.signature
        #: Every file read through ``include`` (resolved paths), for cache invalidation.
        self.includes = includes

    @property
    def path(self) -> str:
        return self.source.path if self.source else ""

    def to_json(self) -> dict:
        d = super().to_json()
        d["signature"] = self.signature
        d["path"] = self.path
        return d


# -- splitting raw text -------------------------------------------------------------

#: Block names whose block is a comment (as are names starting with "#" or "_").
COMMENT_WORDS = frozenset(("comment", "skip"))

#: Splits the raw content of a block that holds quoted strings (a table run the STF
#: lexer took whole): ``(source, offset, raw) -> items``; set by stf.parser, which
#: parses it with the STF grammar.
QUOTED_SPLIT: list[Any] = []

_PAREN_SPLIT = re.compile(r"([()])").split

_STF_SPACE = re.compile("[\x00-\x20]+")


def exact_split(text: str) -> list[str]:
    """Split on STF white space only (codes 0..32)."""
    return [w for w in _STF_SPACE.split(text) if w]


def split_words(text: str, source: Source | None) -> list[str]:
    """Plain words of ``text`` (:func:`exact_split` when the source needs it)."""
    return exact_split(text) if source is not None and source.exact_split else text.split()


_KEYS: dict[str, tuple[str, int]] = {}
_NORMAL, _COMMENT, _INCLUDE_BLOCK = 0, 1, 2


def _key(name: str) -> tuple[str, int]:
    """(lower-cased name, kind) of a block name; cached: names repeat by the thousand."""
    hit = _KEYS.get(name)
    if hit is None:
        low = name.lower()
        kind = (
            _COMMENT
            if name[:1] in ("#", "_") or low in COMMENT_WORDS
            else _INCLUDE_BLOCK
            if low == "include"
            else _NORMAL
        )
        hit = (low, kind)
        if len(_KEYS) < 50_000:  # bounded: hostile input could have endless names
            _KEYS[name] = hit
    return hit


def split_items(text: str, start: int, src: Source | None, out: list, on_include, lazy: bool) -> None:
    """Split plain words and nested blocks (no strings, no escapes) into ``out``.

    ``start`` is the offset of ``text`` in the source. Comment blocks are dropped and
    include blocks handed to ``on_include(parent_items, block)`` at any depth. With ``lazy``, a block that
    holds only plain words and leaf blocks keeps its raw text (see Block.items).
    """
    wsplit = exact_split if src is not None and src.exact_split else str.split
    parts = _PAREN_SPLIT(text)  # [text, "(" or ")", text, ..., text]
    n = len(parts)
    last = n - 1
    cur = out
    stack: list[list] = []
    # How many comment blocks enclose `cur` (their content is dropped: an include in
    # one is not followed, as with the full grammar), and which stack levels are those.
    muted = 0
    comment_levels: list[bool] = []
    off = start  # offset of parts[k] in the source text
    k = 0
    while k < last:
        seg = parts[k]
        if parts[k + 1] == ")":
            if seg and not seg.isspace():
                cur.extend(wsplit(seg))
            cur = stack.pop()
            if comment_levels.pop():
                muted -= 1
            off += len(seg) + 1
            k += 2
            continue
        words = wsplit(seg)
        if words:
            name = words.pop()
            if words:
                cur.extend(words)
            npos = off + seg.rfind(name)
        else:  # an anonymous ( ... ) right after another block
            name = ""
            npos = off + len(seg)
        key, kind = _key(name)
        inner_pos = off + len(seg) + 1
        if parts[k + 3] == ")":  # a leaf: Name ( plain words )
            inner = parts[k + 2]
            if kind == _NORMAL:
                cur.append(Block(name, None, src, npos, inner, inner_pos, key))
            elif kind == _INCLUDE_BLOCK and not muted:
                on_include(cur, Block(name, None, src, npos, inner, inner_pos, key))
            off = inner_pos + len(inner) + 1
            k += 4
            continue
        if lazy and kind == _NORMAL:
            # Name ( words Leaf ( words ) words Leaf ( words ) ... ): only leaves inside?
            j = k + 3
            while j + 2 < n and parts[j] == "(" and parts[j + 2] == ")":
                j += 4
            if j - 2 < n and parts[j - 2] == ")" and parts[j] == ")" and j > k + 3:
                inner = "".join(parts[k + 2 : j])
                if "nclude" not in inner and "NCLUDE" not in inner:
                    cur.append(Block(name, None, src, npos, inner, inner_pos, key))
                    off = inner_pos + len(inner) + 1
                    k = j + 1
                    continue
        comment_levels.append(kind == _COMMENT)
        if kind == _NORMAL:
            kids: list[Any] = []
            blk = Block(name, kids, src, npos, None, -1, key)
            cur.append(blk)
            stack.append(cur)
            cur = kids
        elif kind == _INCLUDE_BLOCK:
            kids = []
            blk = Block(name, kids, src, npos, None, -1, key)
            if not muted:
                on_include(cur, blk)
            stack.append(cur)
            cur = kids
        else:
            stack.append(cur)
            cur = []  # a comment block: its content is dropped
            muted += 1
        off = inner_pos
        k += 2
    seg = parts[last]
    if seg and not seg.isspace():
        cur.extend(wsplit(seg))


def split_shallow(raw: str, rawpos: int, src: Source | None) -> list:
    """Items of a lazily built block (see Block.items)."""
    out: list = []

    def no_include(_cur, inc):  # lazy blocks never hold include blocks
        raise AssertionError("include inside a lazily built block")

    # lazy: a block deferred by the parser (parse_source's defer) may hold deep blocks;
    # its children are then built as the parser builds them.
    split_items(raw, rawpos, src, out, no_include, lazy=True)
    return out


def leaf_view_of(raw: str) -> list:
    """``Name ( a b ) c D ( e )`` → ``[("name", " a b "), "c", ("d", " e ")]`` (see Block.leaf_view)."""
    segs = raw.replace(")", "(").split("(")
    out: list = []
    last = len(segs) - 1
    for k in range(0, last, 2):
        words = segs[k].split()
        name = words.pop() if words else ""  # "" : an anonymous ( ... ) group
        if words:
            out.extend(words)
        key, kind = _key(name)
        if kind == _NORMAL:
            out.append((key, segs[k + 1]))
    if segs[last] and not segs[last].isspace():
        out.extend(segs[last].split())
    return out


# -- locating items in the source text ---------------------------------------------

_ITEM_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"(?:[\x00-\x20]*\+[\x00-\x20]*"(?:[^"\\]|\\.)*")*|[()]|[^\x00-\x20()"]+'
)


def locate_item(text: str, block_pos: int, index: int) -> int | None:
    """Offset of item ``index`` of the block whose name starts at ``block_pos`` (counting
    values, strings and child blocks at depth one), or None if it cannot be found."""
    offsets = _item_offsets(text, block_pos)
    return offsets[index] if 0 <= index < len(offsets) else None


#: The item offsets of the last block scanned (text, block_pos, offsets): a lenient read
#: may report thousands of defects in one big block, which must not rescan it each time.
_last_offsets: tuple = (None, -1, [])


def _item_offsets(text: str, block_pos: int) -> list[int]:
    global _last_offsets
    last = _last_offsets  # one read of an immutable tuple: safe with threads
    if last[0] is text and last[1] == block_pos:
        return last[2]
    out: list[int] = []
    depth = 0
    prev_word = None
    for m in _ITEM_TOKEN.finditer(text, block_pos):
        tok = m.group()
        if tok == "(":
            depth += 1
            if depth == 2 and prev_word is None:
                out.append(m.start())  # an anonymous ( ... ) group
            # (a child block was already counted at its name)
            prev_word = None
            continue
        if tok == ")":
            depth -= 1
            if depth <= 0:
                break
            continue
        if depth == 1:
            out.append(m.start())
            prev_word = m.start()
        else:
            prev_word = None
    _last_offsets = (text, block_pos, out)
    return out
