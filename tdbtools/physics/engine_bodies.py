"""What the 1-D engine is given and gives back: the cars (:class:`Bodies`), its events
(:class:`Event`), its error, and the tolerances every part of it shares (docs/physics.md §1;
the engine itself: :mod:`tdbtools.physics.engine`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tdbtools.errors import TdbToolsError

__all__ = ["Bodies", "EngineError", "Event", "REST_SPEED", "SNAP_GAP", "T_TOL", "V_REST"]

#: Gaps (m) within this of a limit are set to the limit.
SNAP_GAP = 1e-9
#: A block moving slower than this (m/s) counts as at rest.
V_REST = 1e-12
#: Default speed (m/s) below which a joint that an impact leaves is held at its limit.
REST_SPEED = 1e-3
#: Events within this time (s) of the earliest are applied together.
T_TOL = 1e-12


class EngineError(TdbToolsError, ValueError):
    """Bad input to the physics engine (shapes, negative masses, overlapping cars...)."""


class Bodies:
    """The cars of every train, numbered front to back within each line.

    ``mass`` (kg, > 0), ``length`` (m, > 0), ``line`` (int: cars interact only with cars on
    the same line; the cars of one line must be consecutive), ``coupled`` (joint ``i``
    couples car ``i`` to car ``i + 1``; False for the last car of a line or between trains),
    ``slack`` (m: the coupler's free play, the gap at which it is taut; ignored where not
    coupled). The arrays are checked and copied once, read-only, and cannot be replaced.
    """

    __slots__ = ("_coupled", "_length", "_line", "_mass", "_slack")

    def __init__(self, mass, length, line, coupled, slack) -> None:
        m = np.array(mass, dtype=np.float64, ndmin=1)
        n = m.shape[0]
        if m.ndim != 1 or n == 0:
            raise EngineError("Bodies: mass must be a non-empty 1-D array")

        def arr(name, value, dtype):
            a = np.array(value, dtype=dtype, ndmin=1)
            if a.shape != (n,):
                raise EngineError(f"Bodies: {name} has shape {a.shape}, expected ({n},)")
            a.flags.writeable = False
            return a

        m = arr("mass", m, np.float64)
        lengths = arr("length", length, np.float64)
        lines = arr("line", line, np.int64)
        cpl = arr("coupled", coupled, bool)
        sl = arr("slack", slack, np.float64)
        if not (np.all(np.isfinite(m)) and np.all(m > 0)):
            raise EngineError("Bodies: every mass must be finite and > 0")
        if not (np.all(np.isfinite(lengths)) and np.all(lengths > 0)):
            raise EngineError("Bodies: every length must be finite and > 0")
        if not (np.all(np.isfinite(sl)) and np.all(sl >= 0)):
            raise EngineError("Bodies: every slack must be finite and >= 0")
        runs = lines[np.concatenate(([True], lines[1:] != lines[:-1]))]
        if np.unique(runs).size != runs.size:
            raise EngineError("Bodies: the cars of a line must be consecutive")
        self._mass, self._length, self._line, self._coupled, self._slack = m, lengths, lines, cpl, sl

    @property
    def mass(self) -> np.ndarray:
        return self._mass

    @property
    def length(self) -> np.ndarray:
        return self._length

    @property
    def line(self) -> np.ndarray:
        return self._line

    @property
    def coupled(self) -> np.ndarray:
        return self._coupled

    @property
    def slack(self) -> np.ndarray:
        return self._slack

    @property
    def n(self) -> int:
        return int(self._mass.shape[0])

    def __repr__(self) -> str:
        return f"Bodies(n={self.n}, lines={np.unique(self._line).size})"

    @classmethod
    def trains(cls, masses, lengths, *, slack: float = 0.05, line: int = 0) -> Bodies:
        """One line of trains: ``masses``/``lengths`` are one sequence per train (front first),
        coupled inside each train with ``slack``, uncoupled between trains."""
        m, lens, cpl = [], [], []
        for tm, tl in zip(masses, lengths, strict=True):
            tm, tl = list(tm), list(tl)
            if len(tm) != len(tl) or not tm:
                raise EngineError("Bodies.trains: each train needs as many lengths as masses")
            m += tm
            lens += tl
            cpl += [True] * (len(tm) - 1) + [False]
        n = len(m)
        return cls(
            np.array(m, float),
            np.array(lens, float),
            np.full(n, line, np.int64),
            np.array(cpl, bool),
            np.full(n, float(slack)),
        )


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happened during a step.

    ``kind``: ``"impact"`` (buffers closed), ``"coupler_taut"`` (a coupler snatched taut),
    ``"stopped"`` (a group came to rest), ``"started"`` (a group at rest began to move).
    ``time``: absolute simulated time (s). ``cars``: for impact/coupler_taut the two cars of
    the joint ``(i, i + 1)`` (car ``i`` ahead); for stopped/started the group's first and
    last car ``(first, last)``, or ``(i,)`` for a single car. ``line``: their line.
    ``relative_speed``: the closing (impact) or separating (coupler) speed before the impulse,
    m/s, ≥ 0. ``impulse``: the impulse through the joint, N·s, ≥ 0. ``energy_lost``: kinetic
    energy turned into heat, J (when several joints of one run of cars are resolved at the
    same instant, the run's loss is shared in proportion to impulse × relative speed).
    """

    kind: str
    time: float
    cars: tuple[int, ...]
    line: int
    relative_speed: float = 0.0
    impulse: float = 0.0
    energy_lost: float = 0.0
