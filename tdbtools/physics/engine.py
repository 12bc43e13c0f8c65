"""The 1-D multi-train engine: cars on the same line interact by momentum transfer (docs/physics.md §1).

Model
-----
Every car is a rigid body on a *line* (a route, docs/physics.md §1: the cars on it interact in one
dimension only). Within a line the cars are numbered front to back: car ``i`` is ahead of
car ``i + 1`` (larger x). Between two consecutive cars of a line there is a *joint* with a
gap ``gap[i] = (x[i] - length[i]) - x[i+1]``:

* ``gap == 0``: the buffers touch. They can only push (compression).
* a coupled joint (``coupled[i]``) has free play: ``0 <= gap <= slack[i]``; at
  ``gap == slack`` the coupler is taut and can only pull (tension). ``slack == 0`` is a
  rigid coupler (both limits at once).
* an uncoupled joint (the last car of one train and the first of the next on the same line)
  only has the lower limit.

Forces are constant over a call of :meth:`Engine.step` (the article's simplification).
``drive[i]`` (N, + = towards +x) is every force that does not depend on the direction of
motion (traction, gravity); ``resist[i] >= 0`` is the magnitude of the friction-type forces
(running resistance, brakes, curve resistance) that always oppose the motion. A group at rest
stays at rest unless the drive beats the friction (static friction).

One step ``dt`` (the article's algorithm, made exact between events):

1. **Impulses.** Every joint at a limit whose cars close into it (buffers at 0 and the rear
   car faster; a taut coupler and the front car faster) is resolved by a perfectly inelastic
   impulse. The velocities of the run of cars held together by joints at their limits are
   projected (least kinetic-energy change, Gauss) onto the velocities that the joints allow.
   Where every joint can pass the impulse this is the article's "merge into a group with the
   common momentum Σm·v/Σm"; a taut coupler cannot pass a push (and buffers cannot pass a
   pull), so a group with stretched couplers that hits something is split and its other cars
   keep their speed and close the slack (the article's "split the group again"). Momentum is
   conserved exactly (pooled means); the energy lost is reported in the event.
2. **Groups.** Consecutive cars whose joint is at a limit and whose speeds are equal form a
   block. In a block the accelerations are the solution of the same projection at force level
   (Gauss's principle of least constraint with one-sided joints, plus Coulomb friction for a
   block at rest): the block moves as one if every joint force ``P_j = Σ_{k<=j}(F_k - m_k·a)``
   has the sign its limit allows (``P_j <= 0`` buffers push, ``P_j >= 0`` couplers pull);
   otherwise it splits (exactly, see :func:`_solve_chain`) into groups that move apart.
   Each group has one speed and one acceleration ``(ΣD - sign(v)·ΣR)/Σm``.
3. **Events.** For each pair of neighbouring groups of one line: the clash time (gap → 0) with
   :func:`~tdbtools.physics.interaction.clash_times` and, for a coupled joint, the time to
   go taut (``slack - gap → 0``, roles swapped). For each moving group the stopping time with
   :func:`~tdbtools.physics.interaction.stopping_times` (friction never reverses motion within
   a step: the group stops there and becomes static).
4. Advance every group to the earliest event (exact constant-acceleration kinematics), apply
   it (a stop sets the speed to 0; a contact is resolved by step 1 of the next round), regroup
   and repeat until ``dt`` is used up.

For joint ``i`` the article's "car 1" (behind) is car ``i + 1`` and "car 2" (ahead) is car ``i``:
clash time ``clash_times(gap, v[i+1], v[i], a[i+1], a[i])``, coupler time
``clash_times(slack - gap, v[i], v[i+1], a[i], a[i+1])``.

Resting contact: a joint that an impulse leaves at less than ``rest_speed`` (default
:data:`REST_SPEED`, 1 mm/s) is held at its limit; the force analysis then decides whether it
opens. Without this a car between a buffer and a taut coupler (say, the one car that brakes
least) bounces between its neighbours with every bounce half as fast: a Zeno sequence whose
limit is the locked state that the threshold jumps to.

Numerical guards: gaps are clamped into ``[0, slack]`` after every move and snapped to the
limit within :data:`SNAP_GAP`; speeds within :data:`EPS_V` count as equal; at most
``10·n + 100`` event rounds per step (then the rest of the step is moved without
interactions and :attr:`Engine.truncated_steps` counts it; not seen in tests or benchmarks).

Cost: a step with no event is a fixed number of numpy operations over all cars (the joint
force check is a cumulative sum); the pure-Python block solver runs only for a block that
splits or for the cars of an impact. Impacts are looked for at the joints between groups
only (inside a group the speeds are equal), and a short run of cars is resolved on Python
floats. Each event still starts a round over every group of every line: the rounds, the
block speeds recomputed from the cars (``Σm·v/Σm``) and the joint-force sums over all cars
are part of the traces that ``tests/test_engine_golden.py`` keeps bit for bit. What changes only with the contacts is cached: the
limit masks (updated where a gap changes), the block structure (rebuilt only when a joint
between groups reaches or leaves a limit or its speeds become equal) and the offsets of the
cars behind each line's first car (for ``x``); within a step, the solution of a block that
splits (its forces are fixed for the step). With at most :data:`_SMALL` groups (a train
or a few) the per-group arithmetic, event times and moves run on Python floats: the same
IEEE operations as the numpy path, so both give the same numbers bit for bit.

State is kept as the x of the first car of each line plus the gaps, so a gap inside a group
never drifts by rounding.

With numba installed, :meth:`Engine.step` runs the same rounds compiled
(``tdbtools.physics._engine_kernel``, docs/physics.md §1.1): the same operations in the same
order, so the same numbers bit for bit; the code here is then the reference the tests hold
the kernel to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tdbtools.errors import TdbToolsError
from tdbtools.physics import joints
from tdbtools.physics.interaction import clash_time, clash_times_ab, stopping_time
from tdbtools.physics.joints import (  # noqa: F401  (the tests reach them here too)
    _EQ,
    _GE,
    _LE,
    EPS_V,
    _max_upper_set,
    _solve_chain,
    _solve_static,
    _stop_times,
    _touch_time,
    _touch_times,
)
from tdbtools.physics.kernels import compiled_available

__all__ = ["Bodies", "Engine", "Event", "EngineError", "EPS_V", "SNAP_GAP"]

#: Gaps (m) within this of a limit are set to the limit.
SNAP_GAP = 1e-9
#: A block moving slower than this (m/s) counts as at rest.
V_REST = 1e-12
#: Default speed (m/s) below which a joint that an impact leaves is held at its limit.
REST_SPEED = 1e-3
#: Events within this time (s) of the earliest are applied together.
T_TOL = 1e-12
# Up to this many blocks/groups the per-group arithmetic runs on Python floats (the same
# IEEE operations as numpy's, without the fixed cost of a numpy call per operation).
_SMALL = 16
#: Engines of at least this many cars run their steps compiled when numba is installed
#: (:func:`compiled_available`): the same numbers bit for bit, without the fixed cost of a
#: numpy call per operation and per event round (docs/physics.md §1.1). 1: every engine
#: (a 21-car train's step too: 39 → 13 µs in tests/engine_scenarios.py's train_21); the
#: tests raise it to run the Python code.
COMPILED_MIN_CARS = 1


class EngineError(TdbToolsError, ValueError):
    """Bad input to the physics engine (shapes, negative masses, overlapping cars...)."""


@dataclass(frozen=True, slots=True, eq=False)
class Bodies:
    """The cars of every train, numbered front to back within each line.

    ``mass`` (kg, > 0), ``length`` (m, > 0), ``line`` (int: cars interact only with cars on
    the same line; the cars of one line must be consecutive), ``coupled`` (joint ``i``
    couples car ``i`` to car ``i + 1``; False for the last car of a line or between trains),
    ``slack`` (m: the coupler's free play, the gap at which it is taut; ignored where not
    coupled).
    """

    mass: np.ndarray
    length: np.ndarray
    line: np.ndarray
    coupled: np.ndarray
    slack: np.ndarray

    def __post_init__(self) -> None:
        mass = np.array(self.mass, dtype=np.float64, ndmin=1)
        n = mass.shape[0]
        if mass.ndim != 1 or n == 0:
            raise EngineError("Bodies: mass must be a non-empty 1-D array")

        def arr(name, value, dtype):
            a = np.array(value, dtype=dtype, ndmin=1)
            if a.shape != (n,):
                raise EngineError(f"Bodies: {name} has shape {a.shape}, expected ({n},)")
            a.flags.writeable = False
            return a

        mass = arr("mass", mass, np.float64)
        length = arr("length", self.length, np.float64)
        line = arr("line", self.line, np.int64)
        coupled = arr("coupled", self.coupled, bool)
        slack = arr("slack", self.slack, np.float64)
        if not (np.all(np.isfinite(mass)) and np.all(mass > 0)):
            raise EngineError("Bodies: every mass must be finite and > 0")
        if not (np.all(np.isfinite(length)) and np.all(length > 0)):
            raise EngineError("Bodies: every length must be finite and > 0")
        if not (np.all(np.isfinite(slack)) and np.all(slack >= 0)):
            raise EngineError("Bodies: every slack must be finite and >= 0")
        runs = line[np.concatenate(([True], line[1:] != line[:-1]))]
        if np.unique(runs).size != runs.size:
            raise EngineError("Bodies: the cars of a line must be consecutive")
        for name, a in (
            ("mass", mass),
            ("length", length),
            ("line", line),
            ("coupled", coupled),
            ("slack", slack),
        ):
            object.__setattr__(self, name, a)

    @property
    def n(self) -> int:
        return int(self.mass.shape[0])

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


# --------------------------------------------------------------------------- engine state
#
# Blocks: runs of cars held together (every joint inside at a limit, equal speeds); they
# change only when a joint between groups reaches or leaves a limit. Groups: the blocks of
# one round, cut where a joint cannot hold; each moves with one speed and acceleration until
# the next event. Per-group values also exist as Python lists when there are at most
# _SMALL groups (one train or a few): the same IEEE operations without a numpy call each.


@dataclass(slots=True, eq=False)
class _BlockLists:
    """Per-block values of a :class:`_Blocks` on Python numbers (few blocks)."""

    mass: list[float]
    joints: list[int]  # the same-line joints between blocks
    joint_block: list[int]  # the block ahead of each of those joints
    lead: list[int]  # the block of each line's first car


@dataclass(slots=True, eq=False)
class _Blocks:
    """The block structure of the cars (see above)."""

    lock: np.ndarray  # (n - 1) bool: joint at a limit with equal speeds
    starts: np.ndarray  # first car of each block
    of_car: np.ndarray  # block of each car
    mass: np.ndarray  # total mass of each block
    joints: np.ndarray  # same-line joints between blocks
    joint_block: np.ndarray  # the block ahead of each of those joints
    joint_hi: np.ndarray  # their upper limits (slack, inf if not coupled)
    lead: np.ndarray  # block of each line's first car
    force_from: np.ndarray  # (n - 1) first car of the block of the car ahead of each joint
    sign: np.ndarray  # (n - 1) +1 buffers locked, -1 taut coupler locked, else 0
    multi: bool  # some block has two cars or more
    lists: _BlockLists | None  # set when there are at most _SMALL blocks

    @property
    def count(self) -> int:
        return int(self.starts.size)


@dataclass(slots=True, eq=False)
class _BlockMotion:
    """Each block's motion if it moved as one (the first guess of a round)."""

    drive: np.ndarray  # Σ drive per block
    resist: np.ndarray  # Σ resist per block
    v: np.ndarray  # speed (0 for a block at rest)
    a: np.ndarray  # acceleration
    sign: list | np.ndarray  # direction the friction opposes (0: held by static friction)
    moving: list | np.ndarray
    all_moving: bool
    lists: tuple[list[float], list[float], list[float], list[float]] | None  # v, a, D, R
    a_car: np.ndarray | None = None  # per-car acceleration, when already gathered


@dataclass(slots=True, eq=False)
class _GroupLists:
    """Per-group values of a :class:`_Groups` on Python numbers (few groups)."""

    v: list[float]
    a: list[float]
    mass: list[float]
    drive: list[float]
    resist: list[float]
    joints: list[int]  # the same-line joints between groups
    joint_group: list[int]  # the group ahead of each of those joints
    lead: list[int]  # the group of each line's first car


@dataclass(slots=True, eq=False)
class _Groups:
    """The groups of the current round (see above); ``v`` changes as they advance."""

    starts: np.ndarray  # first car of each group
    of_car: np.ndarray  # group of each car
    mass: np.ndarray
    drive: np.ndarray
    resist: np.ndarray
    v: np.ndarray
    a: np.ndarray
    joints: np.ndarray  # same-line joints between groups: the only gaps that move
    joint_group: np.ndarray  # the group ahead of each of those joints
    joint_hi: np.ndarray  # their upper limits
    lead: np.ndarray  # group of each line's first car
    lists: _GroupLists | None  # set when there are at most _SMALL groups


# --------------------------------------------------------------------------- engine


def _ro(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


class Engine:
    """1-D multi-train engine; all per-car work is vectorised over every car of every line.

    ``x[i]``: coordinate of the FRONT end of car ``i`` along its line (car ``i`` occupies
    ``[x[i] - length[i], x[i]]``); within a line ``x[i] - length[i] >= x[i + 1]`` and a
    coupled gap is at most its slack. ``v[i]``: speed, + = towards +x.

    ``compiled``: run the steps in the compiled kernel (needs numba); ``None`` chooses it
    when numba is installed (:data:`COMPILED_MIN_CARS`). Both give the same numbers.
    """

    def __init__(
        self, bodies: Bodies, x, v, *, rest_speed: float = REST_SPEED, compiled: bool | None = None
    ) -> None:
        if not isinstance(bodies, Bodies):
            raise EngineError("Engine needs a Bodies")
        self.bodies = b = bodies
        n = self.n = b.n
        x = np.array(x, dtype=np.float64, ndmin=1)
        v = np.array(v, dtype=np.float64, ndmin=1)
        if x.shape != (n,) or v.shape != (n,):
            raise EngineError(f"Engine: x and v must have shape ({n},)")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(v))):
            raise EngineError("Engine: x and v must be finite")
        self._m = b.mass
        self._ml = b.mass.tolist()
        self.rest_speed = float(rest_speed)
        if not self.rest_speed >= 0.0:
            raise EngineError("Engine: rest_speed must be >= 0")
        same = b.line[:-1] == b.line[1:]
        self._same = same
        hi = np.where(b.coupled[:-1], b.slack[:-1], np.inf)
        self._hi = np.where(same, hi, np.nan)  # nan across lines: never at a limit
        self._hil = self._hi.tolist()
        gap = np.where(same, (x[:-1] - b.length[:-1]) - x[1:], np.nan)
        with np.errstate(invalid="ignore"):
            if np.any(gap < -SNAP_GAP):
                i = int(np.flatnonzero(gap < -SNAP_GAP)[0])
                raise EngineError(
                    f"Engine: cars {i} and {i + 1} overlap by {-gap[i]:.6g} m "
                    "(within a line x[i] - length[i] >= x[i+1])"
                )
            if np.any(gap > self._hi + SNAP_GAP):
                i = int(np.flatnonzero(gap > self._hi + SNAP_GAP)[0])
                raise EngineError(
                    f"Engine: the coupler between cars {i} and {i + 1} is "
                    f"stretched to {gap[i]:.6g} m, beyond its slack "
                    f"{self._hi[i]:.6g} m"
                )
        self._gap = gap
        self._snap_all()  # also sets the limit masks _atz, _att
        first = np.flatnonzero(np.concatenate(([True], ~same)))
        self._line_first = first
        self._line_ids = b.line[first]
        self._line_index = np.cumsum(np.concatenate(([1], (~same).astype(np.int64)))) - 1
        self._first_of_car = first[self._line_index]
        self._xlead = x[first].copy()
        self._v = v.copy()
        self._a = np.zeros(n)
        self._time = 0.0
        self._x_cache: np.ndarray | None = None
        self._xrel: np.ndarray | None = None  # x of each car behind its line's first
        self._gap_cache: np.ndarray | None = None
        self._Pc = np.zeros(n + 1)  # running sums of the joint forces (Pc[0] = 0)
        self._contacts_dirty = True
        self._blocks: _Blocks | None = None  # None: rebuild before the next round
        self._split_cache: dict[tuple, tuple[list[float], list[int]]] = {}
        self._groups: _Groups
        self.truncated_steps = 0
        self.event_count = 0
        # zero-force grouping so that `groups` is meaningful before the first step
        z = np.zeros(n)
        self._regroup(z, z, 1e-300)
        # compiled steps: None (auto) = from COMPILED_MIN_CARS cars when numba is installed
        if compiled is None:
            compiled = n >= COMPILED_MIN_CARS and compiled_available()
        elif compiled and not compiled_available():
            raise EngineError("Engine(compiled=True) needs numba: pip install 'tdbtools[fast]'")
        self.compiled = bool(compiled)
        if self.compiled:
            self._gid = self._groups.of_car.copy()
            # writable copies: numba compiles read-only arrays as other types (a second
            # compilation of the whole step)
            self._mk = np.array(b.mass, dtype=np.float64)
            self._line_arr = np.array(b.line, dtype=np.int64)
            self._length = np.array(b.length, dtype=np.float64)
            self._first_of_car = np.array(self._first_of_car, dtype=np.int64)
            self._line_index = np.array(self._line_index, dtype=np.int64)
            self._cap = 10 * n + 100
            # load (or, the first time on this machine, compile) the step now, in the setup
            from tdbtools.physics import _engine_kernel

            self._kernel_step = _engine_kernel.step
            self._work = _engine_kernel.work_arrays(n)

    # ------------------------------------------------------------------ read-only state
    @property
    def time(self) -> float:
        return self._time

    @property
    def v(self) -> np.ndarray:
        return _ro(self._v)

    @property
    def a(self) -> np.ndarray:
        """Acceleration of each car in the last force analysis (m/s²)."""
        return _ro(self._a)

    @property
    def x(self) -> np.ndarray:
        if self._x_cache is None:
            rel = self._xrel
            if rel is None:
                # offsets of each car behind its line's first car: change only with the gaps
                b = self.bodies
                off = np.where(self._same, b.length[:-1] + self._gap, 0.0)
                c = np.concatenate(([0.0], np.cumsum(off)))
                rel = self._xrel = c - c[self._first_of_car]
            x = self._xlead[self._line_index] - rel
            x.flags.writeable = False
            self._x_cache = x
        return self._x_cache

    @property
    def gap(self) -> np.ndarray:
        """Gap of each joint (n - 1), ``inf`` between cars of different lines."""
        g = self._gap_cache
        if g is None:
            g = self._gap_cache = np.where(self._same, self._gap, np.inf)
            g.flags.writeable = False
        return g

    @property
    def groups(self) -> np.ndarray:
        """Group id of each car (cars moving together as one body), numbered from 0."""
        return _ro(self._gid if self.compiled else self._groups.of_car)

    def kinetic_energy(self) -> float:
        return 0.5 * float(np.dot(self._m, self._v * self._v))

    def momentum(self, line: int | None = None) -> float:
        if line is None:
            return float(np.dot(self._m, self._v))
        sel = self.bodies.line == line
        return float(np.dot(self._m[sel], self._v[sel]))

    # ------------------------------------------------------------------ helpers
    def _per_car(self, value, name: str) -> np.ndarray:
        a = np.asarray(value, dtype=np.float64)
        if a.shape != (self.n,):
            if a.ndim == 0:
                return np.full(self.n, float(a))
            raise EngineError(f"Engine.step: {name} has shape {a.shape}, expected ({self.n},)")
        return a

    def _gaps_changed(self) -> None:
        self._xrel = None
        self._gap_cache = None

    def _snap_all(self) -> None:
        g = self._gap
        hi = self._hi
        with np.errstate(invalid="ignore"):
            np.clip(g, 0.0, hi, out=g, where=self._same)
            g[g < SNAP_GAP] = 0.0
            near = (hi - g) < SNAP_GAP
            g[near] = hi[near]
            # the joints at a limit; kept up to date wherever a gap changes (nan: never)
            self._atz = g <= 0.0
            self._att = g >= hi
        self._gaps_changed()

    def _set_limits(self, idx) -> None:
        """Refresh the limit masks at the joints ``idx`` (same-line joints) after a gap change."""
        g = self._gap[idx]
        self._atz[idx] = g <= 0.0
        self._att[idx] = g >= self._hi[idx]

    @staticmethod
    def _types(atz: np.ndarray, att: np.ndarray, s: int, e: int) -> np.ndarray:
        """The joint types (_GE/_LE/_EQ) of the locked joints of cars ``s..e-1``."""
        z = atz[s : e - 1]
        t = att[s : e - 1]
        return np.where(z & t, _EQ, np.where(z, _GE, _LE))

    # ------------------------------------------------------------------ step
    def step(self, dt: float, drive, resist) -> list[Event]:
        """Advance by ``dt`` seconds with constant forces; returns the events, in time order.

        ``drive``: forces independent of the direction of motion (N, + = towards +x);
        ``resist``: magnitudes (N, ≥ 0) of the forces that oppose the motion. Either may be
        a scalar (the same for every car).
        """
        dt = float(dt)
        if not (dt >= 0.0 and math.isfinite(dt)):
            raise EngineError(f"Engine.step: dt must be finite and >= 0, got {dt}")
        drive = self._per_car(drive, "drive")
        resist = self._per_car(resist, "resist")
        if self.compiled:
            return self._step_compiled(dt, drive, resist)
        # argmin/argmax cost a fraction of min/max on small arrays and give the first nan
        ad = np.abs(drive)
        dmax = float(ad[ad.argmax()])
        rmax = float(resist[resist.argmax()])
        if not (resist[resist.argmin()] >= 0.0 and math.isfinite(rmax) and math.isfinite(dmax)):
            raise EngineError("Engine.step: resist must be finite and >= 0, drive finite")
        # tolerance of the joint-force signs
        tol = 1e-9 * (dmax + rmax) + 1e-300
        events: list[Event] = []
        self._split_cache = {}  # see _split_blocks: valid while drive and resist are
        t_end = self._time + dt
        remaining = dt
        cap = 10 * self.n + 100
        count = 0
        while True:
            if self._contacts_dirty:
                self._impulses(events)
                self._contacts_dirty = False
            self._regroup(drive, resist, tol)
            t_ev, hits = self._next_event(remaining)
            if t_ev >= remaining:
                self._advance(remaining, events)
                break
            self._advance(t_ev, events)
            remaining -= t_ev
            self._apply(t_ev, hits, events)
            count += 1
            if count >= cap:
                # give up on interactions for the rest of this step (never expected)
                self.truncated_steps += 1
                self._advance(remaining, events)
                self._snap_all()
                self._contacts_dirty = True
                self._blocks = None
                break
        self._time = t_end
        self.event_count += len(events)
        return events

    def _step_compiled(self, dt: float, drive: np.ndarray, resist: np.ndarray) -> list[Event]:
        """:meth:`step`'s checks and rounds in tdbtools.physics._engine_kernel (the same
        operations)."""
        # arrays already handed out (v, a, groups) are never changed: the kernel gets copies
        v = self._v.copy()
        a = np.empty(self.n)
        gid = self._gid.copy()
        x = np.empty(self.n)
        t_end = self._time + dt
        bad, dirty, truncated, moved, table, count = self._kernel_step(
            self._mk, self._same, self._hi, self._line_arr, self._line_first,
            self._atz, self._att, self._gap, v, a, self._xlead, gid,
            _writable(drive), _writable(resist),
            dt, self.rest_speed, self._time, self._contacts_dirty, self._cap, *self._work,
            self._length, self._first_of_car, self._line_index, x,
        )  # fmt: skip
        if bad:
            raise EngineError("Engine.step: resist must be finite and >= 0, drive finite")
        self._v, self._a, self._gid = v, a, gid
        self._contacts_dirty = bool(dirty)
        if truncated:
            self.truncated_steps += 1
            self._snap_all()
            self._contacts_dirty = True
        if moved:
            self._gaps_changed()
        if truncated:  # the gaps snapped after the kernel made x
            self._x_cache = None
        else:
            x.flags.writeable = False
            self._x_cache = x
        self._time = t_end
        if not count:  # (most steps)
            return []
        events = _events_from_table(table[:count])
        self.event_count += len(events)
        return events

    # -- 1. impulses ------------------------------------------------------------------
    def _impulses(self, events: list[Event]) -> None:
        # Only a joint between two groups can have unequal speeds (v = vg[gid]), and only
        # one at a limit can be violated: look at those, not at every car.
        grp = self._groups
        jb = grp.joints
        if not len(jb):
            return
        atz, att = self._atz, self._att
        gl = grp.lists
        bad: list[int] = []
        dvb: list[float] = []  # v[j] - v[j + 1] of each bad joint (> 0: the car ahead is faster)
        if gl is not None:
            vgl = gl.v
            for j, k in zip(gl.joints, gl.joint_group):
                d = vgl[k] - vgl[k + 1]
                if (d < -EPS_V and atz[j]) or (d > EPS_V and att[j]):
                    bad.append(j)
                    dvb.append(d)
            if not bad:
                return
        else:
            vg = grp.v
            dvj = (vg[:-1] - vg[1:])[grp.joint_group]
            viol = (atz[jb] & (dvj < -EPS_V)) | (att[jb] & (dvj > EPS_V))
            if not np.count_nonzero(viol):
                return
            bad = jb[viol].tolist()
            dvb = dvj[viol].tolist()
        v = self._v = self._v.copy()  # never change an array already handed out
        starts = grp.starts
        of_car = grp.of_car
        ng = starts.size
        n = self.n
        i = 0
        while i < len(bad):
            # the run of cars held by joints at a limit around joint bad[i], walked group by
            # group (a group's inner joints are all at a limit)
            j = bad[i]
            g = int(of_car[j])
            while g > 0:
                jj = int(starts[g]) - 1
                if not (atz[jj] or att[jj]):
                    break
                g -= 1
            s = int(starts[g])
            g = int(of_car[j + 1])
            while g + 1 < ng:
                jj = int(starts[g + 1]) - 1
                if not (atz[jj] or att[jj]):
                    break
                g += 1
            e = int(starts[g + 1]) if g + 1 < ng else n
            i0 = i
            while i < len(bad) and bad[i] < e - 1:
                i += 1
            if e - s <= joints._CHAIN_NUMPY:
                self._impulse_small(s, e, bad[i0:i], dvb[i0:i], v, events)
            else:
                self._impulse_block(s, e, bad[i0:i], dvb[i0:i], v, events)
        self._blocks = None

    def _impulse_block(self, s: int, e: int, js: list[int], dvs: list[float], v: np.ndarray, events) -> None:
        """Resolve the impulses of the run of cars ``s..e-1`` (joints at a limit) whose joints
        ``js`` (closing speeds ``dvs``) are violated; numpy version for long runs."""
        atz, att = self._atz, self._att
        w = self._m[s:e]
        v0 = v[s:e].copy()
        f = w * v0
        tol = 1e-12 * math.fsum(np.abs(f).tolist()) + 1e-300
        types = self._types(atz, att, s, e)
        rest = self.rest_speed
        while True:
            y = np.array(_solve_chain(w, f, types, tol)[0])
            # resting contact: a joint the impulse leaves slower than rest_speed is held
            # at its limit (else a car between a buffer and a taut coupler bounces between
            # them with ever smaller speeds: a Zeno sequence whose limit is this)
            d = y[:-1] - y[1:]
            opening = np.where(types == _GE, d, -d)
            hold = (types != _EQ) & (opening > 0.0) & (opening < rest)
            if not hold.any():
                break
            types = np.where(hold, _EQ, types)
        ke0 = 0.5 * math.fsum((w * v0 * v0).tolist())
        ke1 = 0.5 * math.fsum((w * y * y).tolist())
        v[s:e] = y
        # impulse through joint j = momentum gained by the cars ahead of it
        dp = np.cumsum(w * (y - v0))
        imp = [abs(float(dp[j - s])) for j in js]
        self._impulse_events(js, dvs, imp, max(ke0 - ke1, 0.0), events)

    def _impulse_small(self, s: int, e: int, js: list[int], dvs: list[float], v: np.ndarray, events) -> None:
        """:meth:`_impulse_block` on Python floats (the same IEEE operations in the same order:
        products element by element, running sums left to right, exactly rounded sums)."""
        w = self._ml[s:e]
        v0 = v[s:e].tolist()
        f = [wi * vi for wi, vi in zip(w, v0)]
        tol = 1e-12 * math.fsum([abs(x) for x in f]) + 1e-300
        types = [
            (_EQ if t else _GE) if z else _LE
            for z, t in zip(self._atz[s : e - 1].tolist(), self._att[s : e - 1].tolist())
        ]
        rest = self.rest_speed
        k = e - s
        while True:
            y = _solve_chain(w, f, types, tol)[0]
            held = False
            for i in range(k - 1):
                ti = types[i]
                if ti == _EQ:
                    continue
                d = y[i] - y[i + 1]
                opening = d if ti == _GE else -d
                if 0.0 < opening < rest:
                    types[i] = _EQ
                    held = True
            if not held:
                break
        ke0 = 0.5 * math.fsum([wi * vi * vi for wi, vi in zip(w, v0)])
        ke1 = 0.5 * math.fsum([wi * yi * yi for wi, yi in zip(w, y)])
        v[s:e] = y
        dp = [0.0] * k
        acc = 0.0
        for i in range(k):
            x = w[i] * (y[i] - v0[i])
            acc = x if i == 0 else acc + x
            dp[i] = acc
        imp = [abs(dp[j - s]) for j in js]
        self._impulse_events(js, dvs, imp, max(ke0 - ke1, 0.0), events)

    def _impulse_events(self, js: list[int], dvs: list[float], imp: list[float], lost: float, events) -> None:
        """One event per violated joint; the run's energy loss shared in proportion to
        impulse × relative speed."""
        atz, att = self._atz, self._att
        line = self.bodies.line
        rel = [abs(d) for d in dvs]
        share = [i * r for i, r in zip(imp, rel)]
        tot = math.fsum(share)
        for j, d, i_, r_, sh in zip(js, dvs, imp, rel, share):
            kind = "impact" if (atz[j] and (d < 0 or not att[j])) else "coupler_taut"
            events.append(
                Event(
                    kind,
                    self._time,
                    (j, j + 1),
                    int(line[j]),
                    r_,
                    i_,
                    lost * (sh / tot) if tot > 0 else lost / len(js),
                )
            )

    # -- 2. groups ----------------------------------------------------------------------
    #
    # The blocks (runs of cars whose joints are at a limit with equal speeds) only change
    # when a joint between two groups reaches or leaves a limit or the speeds across it
    # become equal: a gap inside a group never changes, the speeds inside a group are equal
    # (v = vg[gid]) and the limit masks are kept up to date where a gap changes. So the block
    # structure (and everything derived from it) is rebuilt only when _lock_changed says so,
    # which looks at the joints between groups only. With few groups, the per-group
    # arithmetic runs on Python floats (the same IEEE operations as numpy's, fewer calls).

    def _lock_changed(self) -> bool:
        """Whether the joints at a limit with equal speeds (or the limit of a joint among
        them that is a group boundary) differ from those the blocks were built from."""
        grp, blk = self._groups, self._blocks
        assert blk is not None
        jb = grp.joints
        if not jb.size:
            return False
        atz, att, lock, sig = self._atz, self._att, blk.lock, blk.sign
        gl = grp.lists
        if gl is not None:
            vg = gl.v
            for j, k in zip(gl.joints, gl.joint_group):
                z, t = bool(atz[j]), bool(att[j])
                new = (z or t) and abs(vg[k] - vg[k + 1]) <= EPS_V
                if new != bool(lock[j]):
                    return True
                if new and (0.0 if z == t else (1.0 if z else -1.0)) != sig[j]:
                    return True
            return False
        vga = grp.v
        z, t = atz[jb], att[jb]
        new = (z | t) & (np.abs((vga[:-1] - vga[1:])[grp.joint_group]) <= EPS_V)
        if np.count_nonzero(new != lock[jb]):
            return True
        if np.count_nonzero(new):
            s = np.where(z & ~t, 1.0, np.where(t & ~z, -1.0, 0.0))
            return bool(np.count_nonzero(new & (s != sig[jb])))
        return False

    def _build_blocks(self) -> _Blocks:
        n = self.n
        v = self._v
        atz, att = self._atz, self._att
        lock = (atz | att) & (np.abs(v[:-1] - v[1:]) <= EPS_V)
        brk = ~lock
        bid = np.empty(n, np.int64)
        bid[0] = 0
        np.cumsum(brk, out=bid[1:])
        starts = np.concatenate(([True], brk)).nonzero()[0]
        mass = np.add.reduceat(self._m, starts)
        joints = np.flatnonzero(brk & self._same)
        lead = bid[self._line_first]
        jblock = bid[joints]
        lists = None
        if starts.size <= _SMALL:
            lists = _BlockLists(mass.tolist(), joints.tolist(), jblock.tolist(), lead.tolist())
        # joint force P_j = Pc[j + 1] - Pc[force_from[j]]; it must satisfy sign_j·P_j <= tol
        # (sign: +1 buffers locked, -1 taut coupler locked, 0 both or not locked)
        return _Blocks(
            lock=lock,
            starts=starts,
            of_car=bid,
            mass=mass,
            joints=joints,
            joint_block=jblock,
            joint_hi=self._hi[joints],
            lead=lead,
            force_from=starts[bid[:-1]],
            sign=np.subtract(atz, att, dtype=np.float64) * lock,
            multi=starts.size < n,
            lists=lists,
        )

    def _regroup(self, drive: np.ndarray, resist: np.ndarray, tol: float) -> None:
        """The groups of this round: the blocks, split where a joint cannot hold (2.)."""
        if self._blocks is None or self._lock_changed():
            self._blocks = self._build_blocks()
        blk = self._blocks
        mo = self._block_motion(blk, drive, resist)
        slow = self._blocks_that_split(blk, mo, drive, resist, tol) if blk.multi else None
        if slow is None:
            gl = None
            if mo.lists is not None:
                bl = blk.lists
                assert bl is not None
                vl, al, Dl, Rl = mo.lists
                gl = _GroupLists(vl, al, bl.mass, Dl, Rl, bl.joints, bl.joint_block, bl.lead)
            self._groups = _Groups(
                blk.starts,
                blk.of_car,
                blk.mass,
                mo.drive,
                mo.resist,
                mo.v,
                mo.a,
                blk.joints,
                blk.joint_block,
                blk.joint_hi,
                blk.lead,
                gl,
            )
            self._v = mo.v[blk.of_car]
            self._a = mo.a_car if mo.a_car is not None else mo.a[blk.of_car]
            return
        self._split_blocks(blk, mo, slow, drive, resist)

    def _block_motion(self, blk: _Blocks, drive: np.ndarray, resist: np.ndarray) -> _BlockMotion:
        """Each block's speed and acceleration if it moves as one."""
        m = self._m
        starts, M = blk.starts, blk.mass
        nb = blk.count
        Db = np.add.reduceat(drive, starts)
        Rb = np.add.reduceat(resist, starts)
        vb = np.add.reduceat(m * self._v, starts) / M
        if blk.lists is not None:
            Dl, Rl, vl, Ml = Db.tolist(), Rb.tolist(), vb.tolist(), blk.lists.mass
            sl = [0.0] * nb
            al = [0.0] * nb
            moving_l = [True] * nb
            allmov = True
            for k in range(nb):
                vk = vl[k]
                if abs(vk) > V_REST:
                    s = 1.0 if vk > 0.0 else -1.0
                else:
                    moving_l[k] = allmov = False
                    vl[k] = 0.0
                    d = Dl[k]
                    s = (1.0 if d > 0.0 else -1.0) if abs(d) > Rl[k] else 0.0
                if s != 0.0:
                    sl[k] = s
                    al[k] = (Dl[k] - s * Rl[k]) / Ml[k]
            return _BlockMotion(Db, Rb, np.array(vl), np.array(al), sl, moving_l, allmov, (vl, al, Dl, Rl))
        moving = np.abs(vb) > V_REST
        allmov = np.count_nonzero(moving) == nb
        if allmov:
            sgn = np.sign(vb)
            ab = (Db - sgn * Rb) / M
        else:
            sgn = np.where(moving, np.sign(vb), np.where(np.abs(Db) > Rb, np.sign(Db), 0.0))
            ab = (Db - sgn * Rb) / M
            ab[sgn == 0.0] = 0.0
            vb[~moving] = 0.0
        return _BlockMotion(Db, Rb, vb, ab, sgn, moving, bool(allmov), None)

    def _blocks_that_split(
        self, blk: _Blocks, mo: _BlockMotion, drive: np.ndarray, resist: np.ndarray, tol: float
    ) -> np.ndarray | None:
        """The blocks (of two cars or more) where a joint force has the wrong sign or a car
        at rest could break free; None if every block holds. Sets ``mo.a_car`` on the way
        when it computes the per-car accelerations."""
        m = self._m
        n = self.n
        bid = blk.of_car
        sgn = mo.sign
        if blk.count == 1:
            sc = None
            s0 = sgn[0]
            if s0 != 0.0:
                E = drive - s0 * resist - m * float(mo.a[0])
                np.add.accumulate(E, out=self._Pc[1:])
                badj = blk.sign * self._Pc[1:-1] > tol
            else:
                badj = None  # a block at rest: no joint force test, see badc
        else:
            sc = (np.array(sgn) if mo.lists is not None else sgn)[bid]
            a_car = mo.a_car = mo.a[bid]
            E = drive - sc * resist - m * a_car
            Pc = self._Pc
            np.add.accumulate(E, out=Pc[1:])
            badj = blk.sign * (Pc[1:-1] - Pc[blk.force_from]) > tol
            if not mo.all_moving:
                badj &= sc[:-1] != 0.0
        nbad = np.count_nonzero(badj) if badj is not None else 0
        badc = None
        if not mo.all_moving:
            # a block at rest with |ΣD| <= ΣR: static unless some car could break free
            if sc is None:
                sc = np.full(n, sgn[0])
            badc = (sc == 0.0) & (np.abs(drive) > resist + tol)
            nbad += np.count_nonzero(badc)
        if not nbad:
            return None
        parts = []
        if badj is not None:
            parts.append(bid[:-1][badj])
        if badc is not None:
            parts.append(bid[badc])
        slow = np.unique(np.concatenate(parts))
        sizes = np.diff(blk.starts, append=n)
        slow = slow[sizes[slow] > 1]
        return slow if slow.size else None

    def _split_blocks(
        self, blk: _Blocks, mo: _BlockMotion, slow: np.ndarray, drive: np.ndarray, resist: np.ndarray
    ) -> None:
        """Solve the blocks ``slow`` car by car (:func:`_solve_chain`, :func:`_solve_static`)
        and make the groups: the blocks, cut where those solutions separate."""
        m = self._m
        n = self.n
        starts = blk.starts
        a_car = mo.a[blk.of_car]
        brk = ~blk.lock
        atz, att = self._atz, self._att
        nb = starts.size
        # A block's solution depends only on its cars, their joint types, the forces (fixed
        # within a step) and its direction: an event on another line (or elsewhere on this
        # one) leaves it as it was, so within a step it is solved once, not once per round.
        cache = self._split_cache
        for k in slow.tolist():
            s = int(starts[k])
            e = int(starts[k + 1]) if k + 1 < nb else n
            moving = bool(mo.moving[k])
            sg = float(mo.sign[k]) if moving else 0.0
            key = (s, e, moving, sg, atz[s : e - 1].tobytes(), att[s : e - 1].tobytes())
            hit = cache.get(key)
            if hit is None:
                d, r = drive[s:e], resist[s:e]
                types = self._types(atz, att, s, e).tolist()
                tol_k = 1e-9 * (math.fsum(np.abs(d).tolist()) + math.fsum(r.tolist())) + 1e-300
                if moving:
                    hit = _solve_chain(self._ml[s:e], (d - sg * r).tolist(), types, tol_k)
                else:
                    hit = _solve_static(self._ml[s:e], d.tolist(), r.tolist(), types, tol_k)
                cache[key] = hit
            y, cuts = hit
            a_car[s:e] = y
            for c in cuts:
                brk[s + c] = True
        gid = np.empty(n, np.int64)
        gid[0] = 0
        np.cumsum(brk, out=gid[1:])
        gstarts = np.concatenate(([True], brk)).nonzero()[0]
        Mg = np.add.reduceat(m, gstarts)
        Dg = np.add.reduceat(drive, gstarts)
        Rg = np.add.reduceat(resist, gstarts)
        vg = mo.v[blk.of_car[gstarts]]
        ag = a_car[gstarts]
        jb = (brk & self._same).nonzero()[0]
        jg = gid[jb]
        lead = gid[self._line_first]
        gl = None
        if gstarts.size <= _SMALL:
            gl = _GroupLists(
                vg.tolist(),
                ag.tolist(),
                Mg.tolist(),
                Dg.tolist(),
                Rg.tolist(),
                jb.tolist(),
                jg.tolist(),
                lead.tolist(),
            )
        self._groups = _Groups(gstarts, gid, Mg, Dg, Rg, vg, ag, jb, jg, self._hi[jb], lead, gl)
        self._v = vg[gid]
        self._a = ag[gid]

    # -- 3. events ----------------------------------------------------------------------
    def _next_event(self, horizon: float):
        grp = self._groups
        if grp.lists is not None:
            return self._next_event_small(horizon)
        t_min = math.inf
        jb = grp.joints
        tc = tt = ts = None
        mv = None
        jt = jb
        if jb.size:
            # clash (gap -> 0) and coupler (slack - gap -> 0) times in one call: the coupler's
            # A and B are the clash's negated (0.0 - x: exact, and +0.0 where x is 0.0, as
            # the subtraction with the cars swapped gives)
            # per group, then per joint: v[jb] is vg[kf] and v[jb + 1] is vg[kf + 1]
            kf = grp.joint_group
            vg, ag = grp.v, grp.a
            S = self._gap[jb]
            B = (vg[1:] - vg[:-1])[kf]
            A = (ag[1:] - ag[:-1])[kf] * 0.5
            hi = grp.joint_hi
            cp = hi < math.inf
            ncp = np.count_nonzero(cp)
            if ncp == jb.size:
                jt = jb
                s2, A2, B2 = (
                    np.concatenate((S, hi - S)),
                    np.concatenate((A, 0.0 - A)),
                    np.concatenate((B, 0.0 - B)),
                )
            elif ncp:
                jt = jb[cp]
                Ac, Bc = A[cp], B[cp]
                s2 = np.concatenate((S, hi[cp] - S[cp]))
                A2, B2 = np.concatenate((A, 0.0 - Ac)), np.concatenate((B, 0.0 - Bc))
            else:
                jt = jb[:0]
                s2, A2, B2 = S, A, B
            T = clash_times_ab(s2, A2, B2)
            z = s2 <= 0.0
            if np.count_nonzero(z):
                T[z] = _touch_times(B2[z], A2[z])
            t_min = float(T[T.argmin()])
            tc, tt = T[: jb.size], T[jb.size :]
        vg = grp.v
        mv = (vg != 0.0).nonzero()[0]
        if mv.size == vg.size:  # every group moves: no gathers
            Mg = grp.mass
            ts = _stop_times(grp.resist / Mg, grp.drive / Mg, vg)
        elif mv.size:
            Mg = grp.mass[mv]
            ts = _stop_times(grp.resist[mv] / Mg, grp.drive[mv] / Mg, vg[mv])
        if ts is not None:
            t_min = min(t_min, float(ts[ts.argmin()]))
        if t_min >= horizon:
            return t_min, None
        lim = t_min + T_TOL
        hits = (
            jb[tc <= lim] if tc is not None else jb[:0],
            jt[tt <= lim] if tt is not None else jb[:0],
            mv[ts <= lim] if ts is not None else mv[:0],
        )
        return t_min, hits

    def _next_event_small(self, horizon: float):
        """:meth:`_next_event` on Python floats (the scalar clash/stopping times are the
        vectorised ones element by element)."""
        gl = self._groups.lists
        assert gl is not None
        t_min = math.inf
        vg, ag = gl.v, gl.a
        jt = []
        if gl.joints:
            gap, hil = self._gap, self._hil
            for j, k in zip(gl.joints, gl.joint_group):
                S = float(gap[j])
                vf, vr, af, ar = vg[k], vg[k + 1], ag[k], ag[k + 1]
                if S <= 0.0:
                    tc = _touch_time(vr - vf, 0.5 * (ar - af))
                else:
                    tc = clash_time(S, vr, vf, ar, af)
                hi = hil[j]
                if hi < math.inf:
                    St = hi - S
                    if St <= 0.0:
                        tt = _touch_time(vf - vr, 0.5 * (af - ar))
                    else:
                        tt = clash_time(St, vf, vr, af, ar)
                else:
                    tt = math.inf
                jt.append((j, tc, tt))
                t_min = min(t_min, tc, tt)
        st = []
        Mg, Dg, Rg = gl.mass, gl.drive, gl.resist
        for k, V in enumerate(vg):
            if V != 0.0:
                ts = stopping_time(Rg[k] / Mg[k], Dg[k] / Mg[k], V)
                st.append((k, ts))
                t_min = min(t_min, ts)
        if t_min >= horizon:
            return t_min, None
        lim = t_min + T_TOL
        return t_min, (
            [j for j, tc, _ in jt if tc <= lim],
            [j for j, _, tt in jt if tt <= lim],
            [k for k, ts in st if ts <= lim],
        )

    # -- 4. moving and applying events --------------------------------------------------
    def _advance(self, t: float, events: list[Event]) -> None:
        if t <= 0.0:
            return
        grp = self._groups
        if grp.lists is not None:
            self._advance_small(t, events)
            return
        vg, ag = grp.v, grp.a
        if events is not None:
            st = (vg == 0.0) & (ag != 0.0)
            if np.count_nonzero(st):
                for k in st.nonzero()[0].tolist():
                    events.append(self._group_event("started", k))
        dg = vg * t + 0.5 * ag * (t * t)
        grp.v = vg + ag * t
        jb = grp.joints
        if jb.size:
            g = self._gap[jb] + (dg[:-1] - dg[1:])[grp.joint_group]
            hi = grp.joint_hi
            g = np.minimum(np.maximum(g, 0.0), hi)
            z = g < SNAP_GAP
            near = (hi - g) < SNAP_GAP
            if np.count_nonzero(z) or np.count_nonzero(near):
                g[z] = 0.0
                g[near] = hi[near]
                self._contacts_dirty = True
                self._gap[jb] = g
                self._atz[jb] = g <= 0.0
                self._att[jb] = g >= hi
            else:
                # SNAP_GAP <= g <= hi - SNAP_GAP: off both limits
                self._gap[jb] = g
                self._atz[jb] = False
                self._att[jb] = False
            self._gaps_changed()
        self._xlead += dg[grp.lead]
        self._x_cache = None
        self._v = grp.v[grp.of_car]
        self._time += t

    def _advance_small(self, t: float, events: list[Event]) -> None:
        grp = self._groups
        gl = grp.lists
        assert gl is not None
        vg, ag = gl.v, gl.a
        if events is not None:
            for k, (vk, ak) in enumerate(zip(vg, ag)):
                if vk == 0.0 and ak != 0.0:
                    events.append(self._group_event("started", k))
        tt = t * t
        dg = [vk * t + 0.5 * ak * tt for vk, ak in zip(vg, ag)]
        vg = gl.v = [vk + ak * t for vk, ak in zip(vg, ag)]
        if gl.joints:
            gap, hil, atz, att = self._gap, self._hil, self._atz, self._att
            for j, k in zip(gl.joints, gl.joint_group):
                hi = hil[j]
                g = min(max(float(gap[j]) + (dg[k] - dg[k + 1]), 0.0), hi)
                z = g < SNAP_GAP
                near = (hi - g) < SNAP_GAP
                if z or near:
                    if z:
                        g = 0.0
                    if near:
                        g = hi
                    self._contacts_dirty = True
                gap[j] = g
                atz[j] = g <= 0.0
                att[j] = g >= hi
            self._gaps_changed()
        xl = self._xlead
        for i, k in enumerate(gl.lead):
            xl[i] += dg[k]
        self._x_cache = None
        grp.v = vga = np.array(vg)
        self._v = vga[grp.of_car]
        self._time += t

    def _apply(self, t_ev: float, hits, events: list[Event]) -> None:
        clash, taut, stops = hits
        grp = self._groups
        self._x_cache = None
        if len(clash):
            self._gap[clash] = 0.0
            self._set_limits(clash)
            self._gaps_changed()
            self._contacts_dirty = True
        if len(taut):
            self._gap[taut] = self._hi[taut]
            self._set_limits(taut)
            self._gaps_changed()
            self._contacts_dirty = True
        if len(stops):
            grp.v[stops] = 0.0
            if grp.lists is not None:
                for k in stops:
                    grp.lists.v[k] = 0.0
            self._v = grp.v[grp.of_car]
            for k in stops if grp.lists is not None else stops.tolist():
                events.append(self._group_event("stopped", k))

    def _group_event(self, kind: str, k: int) -> Event:
        starts = self._groups.starts
        s = int(starts[k])
        e = int(starts[k + 1]) - 1 if k + 1 < starts.size else self.n - 1
        cars = (s,) if s == e else (s, e)
        return Event(kind, self._time, cars, int(self.bodies.line[s]))


_KINDS = ("impact", "coupler_taut", "stopped", "started")  # _engine_kernel's K_* codes


def _events_from_table(table: np.ndarray) -> list[Event]:
    """The compiled step's event table (kind, time, car, car, line, speed, impulse, energy)."""
    # the integer columns converted in one go each (a burst is thousands of events)
    kinds, c0s, c1s, lines = (table[:, c].astype(np.int64).tolist() for c in (0, 2, 3, 4))
    times, rels, imps, losts = (table[:, c].tolist() for c in (1, 5, 6, 7))
    return [
        Event(_KINDS[k], t, (a, b) if k < 2 or a != b else (a,), ln, rel, imp, lost)
        for k, t, a, b, ln, rel, imp, lost in zip(kinds, times, c0s, c1s, lines, rels, imps, losts)
    ]


def _writable(a: np.ndarray) -> np.ndarray:
    """``a`` as the compiled step's one array type (writable, C-contiguous float64)."""
    if a.flags.writeable and a.flags.c_contiguous:
        return a
    return np.array(a, dtype=np.float64)
