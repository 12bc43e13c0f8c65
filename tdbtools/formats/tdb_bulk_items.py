"""The bulk reader of a ``.tdb``'s TrItemTable (docs/formats.md §6.6): the items matched with
the terminals of ``grammars/tdb_items.lark``; None wherever the tree path of :mod:`.tdb`
must read the table."""

from __future__ import annotations

import functools
import math
import operator
import re
import threading
from collections.abc import Callable
from typing import Any

from ..stf.parser import ITEM_TABLE_RUN_ENDS
from ..stf.tree import Block
from .tdb_bulk_nodes import (
    _RUN_CLOSE,
    _terminal_regexps,
)
from .tdb_records import (
    _UINT_MAX,
    CarSpawnerItem,
    CrossoverItem,
    EmptyItem,
    HazzardItem,
    LevelCrItem,
    PData,
    PickupItem,
    PlatformItem,
    RData,
    SData,
    SidingItem,
    SignalDir,
    SignalItem,
    SoundRegionItem,
    SpeedPostItem,
    TrItem,
)

# -- the bulk reader of the TrItemTable --------------------------------------------------
#
# As for TrackNodes: when the lexer gave the table's content as one run of raw text
# (stf_bulk.lark, and _item_table_run_end for a table holding quoted names), the items
# are matched one after the other with the regular expressions of the terminals of
# grammars/tdb_items.lark. Only content that the tree path (_TdbReader._items) reads
# without a single finding is accepted; anything else returns None and the tree path
# reads the table and reports what it finds. Same records either way (tests check).


class _ItemPatterns:
    def __init__(self) -> None:
        terms = _terminal_regexps("tdb_items.lark")
        self.count = re.compile(r"[\x00-\x20]*(" + terms["COUNT"] + ")")
        ws = r"[\x00-\x20]+"
        #: item type as written -> (its shape, what makes the record of its groups, what
        #: puts its groups in order or None)
        self.shapes: dict[str, tuple[Any, Callable[[int, tuple], TrItem | None], Any]] = {}
        for cls, term, maker in (
            (EmptyItem, "EMPTY", _plain_item(EmptyItem)),
            (CrossoverItem, "CROSSOVER", _crossover),
            (SignalItem, "SIGNAL", _signal),
            (SpeedPostItem, "SPEEDPOST", _speedpost),
            (PlatformItem, "PLATFORM", _platform),
            (SidingItem, "SIDING", _siding),
            (SoundRegionItem, "SOUNDREGION", _soundregion),
            (LevelCrItem, "LEVELCR", _plain_item(LevelCrItem)),
            (HazzardItem, "HAZZARD", _plain_item(HazzardItem)),
            (PickupItem, "PICKUP", _plain_item(PickupItem)),
            (CarSpawnerItem, "CARSPAWNER", _plain_item(CarSpawnerItem)),
        ):
            rx = re.compile(ws + terms[term])
            self.shapes[cls.token] = (rx.match, maker, _head_order(rx, terms[term]))
        self.name = re.compile(r"[\x00-\x20]+([A-Za-z]{1,20})[\x00-\x20]*\(").match
        self.number = re.compile(terms["NUMBER"]).fullmatch
        self.signal_dir = re.compile(
            r"\([\x00-\x20]*([0-9]+)[\x00-\x20]+([0-9]+)[\x00-\x20]+([0-9]+)[\x00-\x20]+([0-9]+)"
        )
        self.tail = re.compile(r"[\x00-\x20]*\Z")


#: The head blocks of an item (tdb_items.lark _HEAD) and their groups, in group order.
_HEAD_BLOCKS = (("TrItemId", 1), ("TrItemSData", 2), ("TrItemPData", 4), ("TrItemRData", 5))


def _head_order(rx: re.Pattern, text: str) -> Callable[[tuple], tuple] | None:
    """What puts a shape's groups in the order of tdb_items.lark's comment (0 TrItemId,
    1-2 SData, 3-6 PData, 7-11 RData, then the type's), or None if they are: the head's
    blocks may come in any order, and Lark writes their alternatives longest first, which
    numbers the groups so."""
    where = sorted((text.find(name + "["), name, n) for name, n in _HEAD_BLOCKS)
    if any(pos < 0 for pos, _name, _n in where):
        raise ValueError("tdb_items.lark: a head block is missing from a shape")
    first: dict[str, int] = {}
    at = 0
    for _pos, name, n in where:
        first[name] = at
        at += n
    perm = [first[name] + k for name, n in _HEAD_BLOCKS for k in range(n)] + list(range(at, rx.groups))
    return None if perm == list(range(rx.groups)) else operator.itemgetter(*perm)


@functools.cache
def _item_patterns() -> _ItemPatterns:
    return _ItemPatterns()


def _common(index: int, g: tuple) -> tuple[int, int | None, SData | None, RData | None, PData | None]:
    """The five fields of TrItem from groups 0-11 (see tdb_items.lark): the numbers
    there are ones that to_uint, to_int32 and to_float read as int() and float() do."""
    return (
        index,
        None if g[0] is None else int(g[0]),
        None if g[1] is None else SData(float(g[1]), g[2]),
        None if g[7] is None else RData(float(g[7]), float(g[8]), float(g[9]), int(g[10]), int(g[11])),
        None if g[3] is None else PData(float(g[3]), float(g[4]), int(g[5]), int(g[6])),
    )


def _plain_item(cls: type[TrItem]) -> Callable[[int, tuple], TrItem | None]:
    def make(index: int, g: tuple) -> TrItem | None:
        return cls(*_common(index, g))

    return make


def _crossover(index: int, g: tuple) -> TrItem | None:
    if g[12] is None:
        return CrossoverItem(*_common(index, g))
    return CrossoverItem(*_common(index, g), int(g[12]), int(g[13]))


def _signal(index: int, g: tuple) -> TrItem | None:
    extra: dict = {}
    if g[12] is not None:
        extra = {
            "flags": g[12],
            "direction": int(g[13]),
            "sig_data1": float(g[14]),
            "signal_type": g[15].lower(),
        }
    if g[16] is not None:
        dirs = tuple(SignalDir(*map(int, d)) for d in _item_patterns().signal_dir.findall(g[17]))
        if len(dirs) != int(g[16]):
            return None  # "TrSignalDirs: the count says ..."
        extra["signal_dirs"] = dirs
    return SignalItem(*_common(index, g), **extra)


def _speedpost(index: int, g: tuple) -> TrItem | None:
    if g[12] is None:
        return SpeedPostItem(*_common(index, g))
    # As _TdbReader._speedpost, for values it reads without a finding.
    values = g[12].split()
    number = _item_patterns().number
    if not 2 <= len(values) <= 4 or not all(map(number, values)) or not values[0].isdigit():
        return None
    flags = int(values[0])
    if flags > _UINT_MAX:
        return None
    extra: dict = {"flags": flags}
    i = 1
    if flags & 3 != 3:
        v = float(values[i])
        if flags & 3 == 0 and not flags & (1 << 9):
            v = float(int(v))
        extra["value"] = v
        i += 1
    if flags & (1 << 4):
        if i >= len(values) or not _SIGNED.fullmatch(values[i]):
            return None
        extra["display_number"] = int(values[i])
        i += 1
    if len(values) != i + 1:
        return None
    extra["angle"] = math.remainder(float(values[i]), 2 * math.pi)
    return SpeedPostItem(*_common(index, g), **extra)


_SIGNED = re.compile(r"-?[0-9]{1,18}")


def _name(quoted: str | None, plain: str | None) -> str | None:
    return quoted if quoted is not None else plain


def _linked_named(g: tuple, name_field: str) -> dict:
    """The flags, linked item and name (into ``name_field``) that platforms and sidings
    share, as keyword arguments: only those the item gives."""
    extra: dict = {}
    if g[12] is not None:
        extra["flags"] = g[12]
        extra["linked_item"] = int(g[13])
    name = _name(g[14], g[15])
    if name is not None:
        extra[name_field] = name
    return extra


def _platform(index: int, g: tuple) -> TrItem | None:
    extra = _linked_named(g, "platform_name")
    station = _name(g[16], g[17])
    if station is not None:
        extra["station"] = station
    if g[18] is not None:
        extra["min_waiting_time"] = int(g[18])
    if g[19] is not None:
        extra["passengers_waiting"] = int(g[19])
    return PlatformItem(*_common(index, g), **extra)


def _siding(index: int, g: tuple) -> TrItem | None:
    return SidingItem(*_common(index, g), **_linked_named(g, "siding_name"))


def _soundregion(index: int, g: tuple) -> TrItem | None:
    if g[12] is None:
        return SoundRegionItem(*_common(index, g))
    return SoundRegionItem(*_common(index, g), (int(g[12]), int(g[13]), float(g[14])))


def read_bulk_items(table: Block) -> list[TrItem] | None:
    """The items of a TrItemTable block held as raw text, or None if the block is not
    raw or the tree path is needed (see above)."""
    span = table.raw_span()
    if span is None or (table.source is not None and table.source.exact_split):
        return None
    text, pos, end = span
    walk = _WALKS.take(text, pos, end) or _walk_items(text, pos, end)
    if walk is None:
        return None
    count, last, items = walk
    if items is None or len(items) != count or _item_patterns().tail.match(text, last, end) is None:
        return None
    return items


def _walk_items(text: str, pos: int, end: int) -> tuple[int, int, list[TrItem] | None] | None:
    """Walks the items of the shapes of tdb_items.lark from ``pos`` (the content of a
    TrItemTable) within ``end``: (the count, where the last item ends, the items, or
    None where a value is one the tree path reports), or None at the first text of
    another shape."""
    pat = _item_patterns()
    m = pat.count.match(text, pos, end)
    if m is None:
        return None
    count = int(m.group(1))
    pos = m.end()
    name, shapes = pat.name, pat.shapes
    out: list[TrItem] | None = []
    while True:
        mn = name(text, pos, end)
        if mn is None:
            break
        shape = shapes.get(mn.group(1))
        if shape is None:
            return None
        mi = shape[0](text, pos, end)
        if mi is None:
            return None
        if out is not None:
            g = mi.groups()
            item = shape[1](len(out), g if shape[2] is None else shape[2](g))
            if item is None:
                out = None  # the tree path reads the table; the walk goes on for its end
            else:
                out.append(item)
        pos = mi.end()
    return count, pos, out


class _Walks(threading.local):
    """The last walk of _item_table_run_end in this thread, for read_bulk_items: the
    lexer's pre-pass and the reader then walk the table once (~0.15 s at 30,000 items).
    Taken only for the same offsets and the same text (the lexer's copy of the file
    differs on line 1 only; a lenient re-parse walks its own text again)."""

    def __init__(self) -> None:
        self.last: tuple[int, int, str, tuple] | None = None

    def keep(self, text: str, pos: int, end: int, walk: tuple) -> None:
        self.last = (pos, end, text[pos:end], walk)

    def take(self, text: str, pos: int, end: int) -> tuple | None:
        last, self.last = self.last, None
        if last is None or last[0] != pos or last[1] != end or not text.startswith(last[2], pos):
            return None
        return last[3]


_WALKS = _Walks()


def _item_table_run_end(text: str, pos: int) -> int | None:
    """Where the content of a TrItemTable that starts at ``pos`` ends, if it is a count
    and items of the shapes of grammars/tdb_items.lark, then white space and the
    table's ")"; else None (the lexer then reads the table as it did). Unlike the
    TrackNodes run, the content may hold quoted names, which the DATA regex stops at:
    the lexer's single token for it is then kept raw only (stf_bulk.lark's note),
    and its items are made by the STF grammar if ever asked for (same tree)."""
    walk = _walk_items(text, pos, len(text))
    if walk is None:
        return None
    end = walk[1]
    if _RUN_CLOSE.match(text, end) is None or text.find("\\", pos, end) >= 0:
        return None
    _WALKS.keep(text, pos, end, walk)
    return end


ITEM_TABLE_RUN_ENDS["tdb"] = _item_table_run_end
