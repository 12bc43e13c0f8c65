"""A train as the interlocking sees it: its path cut into track-circuit elements, the
signals along it, where it is and what it may do (docs/signals.md §4.3, §4.7)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .circuits import Element


@dataclass(slots=True)
class TrainState:
    index: int
    name: str
    elements: list[Element]
    e_s1: list[float]
    signals: list[tuple[float, int]]  # (line distance, signal) of NORMAL signals in its direction
    speed_heads: list[tuple[float, int]]  # (line distance, head id) of SPEED heads in its direction
    end_s: float
    length: float
    front: float = 0.0
    speed: float = 0.0
    next_signal: int = 0  # index into signals of the first not yet passed
    waiting_since: float | None = None
    waiting_at: int = -1
    seen: dict[int, int] = field(default_factory=dict)
    last_seen: tuple[int, int] | None = None
    stop_s: float | None = None
    limits: list[tuple[float, float, float]] = field(default_factory=list)  # (from s, to s, m/s)
    creep_at: float | None = None
    #: The aspect limit it took with it past its last signal, (from s, to s, m/s) up to the
    #: next signal (signals/aspect_speed.py).
    passed: tuple[float, float, float] | None = None
    #: Sections occupied as of the last update: section -> direction (docs/signals.md §4.1).
    occ: dict[int, int] = field(default_factory=dict)
    #: The occupied elements with the rear and front they were worked out for (extents).
    occ_elems: list[tuple[Element, float, float]] = field(default_factory=list)  # (e, sec start, end)
    occ_span: tuple[float, float] | None = None
    #: The elements' starts when they rise along the line (else empty), and what decided
    #: the last occupancy walk with the elements it found (Interlocking._walk_key).
    e_s0: list[float] = field(default_factory=list)
    occ_walk: tuple[tuple, list] | None = None
    #: Whether it was moving (faster than STANDING) at the last update; None: not yet known.
    moving: bool | None = None
    #: Per SPEED head in speed_heads: the line distance of the next NORMAL signal beyond it.
    speed_next: list[float] = field(default_factory=list)
    done: bool = False
    deadlocked: bool = False
    #: False while the train is not in the world (before it enters, after it left): it
    #: occupies, reserves and requests nothing (docs/signals.md §4.8).
    on_track: bool = True
    #: Trains coming the other way that hold the single line ahead: it waits for them (§4.9).
    opposed: set[int] = field(default_factory=set)
    #: Trains holding the track where its authority between signals ends (Auto Node).
    stopped_by: set[int] = field(default_factory=set)
    #: Its own track reaches its next signal (else another train is in between, §4.3).
    up_to_signal: bool = True
    #: Line distance beyond which it asks for no signal and reserves no track while set:
    #: a timetable train at or approaching a platform whose exit is held ($hold,
    #: docs/timetables.md §5.4).
    hold_s: float | None = None

    @property
    def extents(self) -> dict[int, tuple[float, float]]:
        """Section -> node offsets (low, high) it covers, as of the last update."""
        out: dict[int, tuple[float, float]] = {}
        if self.occ_span is None:
            return out
        rear, front = self.occ_span
        for e, start, end in self.occ_elems:
            a, b = max(rear, e.s0) - e.s0, min(front, e.s1) - e.s0
            out[e.section] = (start + a, start + b) if e.direction == 1 else (end - b, end - a)
        return out

    def extent(self, section: int) -> tuple[float, float] | None:
        """``extents.get(section)`` without building the whole dict."""
        got = None
        for item in self.occ_elems:
            if item[0].section == section:
                got = item  # (the last one counts, as in extents)
        if got is None or self.occ_span is None:
            return None
        e, start, end = got
        rear, front = self.occ_span
        a, b = max(rear, e.s0) - e.s0, min(front, e.s1) - e.s0
        return (start + a, start + b) if e.direction == 1 else (end - b, end - a)
