"""The base of every replay event (docs/physics.md §6), below every layer that records
events: the signalling runtime (:mod:`tdbtools.signals.events`) and the replay
(:mod:`tdbtools.physics.events`) derive theirs from :class:`ReplayEvent`, as every error
derives from :class:`tdbtools.errors.TdbToolsError`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar


def _plain(v: Any) -> Any:
    """A field value as JSON-ready Python (tuples become lists, records dicts)."""
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if hasattr(v, "to_dict"):  # a record (an event, or physics' EventLocation)
        return v.to_dict()
    return v


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayEvent:
    """Base of every replay event: ``time`` is simulated seconds since the start."""

    kind: ClassVar[str] = ""
    _optional: ClassVar[frozenset[str]] = frozenset()

    time: float

    def to_dict(self) -> dict[str, Any]:
        """The event as the JSON object of ``events.json``."""
        d: dict[str, Any] = {"kind": self.kind}
        for f in fields(self):
            v = getattr(self, f.name)
            if v is None and f.name in self._optional:
                continue
            d[f.name] = _plain(v)
        return d


__all__ = ["ReplayEvent"]
