"""The record classes a cache entry may hold, and the check that a decoded record holds
in each field a value of the field's annotated type (:func:`conforms`): part of the route
cache (``cache.py``, docs/security.md §1)."""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable
from itertools import chain as _chain
from typing import Any

from .cache_lazy import _LazyTuple

_RECORD_MODULES = (
    "tdbtools.errors",
    "tdbtools.formats.trk",
    "tdbtools.formats.tdb_records",
    "tdbtools.formats.tsection",
    "tdbtools.formats.route",
    # the signals' inputs (RecordCache "signals")
    "tdbtools.formats.sigcfg",
    "tdbtools.formats.world",
)


_CLASSES: dict[str, type] = {}
_TAGS: dict[type, str] = {}
_FIELDS: dict[type, tuple[str, ...]] = {}


def _registry() -> None:
    if _CLASSES:
        return
    import importlib

    for name in _RECORD_MODULES:
        mod = importlib.import_module(name)
        for obj in vars(mod).values():
            if not isinstance(obj, type) or obj.__module__ != mod.__name__:
                continue
            if dataclasses.is_dataclass(obj) or issubclass(obj, enum.Enum):
                # Class names start with a capital: they never clash with the one-letter
                # lower-case markers of the encoding.
                tag = obj.__name__ if obj.__name__ not in _CLASSES else f"{name}.{obj.__name__}"
                _CLASSES[tag] = obj
                _TAGS[obj] = tag
                if dataclasses.is_dataclass(obj):
                    _FIELDS[obj] = tuple(f.name for f in dataclasses.fields(obj) if f.init)


_CHECKS: dict[Any, Any] = {}
_PLAIN = (int, float, str, bool)


def conforms(root: Any) -> bool:
    """True if the record ``root`` and every record in it hold in each field a value of
    the field's annotated type. A decoded entry has only registered classes, but any
    values in their fields: it is checked before use (docs/security.md §1)."""
    _registry()
    try:
        return root.__class__ in _FIELDS and _check(root.__class__)(root, set())
    except (TypeError, NameError, AttributeError, RecursionError):
        return False


def _check(tp: Any) -> Callable[[Any, set[int]], bool]:
    """A function ``(value, seen) -> bool`` telling whether a value is of type ``tp``,
    made once per type (``seen``: ids of the records already checked)."""
    hit = _CHECKS.get(tp)
    if hit is not None:
        return hit
    origin, args = typing.get_origin(tp), typing.get_args(tp)

    def check(v: Any, seen: set[int]) -> bool:
        return False  # a type the cache never holds

    if tp is Any:

        def check(v: Any, seen: set[int]) -> bool:
            return True

    elif tp is float:

        def check(v: Any, seen: set[int]) -> bool:
            return v.__class__ is float or v.__class__ is int

    elif tp is type(None) or tp is None:

        def check(v: Any, seen: set[int]) -> bool:
            return v is None

    elif tp is tuple:  # a bare tuple: of plain values

        def check(v: Any, seen: set[int]) -> bool:
            return v.__class__ is tuple and all(x is None or x.__class__ in _PLAIN for x in v)

    elif origin is typing.Union or origin is types.UnionType:
        parts = [_check(a) for a in args if a is not type(None)]
        optional = len(parts) < len(args)

        def check(v: Any, seen: set[int]) -> bool:
            return (optional and v is None) or any(p(v, seen) for p in parts)

    elif origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        inner = _check(args[0])
        item = args[0]
        plain = _plain_classes(item)

        def check(v: Any, seen: set[int]) -> bool:
            if v.__class__ is _LazyTuple:  # its records' classes, without making it
                return all(_takes(item, c) for c in v.kinds) and (not v.none or _takes(item, type(None)))
            if v.__class__ is not tuple:
                return False
            # (the classes of its items found in C: plain values and records of checked
            # tables need nothing more; a route holds hundreds of thousands of them)
            kinds = set(map(type, v))
            if kinds <= plain or all(
                k in plain or (k in getattr(seen, "classes", ()) and _takes(item, k)) for k in kinds
            ):
                return True
            return all(inner(x, seen) for x in v)

    elif origin is tuple:
        items = [_check(a) for a in args]

        def check(v: Any, seen: set[int]) -> bool:
            return v.__class__ is tuple and len(v) == len(items) and all(p(x, seen) for p, x in zip(items, v))

    elif origin is dict:
        kf, vf = _check(args[0]), _check(args[1])
        keys = _plain_classes(args[0])
        vargs = typing.get_args(args[1])
        # dict[K, tuple[X, ...]] of plain K and X (a route's dynamic-track paths): checked in C
        flat = (
            _plain_classes(vargs[0])
            if typing.get_origin(args[1]) is tuple and len(vargs) == 2 and vargs[1] is Ellipsis
            else set()
        )

        def check(v: Any, seen: set[int]) -> bool:
            if v.__class__ is not dict:
                return False
            if (
                keys
                and flat
                and set(map(type, v)) <= keys
                and set(map(type, v.values())) <= {tuple}
                and set(map(type, _chain.from_iterable(v.values()))) <= flat
            ):
                return True
            return all(kf(k, seen) and vf(x, seen) for k, x in v.items())

    elif origin is None and isinstance(tp, type):
        subclasses: list[type] = tp.__subclasses__()
        record = tp in _FIELDS or any(c in _FIELDS for c in subclasses)

        def check(v: Any, seen: set[int]) -> bool:
            return isinstance(v, tp) and (not record or _record_fits(v, seen))

    _CHECKS[tp] = check
    return check


_RECORD_CHECKS: dict[type, tuple] = {}


def _plain_classes(tp: Any) -> set[type]:
    """The classes of plain values a field of type ``tp`` holds as they are (no record)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return set().union(*(_plain_classes(a) for a in typing.get_args(tp)))
    if tp is None or tp is type(None):
        return {type(None)}
    if tp is float:
        return {float, int}
    if tp in (int, str, bool):
        return {tp}
    return set()


class _Trusted(set):
    """``seen`` for the checks while an entry is built: records of ``classes`` come from
    tables whose columns were checked against their fields' types (not checked again)."""

    def __init__(self) -> None:
        super().__init__()
        self.classes: set[type] = set()


_FIELD_TYPES: dict[type, tuple] = {}


def _field_types(cls: type) -> tuple:
    """The annotated types of a record class's fields, in _FIELDS order."""
    got = _FIELD_TYPES.get(cls)
    if got is None:
        hints = typing.get_type_hints(cls)
        got = _FIELD_TYPES[cls] = tuple(hints[n] for n in _FIELDS[cls])
    return got


def _takes(tp: Any, cls: type) -> bool:
    """True if a field of type ``tp`` may hold an instance of ``cls`` (a record class or NoneType)."""
    if tp is Any:
        return True
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return any(_takes(a, cls) for a in typing.get_args(tp))
    if tp is None:
        tp = type(None)
    return isinstance(tp, type) and issubclass(cls, tp)


def _items_of(tp: Any) -> list[Any]:
    """The item types X of the ``tuple[X, ...]`` that a field of type ``tp`` may hold."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return [x for a in typing.get_args(tp) for x in _items_of(a)]
    args = typing.get_args(tp)
    if typing.get_origin(tp) is tuple and len(args) == 2 and args[1] is Ellipsis:
        return [args[0]]
    return []


def _record_fits(v: Any, seen: set[int]) -> bool:
    if id(v) in seen or v.__class__ in getattr(seen, "classes", ()):
        return True
    seen.add(id(v))
    cls = v.__class__
    checks = _RECORD_CHECKS.get(cls)
    if checks is None:
        if cls not in _FIELDS:
            return False
        hints = typing.get_type_hints(cls)
        checks = _RECORD_CHECKS[cls] = tuple((n, _check(hints[n])) for n in _FIELDS[cls])
    return all(f(getattr(v, n), seen) for n, f in checks)
