"""The generic STF tree: blocks holding plain values, quoted strings and blocks."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Union

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

    __slots__ = ("name", "key", "_items", "_raw", "_rawpos", "source", "pos")

    def __init__(self, name: str, items: list[Item] | None, source: Source | None = None,
                 pos: int = -1, raw: str | None = None, rawpos: int = -1, key: str | None = None) -> None:
        self.name = name
        self.key = name.lower() if key is None else key
        # A block of plain words, or of plain words and leaf blocks, may be built from
        # its raw text and split only when its items are first asked for: bulk readers
        # take the text directly (values_text, leaf_view) and never make the objects.
        self._items = items
        self._raw = raw
        self._rawpos = rawpos
        self.source = source
        self.pos = pos

    @property
    def items(self) -> list[Item]:
        items = self._items
        if items is None:
            raw = self._raw
            if "(" in raw:  # type: ignore[operator]
                from .parser import split_shallow
                items = split_shallow(raw, self._rawpos, self.source)
            elif self.source is not None and self.source.exact_split:
                from .parser import exact_split
                items = exact_split(raw)  # type: ignore[arg-type]
            else:
                items = raw.split()  # type: ignore[union-attr]
            self._items = items
            self._raw = None
        return items

    def leaf_view(self) -> list | None:
        """The items with each child block given as ``(key, values_text)``, if every
        child block holds only plain words; else None. Reads lazily built blocks
        without making child objects, which is what bulk readers want."""
        raw = self._raw
        exact = self.source is not None and self.source.exact_split
        if raw is not None and self._items is None and "\\" not in raw and not exact:
            if "(" not in raw:
                return raw.split()
            from .parser import leaf_view_of
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
        raw = self._raw
        if raw is not None and self._items is None:
            return raw if "(" not in raw else None
        items = self.items
        if items and all(i.__class__ is str for i in items):
            return " ".join(items)  # type: ignore[arg-type]
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
        from .parser import locate_item  # only needed on the error path
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
        stack = [(self, other)]
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
