"""The events the signalling runtime records (docs/signals.md §4, docs/physics.md §6).

They are defined here, below physics, so that :class:`~tdbtools.signals.Interlocking`
records them as typed events directly; :mod:`tdbtools.physics.events` re-exports them
beside the other replay events (one family: every one a :class:`ReplayEvent`, whose
base is :mod:`tdbtools.events`, below every layer that records events).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..events import ReplayEvent


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
