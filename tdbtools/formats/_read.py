"""Shared helpers for the typed readers: value conversion with exact error locations."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..errors import Diagnostics, FormatError, Location, UnitError, truncate_value
from ..stf.tree import Block
from ..stf.units import parse_quantity, split_quantity

T = TypeVar("T")


def check_size(path: str | Path, limit: int, what: str) -> None:
    """Refuse ``path`` before it is parsed when it holds more than ``limit`` bytes (a located
    error at its start, in lenient mode too: docs/security.md §2)."""
    try:
        size = os.stat(path).st_size
    except (OSError, ValueError):
        return  # the reader reports a missing file as it always has
    if size > limit:
        raise FormatError(
            f"{what} of {size} bytes: more than the limit of {limit} bytes (docs/security.md §2)",
            Location(str(path), 1, 1),
        )


def _clean(text: str) -> str:
    # Open Rails strips one trailing comma, and reads floats with AllowThousands.
    return text[:-1] if text.endswith(",") else text


def to_int(text: str) -> int:
    return int(_clean(text))


def to_uint(text: str) -> int:
    v = int(_clean(text))
    if v < 0 or v > 0xFFFFFFFF:
        raise ValueError("out of range for an unsigned 32-bit value")
    return v


def to_int32(text: str) -> int:
    """A 32-bit integer, signed or unsigned (tiles, world-file ids): numpy tables of
    int64 are made from these, so a 30-digit value must not get through."""
    v = int(_clean(text))
    if not -(1 << 31) <= v <= 0xFFFFFFFF:
        raise ValueError("out of range for a 32-bit value")
    return v


def to_int53(text: str) -> int:
    """An integer that a float64 holds exactly (|v| <= 2**53): integer columns that are
    read through float arrays (TrVectorSections)."""
    v = int(_clean(text))
    if abs(v) > 1 << 53:
        raise ValueError("out of range for an integer column")
    return v


def to_float(text: str) -> float:
    t = _clean(text)
    if "," in t:
        t = t.replace(",", "")  # thousands separators: '1,5' reads as 15, as in Open Rails
    v = float(t)
    if not math.isfinite(v):
        raise ValueError("not a finite number")
    return v


def to_hex(text: str) -> int:
    v = int(text, 16)
    if v < 0 or v > 0xFFFFFFFF:
        raise ValueError("out of range for a 32-bit flag")
    return v


_KIND: dict[Callable[[str], Any], str] = {
    to_int: "an integer",
    to_int32: "an integer",
    to_int53: "an integer",
    to_uint: "an unsigned integer",
    to_float: "a number",
    to_hex: "a hexadecimal flag",
}


class Reader:
    """Reads values out of generic blocks for one file, reporting defects through
    :class:`Diagnostics` (strict: raise; lenient: record and use a default)."""

    __slots__ = ("diags",)

    def __init__(self, diags: Diagnostics) -> None:
        self.diags = diags

    def error(self, block: Block, message: str, index: int | None = None, cls: type = FormatError):
        loc = block.item_location(index) if index is not None else block.location
        if loc is None and block.source is not None:
            loc = Location(block.source.path, 1, 1)  # e.g. an empty file: at least name it
        return cls(message, loc, block.snippet(loc))

    def quantity(self, block: Block, index: int, *families: str, default: float) -> float:
        """A number with an optional unit suffix, in SI. An unknown suffix is a
        :class:`UnitError`; lenient mode then uses the number as it is (factor 1), as
        Open Rails does."""
        items = block.items
        if index >= len(items) or items[index].__class__ is Block:
            self.problem(block, f"{block.name}: missing value {index + 1}")
            return default
        return self.quantity_of(block, str(items[index]), index, families, default)

    def quantity_of(
        self, block: Block, raw: str, index: int | None, families: tuple[str, ...], default: T
    ) -> float | T:
        """``raw`` (a value of ``block``, at ``index``) in SI: an unknown unit is a
        UnitError, or in lenient mode the number with factor 1 as Open Rails reads it; a
        value that is no number is reported and gives ``default``."""
        try:
            return parse_quantity(raw, *families)
        except UnitError as exc:
            self.diags.problem(self.error(block, f"{block.name}: {exc.message}", index, UnitError))
            return split_quantity(raw)[0]
        except ValueError as exc:
            self.problem(block, f"{block.name or 'block'}: {exc}", index)
            return default

    def problem(self, block: Block, message: str, index: int | None = None) -> None:
        self.diags.problem(self.error(block, message, index))

    def value(self, block: Block, index: int, conv: Callable[[str], T], default: T, what: str = "") -> T:
        items = block.items
        if index >= len(items):
            self.problem(
                block,
                f"{block.name or 'block'}: missing value {index + 1}{' (' + what + ')' if what else ''}",
            )
            return default
        raw = items[index]
        if raw.__class__ is Block:
            self.problem(
                block,
                f"{block.name}: expected {_KIND.get(conv, 'a value')}"
                f"{' (' + what + ')' if what else ''}, found block {truncate_value(raw.name)}",
                index,
            )
            return default
        try:
            return conv(raw)
        except (ValueError, OverflowError) as exc:
            detail = f": {exc}" if "range" in str(exc) or "finite" in str(exc) else ""
            self.problem(
                block,
                f"{block.name}: expected {_KIND.get(conv, 'a value')}"
                f"{' (' + what + ')' if what else ''}, found {truncate_value(raw)}{detail}",
                index,
            )
            return default

    def string(self, block: Block, index: int = 0, default: str = "") -> str:
        items = block.items
        if index >= len(items) or items[index].__class__ is Block:
            self.problem(block, f"{block.name}: missing text value")
            return default
        return str(items[index])

    def require(self, parent: Block, name: str) -> Block | None:
        blk = parent.find(name)
        if blk is None:
            self.problem(parent, f"{parent.name or 'file'}: missing block {name!r}")
        return blk

    def expect_count(self, block: Block, found: int, expected: int, what: str, index: int = 0) -> None:
        if found != expected:
            self.problem(block, f"{block.name}: the count says {expected} {what}, found {found}", index)
