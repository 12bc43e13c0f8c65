"""Typed replay events: one frozen record per kind of thing that happened during a
replay (docs/physics.md §6).

Every class has a class-level ``kind`` (the ``"kind"`` of ``events.json``) and
:meth:`ReplayEvent.to_dict`, which gives exactly one entry of the ``events`` list
of ``events.json``: ``kind`` first, then the fields in declared order; an optional field that is
``None`` is left out (the older dict events did not carry it). Several classes may
share a ``kind`` when one word meant two shapes (``"stopped"`` for a group of cars
coming to rest and for a scheduled train ending its run).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar

# The base and the signalling runtime's events live below physics (the runtime records
# them); they are part of this module's family and re-exported here.
from ..signals.events import AspectSeen, Deadlock, ReplayEvent, ScriptFailed, SignalAspect, SignalWait, Spad


@dataclass(frozen=True, slots=True, kw_only=True)
class EventLocation:
    """Where an event happened: tile and local metres; ``node`` the track node (left
    out of the JSON when the event carries its node beside the location)."""

    node: int | None = None
    tile_x: int
    tile_z: int
    x: float
    y: float
    z: float

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {} if self.node is None else {"node": self.node}
        d.update(tile_x=self.tile_x, tile_z=self.tile_z, x=self.x, y=self.y, z=self.z)
        return d


# -- the engine's events (docs/physics.md §4): one joint or one group of cars -------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CarEvent(ReplayEvent):
    """An event of the engine: ``cars`` as ``(train, index in train)`` pairs; speeds
    m/s, ``impulse`` N·s, ``energy_lost`` J."""

    cars: tuple[tuple[str, int], ...]
    relative_speed: float
    impulse: float
    energy_lost: float
    location: EventLocation | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Impact(CarEvent):
    """Buffers of two cars closed."""

    kind: ClassVar[str] = "impact"


@dataclass(frozen=True, slots=True, kw_only=True)
class CouplerSnatch(CarEvent):
    """A coupler's slack ran out (snatched taut)."""

    kind: ClassVar[str] = "coupler_taut"


@dataclass(frozen=True, slots=True, kw_only=True)
class CarsStarted(CarEvent):
    """A group of cars at rest began to move (``cars``: first and last)."""

    kind: ClassVar[str] = "started"


@dataclass(frozen=True, slots=True, kw_only=True)
class CarsStopped(CarEvent):
    """A group of cars came to rest (``cars``: first and last)."""

    kind: ClassVar[str] = "stopped"


CAR_EVENTS: dict[str, type[CarEvent]] = {c.kind: c for c in (Impact, CouplerSnatch, CarsStarted, CarsStopped)}

_R = TypeVar("_R")


def _call(f: Callable[..., Any], *args: Any) -> Any:
    return f(*args)


_CALL: Callable[..., Any] = getattr(operator, "call", _call)  # (operator.call: Python 3.11 on)


def record_maker(cls: type[_R]) -> Callable[..., _R]:
    """A function making a ``cls`` (a frozen dataclass with slots and no
    ``__post_init__``) from the values of all its fields in their declared order: the
    record ``cls(**dict(zip(names, values)))`` gives, each slot set through its
    descriptor in one C-level pass, without ``__init__``'s keyword matching and its
    ``object.__setattr__`` per field (about half the time; the engine's contacts of a
    replay are made into records by the thousand, docs/running-time.md §2.1)."""
    put = tuple(getattr(cls, f.name).__set__ for f in fields(cls))  # type: ignore[arg-type]
    new, call, repeat = object.__new__, _CALL, itertools.repeat

    def make(*values: Any) -> _R:
        obj = new(cls)
        any(map(call, put, repeat(obj), values))  # (each __set__ gives None: all run)
        return obj

    return make


#: CAR_EVENTS' makers: (time, cars, relative_speed, impulse, energy_lost, location)
CAR_EVENT_MAKERS: dict[str, Callable[..., CarEvent]] = {k: record_maker(c) for k, c in CAR_EVENTS.items()}
#: EventLocation's maker: (node, tile_x, tile_z, x, y, z)
make_location: Callable[..., EventLocation] = record_maker(EventLocation)


# -- safety: derailments and collisions (docs/physics.md §5) ------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SafetyRecord(ReplayEvent):
    """A derailment or collision: ``cars`` indices into ``train``'s cars, ``node`` the
    track node, ``message`` the cause in words; ``closing_speed`` m/s."""

    _optional: ClassVar[frozenset[str]] = frozenset({"other_train", "other_cars", "closing_speed"})

    train: str
    cars: tuple[int, ...]
    node: int
    message: str
    location: EventLocation
    other_train: str | None = None
    other_cars: tuple[int, ...] | None = None
    closing_speed: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Derailment(SafetyRecord):
    kind: ClassVar[str] = "derailment"


@dataclass(frozen=True, slots=True, kw_only=True)
class PathChanged(SafetyRecord):
    kind: ClassVar[str] = "path_changed"


@dataclass(frozen=True, slots=True, kw_only=True)
class Collision(SafetyRecord):
    kind: ClassVar[str] = "collision"


@dataclass(frozen=True, slots=True, kw_only=True)
class SideCollision(SafetyRecord):
    kind: ClassVar[str] = "side_collision"


SAFETY_EVENTS: dict[str, type[SafetyRecord]] = {
    c.kind: c for c in (Derailment, PathChanged, Collision, SideCollision)
}


# -- the replay's own events --------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class StandIn(ReplayEvent):
    """Generic stock stood in for a missing file."""

    kind: ClassVar[str] = "stand_in"
    train: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SetupWarning(ReplayEvent):
    """A warning while setting up (``train`` when it concerns one)."""

    kind: ClassVar[str] = "warning"
    _optional: ClassVar[frozenset[str]] = frozenset({"train"})
    train: str | None = None
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class EndOfLine(ReplayEvent):
    """A train ran to the end of the track built for it."""

    kind: ClassVar[str] = "end_of_line"
    train: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchThrow(ReplayEvent):
    """A switch was thrown: ``junction`` node, ``route`` its new route."""

    kind: ClassVar[str] = "switch"
    junction: int
    route: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Arrived(ReplayEvent):
    """A driven train reached its end: ``distance`` m run (replays), ``clock``
    ``HH:MM:SS`` (activities)."""

    kind: ClassVar[str] = "arrived"
    _optional: ClassVar[frozenset[str]] = frozenset({"clock", "distance"})
    clock: str | None = None
    train: str
    distance: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainStopped(ReplayEvent):
    """A scheduled train has stood after its last command (its run is over)."""

    kind: ClassVar[str] = "stopped"
    train: str


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitingAtPoint(ReplayEvent):
    """The automatic driver stands at a waiting point ``at`` (line distance, m) for
    ``wait`` s."""

    kind: ClassVar[str] = "waiting"
    at: float
    wait: float
    train: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DepartedPoint(ReplayEvent):
    """The automatic driver left the waiting point ``at`` (line distance, m)."""

    kind: ClassVar[str] = "departed"
    at: float
    train: str


# -- signals: SignalAspect, AspectSeen, SignalWait, Spad, Deadlock, ScriptFailed (tdbtools.signals.events) --


# -- activities (docs/activities.md §4) ----------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceStarted(ReplayEvent):
    kind: ClassVar[str] = "service_started"
    clock: str
    train: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StartDelayed(ReplayEvent):
    """A service's start is occupied by ``waiting_for``."""

    kind: ClassVar[str] = "start_delayed"
    clock: str
    train: str
    waiting_for: tuple[str, ...]
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Stuck(ReplayEvent):
    """A train stood waiting far too long for track held by ``waiting_for``."""

    kind: ClassVar[str] = "stuck"
    clock: str
    train: str
    waiting_for: tuple[str, ...]
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Reversed(ReplayEvent):
    """A service stopped at a reversal of its path; part ``part`` (from 1) has ended and
    the next one starts there the other way, led by car ``lead`` (docs/activities.md §4.4)."""

    kind: ClassVar[str] = "reversed"
    clock: str
    train: str
    part: int
    at: float
    lead: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NotAtEnd(ReplayEvent):
    """A service never reached the end of its path (``state`` its driver's state)."""

    kind: ClassVar[str] = "not_at_end"
    clock: str
    train: str
    state: str
    message: str


#: Buffer impacts up to this relative speed are the ordinary slack action of a train
#: starting and stopping (m/s; 5 km/h, the usual limit for coupling).
GENTLE_IMPACT_MS = 5.0 / 3.6

#: The kinds of event that are a fault of the run in themselves.
FAULT_KINDS = frozenset({"derailment", "collision", "side_collision"})


def is_gentle_impact(e: ReplayEvent) -> bool:
    """A buffer impact no faster than :data:`GENTLE_IMPACT_MS`: slack running in at a stop
    or a start, normal running, not a fault."""
    return e.kind == "impact" and getattr(e, "relative_speed", 0.0) <= GENTLE_IMPACT_MS


def serious_events(events: Iterable[ReplayEvent]) -> list[ReplayEvent]:
    """The events a reader must see one by one: derailments, collisions, side collisions
    and impacts harder than :data:`GENTLE_IMPACT_MS`, in order."""
    return [e for e in events if e.kind in FAULT_KINDS or (e.kind == "impact" and not is_gentle_impact(e))]


class EventLog:
    """The events of one replay in the order they happened. Every stage of the replay, the
    signalling (:class:`~tdbtools.physics.signalling.ReplaySignals`) and a replay's policy
    (an activity's dispatcher) hand theirs to :meth:`add`; ``events`` is the list.

    One stage may hand in events to be made later (:meth:`defer`: the engine's contacts,
    whose locations are looked up for many steps at once): they are made, in their
    place, before the next :meth:`add` and before ``events`` is read, so the list is
    always in the order things happened (docs/running-time.md §2.1)."""

    __slots__ = ("_events", "_later")

    def __init__(self) -> None:
        self._events: list[ReplayEvent] = []
        #: makes the events handed in since the last one was added or the list read
        self._later: Callable[[], list[ReplayEvent]] | None = None

    @property
    def events(self) -> list[ReplayEvent]:
        """Every event so far (the deferred ones made first)."""
        if self._later is not None:
            self._make_later()
        return self._events

    def add(self, event: ReplayEvent) -> None:
        """Log an event (after any deferred ones)."""
        if self._later is not None:
            self._make_later()
        self._events.append(event)

    def defer(self, make: Callable[[], list[ReplayEvent]]) -> None:
        """``make()`` gives the events handed in from now on, before the next :meth:`add`
        or read; the stage hands it in again after that (one deferring stage)."""
        if self._later is not None and self._later is not make:
            self._make_later()
        self._later = make

    def _make_later(self) -> None:
        make, self._later = self._later, None
        assert make is not None
        self._events.extend(make())


__all__ = [
    "CAR_EVENTS",
    "CAR_EVENT_MAKERS",
    "SAFETY_EVENTS",
    "Arrived",
    "AspectSeen",
    "CarEvent",
    "CarsStarted",
    "CarsStopped",
    "Collision",
    "CouplerSnatch",
    "Deadlock",
    "DepartedPoint",
    "Derailment",
    "EndOfLine",
    "EventLog",
    "FAULT_KINDS",
    "GENTLE_IMPACT_MS",
    "EventLocation",
    "Impact",
    "NotAtEnd",
    "PathChanged",
    "ReplayEvent",
    "Reversed",
    "SafetyRecord",
    "ServiceStarted",
    "SetupWarning",
    "SideCollision",
    "SignalAspect",
    "SignalWait",
    "ScriptFailed",
    "Spad",
    "StandIn",
    "StartDelayed",
    "Stuck",
    "SwitchThrow",
    "TrainStopped",
    "WaitingAtPoint",
    "is_gentle_impact",
    "make_location",
    "record_maker",
    "serious_events",
]
