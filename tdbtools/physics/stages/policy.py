"""What a kind of replay changes about a replay: the one object a caller passes to
:class:`~tdbtools.physics.replay.Replay` instead of overriding its methods.

A plain scenario replay uses :class:`ReplayPolicy` as it is. An activity
(:mod:`tdbtools.physics.activity`) gives its own: trains that enter the track at their
start time and leave it at the end of their path, an engine line per service, station
stops short of junctions, service drivers around the automatic ones, and a dispatcher
that runs before every step (docs/development.md §3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..scenario import TrainSpec

#: (a :class:`~tdbtools.physics.replay.Replay`; the replay module imports this one)
_Replay = Any


class ReplayPolicy:
    """The defaults of a scenario replay; subclass and override what differs."""

    #: Whether the interlocking registers every train on the track at time 0; False:
    #: the policy enters and takes off trains itself (docs/signals.md §4.8).
    signals_on_track_at_start: bool = True
    #: How far ahead (m) the interlocking reserves for a train (None: its own default).
    signals_ahead_m: float | None = None

    def signal_clearance(self) -> Callable[[int], float] | None:
        """Metres from a junction (its node) to its clearance point, where the
        interlocking stops trains; None: the interlocking's default."""
        return None

    def engine_line_key(self, spec: TrainSpec, key: object) -> object:
        """Trains with equal keys share one line of the 1-D engine and meet there
        (default: trains on the same path)."""
        return key

    def driver(self, spec: TrainSpec, auto: Any, default: Any, train: Any) -> Any:
        """The driver of a train: ``default`` is the one a scenario replay gives it (its
        automatic or schedule driver, in a signal or departure wrapper when it needs one);
        ``auto`` the automatic driver inside (or None), already told what the replay
        knows; ``train`` the :class:`~tdbtools.physics.stages.setup.Train` placed (line,
        front, length, model; its events are not logged yet)."""
        return default

    def start(self, replay: _Replay) -> None:
        """Called once when the replay is set up (its set-up events logged)."""

    def on_track(self, replay: _Replay) -> np.ndarray | None:
        """Which trains are on the track now (None: all): a train off the track is not
        under a switch thrown and meets no other train."""
        return None

    def before_step(self, replay: _Replay) -> None:
        """Called at the start of every step (before the drivers)."""

    def after_step(self, replay: _Replay) -> None:
        """Called at the end of every step."""
