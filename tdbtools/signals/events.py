"""The events the signalling runtime records, and the base of every replay event
(docs/signals.md §4, docs/physics.md §6).

They are defined here, below physics, so that :class:`~tdbtools.signals.Interlocking`
records them as typed events directly; :mod:`tdbtools.physics.events` re-exports them
beside the other replay events (one family: every one a :class:`ReplayEvent`).
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


@dataclass(frozen=True, slots=True, kw_only=True)
class SignalAspect(ReplayEvent):
    """A normal signal showed a new aspect; ``enabled_for`` the train it is cleared for."""

    kind: ClassVar[str] = "signal"
    signal: int
    aspect: str
    enabled_for: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AspectSeen(ReplayEvent):
    """A train's driver saw a signal's aspect ``distance_to`` m ahead."""

    kind: ClassVar[str] = "aspect"
    train: str
    signal: int
    aspect: str
    distance_to: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SignalWait(ReplayEvent):
    """A train stood at a signal from ``time`` to ``until`` (``seconds``)."""

    kind: ClassVar[str] = "signal_wait"
    train: str
    signal: int
    until: float
    seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Spad(ReplayEvent):
    """A signal passed at danger: ``speed`` m/s, ``distance`` m along the train's line."""

    kind: ClassVar[str] = "spad"
    train: str
    signal: int
    speed: float
    distance: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Deadlock(ReplayEvent):
    """Trains wait for each other: from the interlocking (``waiting_since``; ``sections``
    its section numbers) or the activity dispatcher (``clock``, ``message``; ``sections``
    the names of its blocks)."""

    kind: ClassVar[str] = "deadlock"
    _optional: ClassVar[frozenset[str]] = frozenset({"clock", "message", "waiting_since"})
    clock: str | None = None
    trains: tuple[str, ...]
    sections: tuple[int | str, ...]
    message: str | None = None
    waiting_since: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptFailed(ReplayEvent):
    """A head's script failed while it ran (``message``; the script at ``path``:``line``):
    it is not run again in this replay, the head follows the basic rule instead
    (docs/signals.md §4.5)."""

    kind: ClassVar[str] = "script_error"
    signal: int
    head: int
    script: str
    path: str
    line: int
    message: str


__all__ = ["AspectSeen", "Deadlock", "ReplayEvent", "ScriptFailed", "SignalAspect", "SignalWait", "Spad"]
