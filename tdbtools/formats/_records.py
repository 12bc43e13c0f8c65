"""Fast pickling for the frozen, slotted record dataclasses.

The default pickling of a slotted dataclass calls a Python ``__setstate__`` that
looks up the fields of every object: most of the time of a warm (cached) route
load. Reducing to ``(cls, field values)`` rebuilds each record with one call.
"""

from __future__ import annotations

from dataclasses import fields
from operator import attrgetter


def fast_pickle(*classes: type) -> None:
    for cls in classes:
        names = [f.name for f in fields(cls) if f.init]
        get = attrgetter(*names)
        if len(names) == 1:

            def reduce(self, _get=get):  # noqa: ANN001
                return (self.__class__, (_get(self),))
        else:

            def reduce(self, _get=get):  # noqa: ANN001
                return (self.__class__, _get(self))

        cls.__reduce__ = reduce  # type: ignore[method-assign,assignment]
