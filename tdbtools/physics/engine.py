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
floats. Each event still starts a round over every group of every line; a block's speed
is its cars' common speed when they have one (else ``Σm·v/Σm``) and its joint forces are
summed from its own first car (docs/physics.md §1.1). What changes only with the contacts is cached: the
limit masks (updated where a gap changes), the block structure (rebuilt only when a joint
between groups reaches or leaves a limit or its speeds become equal) and the offsets of the
cars behind each line's first car (for ``x``); within a step, the solution of a block that
splits (its forces are fixed for the step). With at most :data:`~tdbtools.physics.engine_groups.SMALL` groups (a train
or a few) the per-group arithmetic, event times and moves run on Python floats: the same
IEEE operations as the numpy path, so both give the same numbers bit for bit.

State is kept as the x of the first car of each line plus the gaps, so a gap inside a group
never drifts by rounding.

With numba installed, :meth:`Engine.step` runs the same rounds compiled
(``tdbtools.physics._engine_kernel``, docs/physics.md §1.1): the same operations in the same
order, so the same numbers bit for bit (a round there redoes only what the last event can
have changed, where that gives the same numbers); the code here is then the reference the
tests hold the kernel to.

Modules: :mod:`~tdbtools.physics.engine_bodies` (the cars, the events, the tolerances),
this module (the state and the step loop), :mod:`~tdbtools.physics.engine_contacts`
(step 1, impulses), :mod:`~tdbtools.physics.engine_groups` (step 2, blocks and groups),
:mod:`~tdbtools.physics.engine_rounds` (steps 3 and 4, event times, moves, applying events)
and :mod:`~tdbtools.physics.joints` (the joint solver and contact times, pure functions).
"""

from __future__ import annotations

import math

import numpy as np

from tdbtools.physics import engine_contacts, engine_groups, engine_rounds
from tdbtools.physics.engine_bodies import (
    REST_SPEED,
    SNAP_GAP,
    T_TOL,
    V_REST,
    Bodies,
    EngineError,
    Event,
)
from tdbtools.physics.engine_groups import Blocks, Groups
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
from tdbtools.physics.kernels import compiled_available, entry_point

__all__ = [
    "Bodies",
    "Engine",
    "Event",
    "EngineError",
    "EPS_V",
    "EVENT_KINDS",
    "REST_SPEED",
    "SNAP_GAP",
    "T_TOL",
    "V_REST",
    "event_cars",
    "event_of_row",
]


#: Engines of at least this many cars run their steps compiled when numba is installed
#: (:func:`compiled_available`): the same numbers bit for bit, without the fixed cost of a
#: numpy call per operation and per event round (docs/physics.md §1.1). 1: every engine
#: (a 21-car train's step too: 39 → 13 µs in tests/engine_scenarios.py's train_21); the
#: tests raise it to run the Python code.
COMPILED_MIN_CARS = 1


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
        self._blocks: Blocks | None = None  # None: rebuild before the next round
        self._split_cache: dict[tuple, tuple[list[float], list[int]]] = {}
        self._groups: Groups
        self.truncated_steps = 0
        self.event_count = 0
        #: m/s: the compiled step makes no records of impacts and taut couplers closing
        #: slower than this (a caller that drops them anyway; still counted); 0: all
        self.quiet_contact_speed = 0.0
        # zero-force grouping so that `groups` is meaningful before the first step
        z = np.zeros(n)
        engine_groups.regroup(self, z, z, 1e-300)
        # compiled steps: None (auto) = from COMPILED_MIN_CARS cars when numba is installed
        if compiled is None:
            compiled = n >= COMPILED_MIN_CARS and compiled_available()
        elif compiled and not compiled_available():
            raise EngineError("Engine(compiled=True) needs numba: pip install 'tdbtools[fast]'")
        self.compiled = bool(compiled)
        self._shape = (n,)
        if self.compiled:
            self._gid = self._groups.of_car.copy()
            # load (or, the first time on this machine, compile) the step now, in the setup
            from tdbtools.physics import _engine_kernel as K

            self._kernel_step = entry_point(K.step)
            # the engine lives in the kernel's work arrays (a few arguments per call, see
            # _engine_kernel.work_arrays): its constants copied in once, its state
            # (gaps, limits, the lines' first x, speeds, groups) kept there as views
            wf, wi, wb = self._work = K.work_arrays(n)
            nl = first.size
            wf[K.R_M, :n] = b.mass
            wf[K.R_HI, : n - 1] = self._hi
            wf[K.R_LEN, :n] = b.length
            wi[K.I_LINE, :n] = b.line
            wi[K.I_LFIRST, :nl] = first
            wi[K.I_FOC, :n] = self._first_of_car
            wi[K.I_LIDX, :n] = self._line_index
            wi[K.I_META, :2] = (nl, 10 * n + 100)
            wb[K.B_SAME, : n - 1] = same
            self._bind_work()
            self._v.flags.writeable = False  # (handed out as it is, see v)

    # ------------------------------------------------------------------ read-only state
    @property
    def time(self) -> float:
        return self._time

    @property
    def v(self) -> np.ndarray:
        v = self._v
        # (the compiled steps' speeds are new read-only arrays, handed out as they are: a
        # view made read-only costs ~1 us a step)
        return _ro(v) if v.flags.writeable else v

    @property
    def a(self) -> np.ndarray:
        """Acceleration of each car in the last force analysis (m/s²)."""
        a = self._a
        return _ro(a) if a.flags.writeable else a

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
        g = self._gid if self.compiled else self._groups.of_car
        return _ro(g) if g.flags.writeable else g

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

    # ------------------------------------------------------------------ step
    def step(self, dt: float, drive, resist, *, rows: bool = False) -> list:
        """Advance by ``dt`` seconds with constant forces; returns the events, in time order.

        ``drive``: forces independent of the direction of motion (N, + = towards +x);
        ``resist``: magnitudes (N, ≥ 0) of the forces that oppose the motion. Either may be
        a scalar (the same for every car). ``rows``: the events as rows instead of
        :class:`Event` records, ``[kind code, time, first car, last car, line, relative
        speed, impulse, energy lost]`` (:data:`EVENT_KINDS` ``[code]``; the cars are
        ``(first, last)`` for a contact or a group, ``(first,)`` when they are one car, see
        :func:`event_of_row`), for a caller that makes its own records of them (the
        replay: a step's few events cost ~2 µs each as records it does not keep).
        """
        dt = float(dt)
        if not (dt >= 0.0 and math.isfinite(dt)):
            raise EngineError(f"Engine.step: dt must be finite and >= 0, got {dt}")
        if self.compiled:
            return self._step_compiled(dt, drive, resist, rows)
        if rows:
            return [_row_of(e) for e in self.step(dt, drive, resist)]
        drive = self._per_car(drive, "drive")
        resist = self._per_car(resist, "resist")
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
                engine_contacts.impulses(self, events)
                self._contacts_dirty = False
            engine_groups.regroup(self, drive, resist, tol)
            t_ev, hits = engine_rounds.next_event(self, remaining)
            if t_ev >= remaining:
                engine_rounds.advance(self, remaining, events)
                break
            engine_rounds.advance(self, t_ev, events)
            remaining -= t_ev
            engine_rounds.apply(self, t_ev, hits, events)
            count += 1
            if count >= cap:
                # give up on interactions for the rest of this step (never expected)
                self.truncated_steps += 1
                engine_rounds.advance(self, remaining, events)
                self._snap_all()
                self._contacts_dirty = True
                self._blocks = None
                break
        self._time = t_end
        self.event_count += len(events)
        return events

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_kernel_step", None)  # (compiled code: found again by __setstate__)
        return state

    def __setstate__(self, state: dict) -> None:
        # a copy (pickle, copy.deepcopy) gets its arrays apart: the state views again
        self.__dict__.update(state)
        if self.compiled:
            from tdbtools.physics import _engine_kernel as K

            self._kernel_step = entry_point(K.step)
            self._bind_work()

    def _bind_work(self) -> None:
        """Copy the state the kernel keeps (gaps, limit masks, the lines' first x, speeds,
        groups) into its rows of the work arrays, and keep views of them as the state (the
        kernel updates them in place)."""
        from tdbtools.physics import _engine_kernel as K

        wf, wi, wb = self._work
        n, nl = self.n, self._line_first.size
        for rows, r, cnt, name in (
            (wf, K.R_GAP, n - 1, "_gap"), (wf, K.R_XLEAD, nl, "_xlead"), (wb, K.B_ATZ, n - 1, "_atz"),
            (wb, K.B_ATT, n - 1, "_att"),
        ):  # fmt: skip
            row = rows[r, :cnt]
            row[:] = getattr(self, name)
            setattr(self, name, row)
        # the speeds and groups handed out are the kernel's copies (out, gid_out in step)
        wf[K.R_V, :n] = self._v
        wi[K.I_GID, :n] = self._gid
        wi[K.I_LAST, K.LAST_NG] = 0  # the kernel's last round is not this state's: a full round

    def _step_compiled(self, dt: float, drive: np.ndarray, resist: np.ndarray, rows: bool = False) -> list:
        """:meth:`step`'s checks and rounds in tdbtools.physics._engine_kernel (the same
        operations)."""
        # arrays already handed out (v, a, x, groups) are never changed: each step's are
        # new (one allocation for the floats; the kernel keeps its own speeds and groups)
        # and read-only (made so once: a view of a read-only array is one)
        shape = self._shape
        # (the replay's forces are such arrays already: one test of each, not four calls)
        if type(drive) is not np.ndarray or drive.shape != shape or not _kernel_ready(drive):
            drive = _writable(self._per_car(drive, "drive"))
        if type(resist) is not np.ndarray or resist.shape != shape or not _kernel_ready(resist):
            resist = _writable(self._per_car(resist, "resist"))
        out = np.empty((3, self.n))
        gid = np.empty(self.n, np.int64)
        t_end = self._time + dt
        flags, table, count, kept = self._kernel_step(
            drive, resist, dt, self.rest_speed, self._time, self._contacts_dirty,
            float(self.quiet_contact_speed), *self._work, out, gid,
        )  # fmt: skip
        if flags & _F_BAD:
            raise EngineError("Engine.step: resist must be finite and >= 0, drive finite")
        out.setflags(write=False)  # (a method call: no flags object made)
        gid.setflags(write=False)
        self._v, self._a, self._gid = out[0], out[1], gid
        self._contacts_dirty = bool(flags & _F_DIRTY)
        truncated = flags & _F_TRUNCATED
        if truncated:
            self.truncated_steps += 1
            self._snap_all()
            self._bind_work()
            self._contacts_dirty = True
        if flags & _F_MOVED:
            self._gaps_changed()
        if truncated:  # the gaps snapped after the kernel made x
            self._x_cache = None
        else:
            self._x_cache = out[2]
        self._time = t_end
        self.event_count += count
        if not kept:  # (most steps)
            return []
        if rows:
            return table[:kept].tolist()  # (the same numbers: float64 to Python floats)
        return _events_from_table(table[:kept])


#: The event kinds by their code in :meth:`Engine.step`'s rows (_engine_kernel's K_* codes).
EVENT_KINDS = ("impact", "coupler_taut", "stopped", "started")
_CODE = {k: c for c, k in enumerate(EVENT_KINDS)}


def _row_of(e: Event) -> list:
    """An :class:`Event` as :meth:`Engine.step`'s row (the reference engine's events)."""
    return [_CODE[e.kind], e.time, e.cars[0], e.cars[-1], e.line, e.relative_speed, e.impulse, e.energy_lost]


def event_cars(code: int, first: int, last: int) -> tuple[int, ...]:
    """The cars of an event of :meth:`Engine.step`'s rows: both of a contact's joint,
    a group's first and last, or its one car."""
    return (first, last) if code < 2 or first != last else (first,)


def event_of_row(row: list) -> Event:
    """The :class:`Event` of one of :meth:`Engine.step`'s rows (what ``step`` gives
    without ``rows``)."""
    k, t, a, b, ln, rel, imp, lost = row
    k, a, b = int(k), int(a), int(b)
    return Event(EVENT_KINDS[k], t, event_cars(k, a, b), int(ln), rel, imp, lost)


_F_BAD, _F_DIRTY, _F_TRUNCATED, _F_MOVED = 1, 2, 4, 8  # _engine_kernel's F_* flags


def _events_from_table(table: np.ndarray) -> list[Event]:
    """The compiled step's event table (kind, time, car, car, line, speed, impulse, energy)."""
    if len(table) < 8:
        # (most steps with events have one or two: one conversion of the rows, not one
        # per column, whose fixed cost was ~25 us a step)
        return [event_of_row(row) for row in table.tolist()]
    # the integer columns converted in one go each (a burst is thousands of events)
    kinds, c0s, c1s, lines = (table[:, c].astype(np.int64).tolist() for c in (0, 2, 3, 4))
    times, rels, imps, losts = (table[:, c].tolist() for c in (1, 5, 6, 7))
    return [
        Event(EVENT_KINDS[k], t, event_cars(k, a, b), ln, rel, imp, lost)
        for k, t, a, b, ln, rel, imp, lost in zip(kinds, times, c0s, c1s, lines, rels, imps, losts)
    ]


def _kernel_ready(a: np.ndarray) -> bool:
    """Whether the array ``a`` is the compiled step's one array type already (float64,
    writable, C-contiguous: :func:`_writable` would give it back as it is)."""
    f = a.flags
    return a.dtype == _F8 and f.writeable and f.c_contiguous


_F8 = np.dtype(np.float64)


def _writable(a: np.ndarray) -> np.ndarray:
    """``a`` as the compiled step's one array type (writable, C-contiguous float64)."""
    if a.flags.writeable and a.flags.c_contiguous:
        return a
    return np.array(a, dtype=np.float64)
