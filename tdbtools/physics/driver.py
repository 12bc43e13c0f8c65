"""Drivers: who sets throttle and brakes (docs/running-time.md §2).

* :class:`ScheduleDriver` plays a fixed schedule of throttle/brake settings by time or
  by distance travelled.
* :class:`AutoDriver` drives for the minimum running time: flat out up to the permitted
  speed, holds it exactly (the replay works out the traction that reaches the speed it
  asks for, :attr:`Controls.speed_target`), and brakes just in time along a braking
  curve of the planned deceleration for every lower limit ahead and every stop. A limit
  holds over the whole train: a lower one from the moment the front reaches its post, a
  higher one once the rear has passed it. Optionally it runs slower to meet a running
  time allowance (a speed ceiling) or coasts before braking points (energy saving).

What the automatic driver must respect is a plain list of :class:`Target` (a speed the
front must not exceed from a line distance on) and :class:`Stop` (stand with the front
at a line distance, then wait). Speed posts, the end of the path and waiting points are
the ones built here; signals can add their own.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Any

import numpy as np

from .events import DepartedPoint, ReplayEvent, WaitingAtPoint
from .kernels import LazyKernel
from .scenario import Command

__all__ = ["AutoDriver", "Controls", "DriveState", "DriverBatch", "ScheduleDriver", "Stop", "Target"]

#: Force-mode brakes release this many times slower than they build up (as the replay's).
RELEASE_OVER_BUILD_UP = 1.5

#: The automatic driver uses the emergency brake when a target needs more than this
#: many times its planned deceleration.
EMERGENCY_OVER = 2.0


@dataclass(slots=True)
class Controls:
    throttle: float = 0.0  # 0..1 (schedule driver)
    brake: float = 0.0  # 0..1 of the service brake (schedule driver)
    deceleration: float = 0.0  # m/s² the brakes must give (automatic driver), 0 = none
    #: Automatic driver: the speed (m/s) to reach by the end of the step with traction
    #: (at most full power); None = use ``throttle``.
    speed_target: float | None = None
    emergency: bool = False
    #: the dynamic-brake handle 0..1 (schedule driver; the Open Rails profile only)
    dynamic: float = 0.0


@dataclass(slots=True)
class DriveState:
    time: float  # s since the start
    travelled: float  # m the front has moved since the start
    speed: float  # m/s, + = forward along the line
    front: float  # line distance of the front of the train
    rear: float  # line distance of the rear
    dt: float = 0.1  # the replay's step (s)


@dataclass(frozen=True, slots=True)
class Target:
    """From line distance ``s`` on (front of the train), the speed must be ≤ ``v``."""

    s: float
    v: float
    kind: str = "limit"


@dataclass(slots=True)
class Stop:
    """Stand with the front at line distance ``s`` (within :attr:`AutoDriver.ARRIVED_WITHIN`),
    then wait ``wait`` seconds (``math.inf``: the end of the run)."""

    s: float
    wait: float = math.inf
    kind: str = "stop"
    arrived_at: float | None = None
    #: A waiting point until a clock time (seconds since midnight; Open Rails' 3HHMM):
    #: on arrival the wait becomes the time left until then (0 when it has passed).
    until: float | None = None


def _until(clock: float, now: float) -> float:
    """Seconds from the clock time ``now`` to the clock time ``clock`` (both seconds since
    midnight, ``now`` perhaps past 24 h): 0 when ``clock`` is up to 12 hours behind."""
    left = (clock - now) % 86400.0
    return left if left < 43200.0 else 0.0


class ScheduleDriver:
    def __init__(self, commands: tuple[Command, ...], by: str = "time") -> None:
        self.at = [c.at for c in commands]
        self.commands = commands
        self.by = by

    def __call__(self, st: DriveState) -> Controls:
        key = st.time if self.by == "time" else st.travelled
        i = bisect.bisect_right(self.at, key) - 1
        if i < 0:
            return Controls()
        c = self.commands[i]
        return Controls(c.throttle, c.brake, 0.0, dynamic=c.dynamic)


#: Bisection steps of :meth:`AutoDriver._build_to` (the level to 2⁻⁴⁰ of its range).
BISECTIONS = 40


def ramp_distance(v: float, vk: float, b: float, x: float, r: float) -> float:
    """Metres to come down from ``v`` to ``vk`` with a deceleration that rises from ``b``
    at ``r`` m/s³ up to ``x`` and is then held (x ≤ b: b held), in closed form: during
    the build-up, after t s, ``v − b·t − r·t²/2`` m/s and ``v·t − b·t²/2 − r·t³/6`` m."""
    if x <= b or r <= 0.0:
        a = max(b, x)
        return (v * v - vk * vk) / (2.0 * a) if a > 0.0 else math.inf
    t_top = (x - b) / r
    # the speed reaches vk during the build-up at the positive root of r·t²/2 + b·t = v − vk
    t_k = (math.sqrt(b * b + 2.0 * r * (v - vk)) - b) / r
    if t_k <= t_top:
        return v * t_k - b * t_k * t_k / 2.0 - r * t_k**3 / 6.0
    v_top = v - b * t_top - r * t_top * t_top / 2.0
    ramp = v * t_top - b * t_top * t_top / 2.0 - r * t_top**3 / 6.0
    return ramp + (v_top * v_top - vk * vk) / (2.0 * x)


class AutoDriver:
    """Minimum-time driving under the limits ``limit_v[k]`` (from ``limit_s[k]`` on) and
    the stops; the end of the run is the stop ``stop_at`` (front line distance)."""

    #: Where the front stops short of the end of the path (m).
    STOP_SHORT = 2.0
    #: Standing this close to a stopping point counts as arrived (m).
    ARRIVED_WITHIN = 0.5
    #: Speed under which the train counts as standing (m/s).
    STANDING = 0.05
    #: Below the permitted speed by less than this (m/s), the train is "at" it: the
    #: speed target then follows the braking curve instead of the limit.
    ON_CURVE = 0.02
    #: Final approach to a stop: creep speed (m/s) kept until the braking curve to the
    #: stop asks for less, so that a stop is reached in finite time.
    CREEP = 0.3

    def __init__(
        self,
        limit_s,
        limit_v,
        stop_at: float | None,
        *,  # noqa: ANN001
        max_speed: float | None,
        deceleration: float,
        stops: list[Stop] | tuple[Stop, ...] = (),
        train_length: float = 0.0,
        speed_factor: float = 1.0,
        coast_before: float = 0.0,
    ) -> None:
        self.limit_s = [float(x) for x in np.asarray(limit_s, dtype=np.float64)]
        self.limit_v = [float(x) for x in np.asarray(limit_v, dtype=np.float64)]
        self.max_speed = max_speed if max_speed is not None else math.inf
        self.decel = float(deceleration)
        self.train_length = float(train_length)
        #: Allowance by speed ceiling: every limit is multiplied by this (≤ 1).
        self.speed_factor = float(speed_factor)
        #: Energy saving: cut traction when the braking point of a lower target is less
        #: than this many seconds ahead at the current speed (0 = never coast).
        self.coast_before = float(coast_before)
        self.stops: list[Stop] = sorted(stops, key=lambda p: p.s)
        #: Clock time (seconds since midnight) at replay time 0, for waits until a clock time.
        self.clock0 = 0.0
        self._stop_at: float | None = None
        self.stop_at = stop_at
        #: Extra targets (signals, …): kept sorted by s.
        self.targets: list[Target] = []
        #: Force-mode brakes build up: braking starts this many seconds earlier (s).
        self.brake_delay = 0.0
        #: Force mode: the deceleration (m/s²) a full service application gives on the
        #: level; the brakes build up at this over 2·brake_delay per second.
        self.brake_level: float | None = None
        #: Force mode with brake-shoe friction curves: ``(planned deceleration, full
        #: application's deceleration)`` at a speed (m/s); sets :attr:`decel` and
        #: :attr:`brake_level` each step.
        self.brakes_at: Callable[[float], tuple[float, float]] | None = None
        #: What the brakes give now, as far as the driver can tell (m/s²).
        self._applied = 0.0
        #: Releasing is this many times slower than building up (as the driver models it).
        self.release_over_build = RELEASE_OVER_BUILD_UP
        #: What the brakes give now (m/s²) as the replay measures it, read at each call
        #: in place of the driver's own estimate (the Open Rails profile sets it: its
        #: brakes lag through the pipe and valves in a way a ramp does not follow).
        self.brakes_now: Callable[[], float] | None = None
        #: Lap the brakes instead of releasing them while a lower target ahead still
        #: needs them (:meth:`_lap_need`; the Open Rails profile sets it: its triple
        #: valves release fully as soon as the pipe rises, and build up again slowly).
        self.lap_brakes = False
        #: the last call asked for braking (the handle stands in a service position)
        self._braking = False
        #: ``gain(v, vk)``: the deceleration to ask for at speed v, per m/s² of mean
        #: deceleration needed to come down to vk, for brakes whose grip rises as the
        #: speed falls (the Open Rails profile's shoes; None: 1).
        self.stop_gain: Callable[[float, float], float] | None = None
        self.finished = False
        #: The train's name in the events below (the replay sets it).
        self.train = ""
        #: Arrived at and left waiting points; the replay collects and clears them.
        self.events: list[ReplayEvent] = []
        #: The rest of a step after the stops compiled (:class:`~.driver_step.CompiledStep`,
        #: the same numbers; the replay sets it when it runs the compiled kernels), None:
        #: this Python.
        self.compiled: Any = None

    @property
    def stop_at(self) -> float | None:
        """Where the run ends (front line distance; the front stops
        :attr:`STOP_SHORT` before it), None for no end. Setting it moves the final stop
        (a caller driving from stop to stop, such as an activity's service)."""
        return self._stop_at

    @stop_at.setter
    def stop_at(self, value: float | None) -> None:
        if value == self._stop_at and value is not None:
            return
        self._stop_at = value
        self.stops = [p for p in self.stops if p.kind != "end"]
        if value is not None:
            bisect.insort(self.stops, Stop(value - self.STOP_SHORT, math.inf, "end"), key=lambda p: p.s)

    # -- what must be respected ---------------------------------------------------------
    def add_target(self, target: Target) -> None:
        """A further speed target (e.g. a signal's); kept until the front passes it."""
        bisect.insort(self.targets, target, key=lambda t: t.s)

    def _limit_over(self, rear: float, front: float) -> float:
        """The lowest line limit over [rear, front] (a limit holds over the whole train)."""
        s, v = self.limit_s, self.limit_v
        a = max(bisect.bisect_right(s, rear) - 1, 0)
        b = max(bisect.bisect_right(s, front) - 1, 0)
        return min(v[a : b + 1]) * self.speed_factor

    def constraints(self, st: DriveState) -> list[tuple[float, float]]:
        """(speed, metres ahead of the front where it must hold) for everything that
        matters now: the limit over the train (0 m ahead), lower limits ahead, the next
        stop, extra targets ahead."""
        # (_limit_over inlined: this runs every step for every train)
        front, speed = st.front, st.speed
        s, v = self.limit_s, self.limit_v
        factor = self.speed_factor
        first = bisect.bisect_right(s, front)  # the first limit post ahead of the front
        a = max(bisect.bisect_right(s, st.rear) - 1, 0)
        b = max(first - 1, 0)
        cap = min(self.max_speed, min(v[a : b + 1]) * factor)
        out = [(cap, 0.0)]
        top = max(speed, cap)
        # (top * top, not top ** 2: pow() is not always the rounded product, and the
        # compiled step, _driver_kernel.one_step, multiplies)
        reach = top * top / (2.0 * self.decel) + 50.0 + speed * (st.dt + self.brake_delay + self.coast_before)
        for k in range(max(first, 0), len(s)):
            ahead = s[k] - front
            if ahead > reach:
                break
            if v[k] * factor < cap:
                out.append((v[k] * factor, ahead))
        for t in self.targets:
            ahead = t.s - front
            if ahead > reach:
                break
            if ahead >= 0.0:
                out.append((t.v, ahead))
        if self.stops:
            out.append((0.0, max(self.stops[0].s - front, 0.0)))
        return out

    def _next_stop(self) -> Stop | None:
        return self.stops[0] if self.stops else None

    # -- driving ------------------------------------------------------------------------
    def _delay_left(self) -> float:
        """The lag (s) of the brake build-up still to come: building up linearly from
        what the brakes give now, b, to the planned deceleration a at the rate r of
        :meth:`_follow_brakes` lags (a − b)²/(2·a·r) (docs/running-time.md §2). From
        nothing to a full application that is :attr:`brake_delay`."""
        if self.brake_delay <= 0.0 or self.decel <= 0.0:
            return 0.0
        short = max(self.decel - self._applied, 0.0)
        return short * short / (2.0 * self.decel * self._build_rate())

    def _build_rate(self) -> float:
        """m/s³: a full application (:attr:`brake_level`) in 2·brake_delay seconds."""
        return max(self.brake_level or self.decel, self.decel) / (2.0 * self.brake_delay)

    def _follow_brakes(self, asked: float, dt: float) -> None:
        """Track the brake application the way the replay builds it up and releases it."""
        if self.brake_delay <= 0.0:
            self._applied = asked
            return
        rate = self._build_rate()
        step = asked - self._applied
        self._applied += min(max(step, -dt * rate / self.release_over_build), dt * rate)

    def _build_to(self, v: float, vk: float, d: float) -> float:
        """The deceleration to ask for now (m/s² at this speed) so that brakes giving
        ``b`` now (``_applied``) and building up at ``r`` (:meth:`_build_rate`) bring the
        train from ``v`` down to ``vk`` within ``d`` m: in mean decelerations over the
        stop (``b/g``, ``r/g`` with ``g`` = :attr:`stop_gain`, the brakes' grip rising as
        the speed falls), ``(v² − vk²)/(2d)`` when b already does it, else the least
        level ``x`` whose linear build-up from b, then held, does (:func:`ramp_distance`,
        bisection), or 3× the planned deceleration when none does; times g."""
        g = self.stop_gain(v, vk) if self.stop_gain is not None else 1.0
        be = self._applied / g
        r = self._build_rate() / g if self.brake_delay > 0.0 else math.inf
        dv2 = v * v - vk * vk
        top = 3.0 * self.decel
        if dv2 <= 2.0 * be * d or r == math.inf:
            return min(dv2 / (2.0 * d), top) * g
        if ramp_distance(v, vk, be, top, r) > d:
            return top * g
        lo, hi = be, top
        for _ in range(BISECTIONS):
            mid = 0.5 * (lo + hi)
            if ramp_distance(v, vk, be, mid, r) > d:
                lo = mid
            else:
                hi = mid
        return hi * g

    def _lap_need(self, cons: list[tuple[float, float]], v: float) -> float:
        """Under its braking curves with the brakes applied (:attr:`lap_brakes`): the
        deceleration to hold for the most demanding lower target ahead
        (:meth:`_build_to`), 0 when every one of them lets the driver release: when the
        brakes as they are (``b``, in the stop's mean) would bring the train down to it
        more than :attr:`ARRIVED_WITHIN` plus the distance their build-up from nothing
        costs (``v·b/(2r)``) before it, there is time to apply them again. In between
        the driver laps the handle (it asks for no more than the brakes give, so no
        further reduction). A driver who released the Open Rails profile's triple
        valves (they release fully as soon as the pipe rises) under the curve had to
        build them up again from nothing a moment later: every such release put the
        train further behind its curve (docs/physics.md §7.9)."""
        b = self._applied
        r = self._build_rate() if self.brake_delay > 0.0 else math.inf
        keep = self.ARRIVED_WITHIN + (v * b / (2.0 * r) if r < math.inf else 0.0)
        need = 0.0
        for vk, d in cons:
            if d <= 0.0 or vk >= v:
                continue
            g = self.stop_gain(v, vk) if self.stop_gain is not None else 1.0
            if v * v - vk * vk <= 2.0 * (b / g) * (d - keep):
                continue  # the brakes would stop it well short: release
            need = max(need, self._build_to(v, vk, d))
        return need

    def __call__(self, st: DriveState) -> Controls:
        v = st.speed
        if self.brakes_at is not None:
            self.decel, self.brake_level = self.brakes_at(v)
        if self.brakes_now is not None:
            self._applied = self.brakes_now()
        stops = self.stops
        stop = stops[0] if stops else None
        if stop is not None and stop.arrived_at is not None:
            # Standing at a stop: hold the brakes until the wait is over.
            if stop.wait != math.inf and st.time - stop.arrived_at >= stop.wait - 1e-9:
                self.stops.pop(0)
                self.events.append(DepartedPoint(time=st.time, at=stop.s, train=self.train))
                stop = self._next_stop()
            else:
                if stop.wait == math.inf:
                    self.finished = True  # (a caller may have reset it)
                self._applied = self.decel
                return Controls(0.0, 1.0, self.decel)
        if stop is not None and abs(v) < self.STANDING and stop.s - st.front < self.ARRIVED_WITHIN:
            stop.arrived_at = st.time
            if stop.until is not None:
                stop.wait = _until(stop.until, self.clock0 + st.time)
            if stop.wait == math.inf:
                self.finished = True
            else:
                self.events.append(WaitingAtPoint(time=st.time, at=stop.s, wait=stop.wait, train=self.train))
            return Controls(0.0, 1.0, self.decel)
        # Targets passed by the front are done with.
        targets = self.targets
        while targets and targets[0].s < st.front - 1e-6:
            targets.pop(0)
        if self.compiled is not None and not targets:
            c = self.compiled.step(self, st)  # the rest below, compiled (None: not this time)
            if c is not None:
                return c
        cons = self.constraints(st)
        decel = self.decel
        two_a = 2.0 * decel
        dt = st.dt
        # The braking curves are checked where the front will be at the end of this
        # step, so that braking starts in time rather than a step late, plus the lag of
        # the brake build-up still to come. Dropping that lag at once when braking begins
        # put the train back under its curve the next step: the driver released, braked,
        # released ... and the brakes never built up (an overrun of the stop).
        # _delay_left and _build_rate, inlined
        bd = self.brake_delay
        rate = delay = 0.0
        if bd > 0.0:
            rate = max(self.brake_level or decel, decel) / (2.0 * bd)
            if decel > 0.0:
                short = max(decel - self._applied, 0.0)
                delay = short * short / (2.0 * decel * rate)
        ahead = max(v, 0.0) * (dt + delay)
        best, k_best = math.inf, 0
        coast = False
        coast_before = self.coast_before
        sqrt = math.sqrt
        for k, (vk, d) in enumerate(cons):
            p = sqrt(vk * vk + two_a * max(d - ahead, 0.0)) if d > 0.0 else vk
            if p < best:
                best, k_best = p, k
            if coast_before > 0.0 and d > 0.0 and vk < v:
                # Energy saving: coast once the braking point is this close.
                coast |= d - (v * v - vk * vk) / two_a < v * coast_before
        vk, d = cons[k_best]
        if d > 0.0 and vk < v and v > best - self.ON_CURVE:
            # On (or over) the braking curve of a lower target: brake with what it needs.
            # (the distance left once the brakes are built up)
            room = d - max(v, 0.0) * delay
            need = (v * v - vk * vk) / (2.0 * room) if room > 1e-3 else 3.0 * decel
            asked = min(need, 3.0 * decel)
            if self.lap_brakes:
                # the level whose build-up from the brakes of the moment just makes it
                asked = self._build_to(v, vk, d)
                self._braking = True
            self._follow_brakes(asked, dt)
            # Far over the curve (a target appeared late, e.g. a signal): emergency.
            return Controls(deceleration=asked, emergency=d > 1e-3 and need > EMERGENCY_OVER * decel)
        if v > best + 1e-6:
            # Over the limit that holds now (a lower one has reached the train).
            asked = min((v - best) / max(dt, 1e-3), 3.0 * decel)
            self._follow_brakes(asked, dt)
            self._braking = self.lap_brakes
            return Controls(deceleration=asked)
        if self.lap_brakes and self._braking:
            lap = self._lap_need(cons, v)
            if lap > 0.0:
                return Controls(deceleration=lap)
            self._braking = False
        # _follow_brakes(0.0, dt), inlined
        if bd <= 0.0:
            self._applied = 0.0
        else:
            step = 0.0 - self._applied
            self._applied += min(max(step, -dt * rate / self.release_over_build), dt * rate)
        if coast:
            return Controls()
        return Controls(0.0, 0.0, 0.0, best)


def _pmax(a, b):  # noqa: ANN001, ANN202
    """Python's ``max(a, b)`` elementwise: ``b`` only where ``b > a`` (NaN and the sign
    of a zero come out as the scalar code's; ``np.maximum`` where neither can matter)."""
    return np.where(b > a, b, a)


def _pmin(a, b):  # noqa: ANN001, ANN202
    """Python's ``min(a, b)`` elementwise."""
    return np.where(b < a, b, a)


#: the compiled core of :meth:`DriverBatch.drive`, imported on first use (None without
#: numba: the numpy calls; both give the same numbers)
_CORE = LazyKernel("_driver_kernel", "core")


def _count_at_or_below(ptr: np.ndarray, flat: np.ndarray, base: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``bisect_right(row, x[i])`` for every row ``flat[base[i] + 1 :]`` (led by −inf,
    padded with +inf), moved on from last step's counts ``ptr``: a front passes a post
    or two a step."""
    while True:
        up = flat[base + 1 + ptr] <= x
        if not np.logical_or.reduce(up):
            break
        ptr = ptr + up
    while True:
        down = flat[base + ptr] > x
        if not np.logical_or.reduce(down):
            break
        ptr = ptr - down
    return ptr


@dataclass(frozen=True, slots=True, eq=False)
class _SignalTable:
    """What a :class:`DriverBatch` reads of the rows' signal wrappers (when the signals
    change), and the constraint table laid out for it: per row, the cap, ``WINDOW`` posts,
    the next stop, the signal's stop, creep and limits (``vk`` speeds, ``d`` distances,
    ``valid``), and ``flat_rows``, each row's start in the flattened table."""

    sig_stop: np.ndarray
    has_sig_stop: np.ndarray
    creep_at: np.ndarray
    lim_a: np.ndarray
    lim_b: np.ndarray
    lim_v: np.ndarray
    lim_there: np.ndarray
    vk: np.ndarray
    d: np.ndarray
    valid: np.ndarray
    flat_rows: np.ndarray


@dataclass(frozen=True, slots=True, eq=False)
class _StepRates:
    """A :class:`DriverBatch`'s per-row values that depend on the step length ``dt``: the
    brake's release and build-up per step and the distance the lag covers per m/s."""

    dt: float
    release: np.ndarray
    build: np.ndarray
    reach_lag: np.ndarray


class DriverBatch:
    """The automatic drivers of many trains, one step of all of them in numpy calls
    (docs/running-time.md §2.1), giving the controls and brake state their
    :meth:`AutoDriver.__call__` would, bit for bit.

    ``autos[k]``: train k's driver (None: not driven here); ``departs[k]``: the wrapper
    holding it with full brake until its ``depart`` time, ``signals[k]``: the signal
    wrapper whose ``stop_s``, ``creep_at`` and ``limits`` join its constraints (either
    None). The settings (``decel``, ``brake_delay``, ``brake_level``, ``brakes_at``,
    ``speed_factor``, ``max_speed``, ``coast_before``, the limit posts, ``depart``) are
    read here, once: make a new batch when they change. The state is the drivers':
    stops, targets, ``finished`` and ``_applied`` are read on the first step and then
    of every train the step before did not drive (the caller drives it by its own call,
    which may change them), and ``_applied`` is written back; a train the batch drove
    keeps them otherwise, so a change to one from outside between steps needs a new
    batch (docs/running-time.md §2.1). The signal wrappers' values are read when
    ``signals_version`` changes."""

    #: Limit posts ahead of the front looked at each step; a train with more posts within
    #: its reach is left to its own call that step.
    WINDOW = 6

    def __init__(
        self,
        autos: Sequence[AutoDriver | None],
        departs: Sequence[Any],
        signals: Sequence[Any],
        creep: float,
        *,
        compiled: bool = True,
    ) -> None:
        # the compiled core when numba is there (the replay's choice: kernels.replay_compiled)
        self.compiled = compiled
        self.n = len(autos)
        rows = [k for k, d in enumerate(autos) if d is not None and len(d.limit_s) > 0]
        self.rows = np.array(rows, dtype=np.int64)
        self.autos: list[AutoDriver] = [autos[k] for k in rows]  # type: ignore[misc]
        self.signals = [signals[k] for k in rows]
        self.creep = float(creep)
        autos_ = self.autos
        m = len(rows)
        self.m = m
        f64 = np.float64
        self.dec = np.array([d.decel for d in autos_], dtype=f64)
        self.bd = np.array([d.brake_delay for d in autos_], dtype=f64)
        # `brake_level or decel`: None and 0 mean the planned deceleration
        level = np.array([d.brake_level or d.decel for d in autos_], dtype=f64)
        self.sf = np.array([d.speed_factor for d in autos_], dtype=f64)
        self.vmax = np.array([d.max_speed for d in autos_], dtype=f64)
        self.cb = np.array([d.coast_before for d in autos_], dtype=f64)
        self.depart = np.array(
            [-math.inf if departs[k] is None else departs[k].depart for k in rows],
            dtype=f64,
        )
        dec, bd = self.dec, self.bd
        with np.errstate(all="ignore"):
            # _build_rate and the divisor of _delay_left, as __call__ computes them
            self.rate = np.where(bd > 0.0, _pmax(level, dec) / (2.0 * bd), 0.0)
            self.lag_div = 2.0 * dec * self.rate
        self.lag_on = (bd > 0.0) & (dec > 0.0)
        self.two_a, self.three_a = 2.0 * dec, 3.0 * dec
        self.emergency_at = EMERGENCY_OVER * dec
        # only these settings keep a train in the batch (the others: its own call)
        fixed = np.array([d.brakes_at is None and not d.lap_brakes for d in autos_], dtype=bool)
        self.settled = fixed & (self.cb == 0.0) & (dec > 0.0)
        #: trains that can stand at a last stop here (brakes_at would change decel first)
        self.fixed = fixed
        counts = [len(d.limit_s) for d in autos_]
        width = max(counts, default=0) + self.WINDOW + 1
        # Post distances and limits, one row per train, padded with +inf (never ≤ a
        # front, never lower than a cap), flat with each row's start in `base`.
        post_s = np.full((m, width), np.inf)
        post_v = np.full((m, width), np.inf)
        for i, d in enumerate(autos_):
            post_s[i, : counts[i]] = d.limit_s
            post_v[i, : counts[i]] = d.limit_v
        self.post_s, self.post_v = post_s.ravel(), post_v.ravel()
        self.base = np.arange(m, dtype=np.int64) * width
        # the posts led by −inf, for counting the posts behind the fronts and rears
        self.post_s_led = np.column_stack((np.full(m, -np.inf), post_s)).ravel()
        self.base2 = np.tile(np.arange(m, dtype=np.int64) * (width + 1), 2)
        self.all_rows = m == self.n  # (every train is a row: no gathering or scattering)
        self._window = np.arange(self.WINDOW)
        self._counts: np.ndarray | None = None  # posts at or behind the fronts, then the rears
        # the constraint table, in the order of constraints(): the cap, WINDOW posts, the
        # next stop, then the signal's stop, creep and limits
        self._sig_version: object = None
        self._sig: _SignalTable | None = None
        self._rates: _StepRates | None = None
        # the rows' stops and brake state as the last step left them (_state)
        self._stale: np.ndarray | None = None
        self._code = self._applied_now = np.zeros(0)
        self._next_time = math.nan

    def _state(self, time: float, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """Per row: the next stop's s (NaN: none; -inf: standing at it, or extra targets,
        or finished: such a train is left to its own call) and the brakes' state
        (``_applied``). Read from the drivers of the rows the last step did not drive
        (their own call may change them), from all on the first step or when this step
        is not the one after the last (``time`` is not the last one plus ``dt``); a row
        driven here keeps its stop and has the ``_applied`` written back."""
        autos = self.autos
        if self._stale is None or time != self._next_time:
            read = range(self.m)
            code = np.empty(self.m)
            applied = np.empty(self.m)
        else:
            read = np.flatnonzero(self._stale).tolist()
            code = self._code.copy()
            applied = self._applied_now
        self._next_time = time + dt
        inf = math.inf
        for i in read:
            d = autos[i]
            code[i] = (
                -inf
                if d.targets or d.finished
                else (d.stops[0].s if d.stops[0].arrived_at is None else -inf)
                if d.stops
                else math.nan
            )
            applied[i] = d._applied
        return code, applied

    def _read_signals(self) -> _SignalTable:
        sigs = self.signals
        nan = math.nan
        has_sig_stop = np.array([w is not None and w.stop_s is not None for w in sigs], dtype=np.bool_)
        limits = [() if w is None else w.limits for w in sigs]
        n_lim = np.array([len(x) for x in limits], dtype=np.int64)
        L = int(n_lim.max(initial=0))
        m = self.m
        lim = np.full((3, m, L), np.nan)
        if L:
            flat = np.array([x for lst in limits for x in lst], dtype=np.float64).reshape(-1, 3)
            r_of = np.repeat(np.arange(m), n_lim)
            c_of = np.arange(len(flat)) - np.repeat(np.cumsum(n_lim) - n_lim, n_lim)
            lim[:, r_of, c_of] = flat.T
        lim_a, lim_b, lim_v = lim
        C = 1 + self.WINDOW + 3 + L
        vk = np.zeros((m, C))
        vk[:, 1 + self.WINDOW + 2] = self.creep
        vk[:, 1 + self.WINDOW + 3 :] = lim_v
        valid = np.zeros((m, C), dtype=bool)
        valid[:, 0] = True
        valid[:, 1 + self.WINDOW + 1] = has_sig_stop
        return _SignalTable(
            sig_stop=np.array(
                [nan if w is None or w.stop_s is None else w.stop_s for w in sigs],
                dtype=np.float64,
            ),
            has_sig_stop=has_sig_stop,
            creep_at=np.array(
                [nan if w is None or w.creep_at is None else w.creep_at for w in sigs],
                dtype=np.float64,
            ),
            lim_a=lim_a,
            lim_b=lim_b,
            lim_v=lim_v,
            lim_there=np.arange(L) < n_lim[:, None],
            vk=vk,
            d=np.zeros((m, C)),
            valid=valid,
            flat_rows=np.arange(m, dtype=np.int64) * C,
        )

    def drive(
        self,
        time: float,
        dt: float,
        front: np.ndarray,
        speed: np.ndarray,
        rear: np.ndarray,
        free: np.ndarray,
        signals_version: object = None,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """One step: ``(driven, (throttle, brake, deceleration, speed_target (NaN for
        None), emergency))`` over all n trains; ``driven`` marks the trains whose
        controls these are (the others: call their driver). ``free``: the trains the
        caller lets drive (not derailed)."""
        n = self.n
        out_thr = np.zeros(n)
        rows, autos, W = self.rows, self.autos, self.WINDOW
        if not len(rows):
            return np.zeros(n, dtype=bool), (
                out_thr,
                np.zeros(n),
                np.zeros(n),
                np.full(n, np.nan),
                np.zeros(n, dtype=bool),
            )
        sig = self._sig
        if sig is None or signals_version != self._sig_version or self._sig_version is None:
            sig = self._sig = self._read_signals()
            self._sig_version = signals_version if signals_version is not None else object()
        rates = self._rates
        if rates is None or dt != rates.dt:
            rates = self._rates = _StepRates(
                dt, -dt * self.rate / RELEASE_OVER_BUILD_UP, dt * self.rate, dt + self.bd + self.cb
            )
        fr, sp, re = (front, speed, rear) if self.all_rows else (front[rows], speed[rows], rear[rows])
        nan, inf = math.nan, math.inf
        code, applied = self._state(time, dt)  # the next stop's s and the brakes' state
        # bisect_right of the fronts and rears among the posts, kept up to date
        ends = np.concatenate((fr, re))
        if self._counts is None:
            self._counts = np.array(
                [bisect.bisect_right(d.limit_s, x) for d, x in zip(autos + autos, ends.tolist())],
                dtype=np.int64,
            )
        counts = self._counts = _count_at_or_below(self._counts, self.post_s_led, self.base2, ends)
        m = self.m
        first = counts[:m]
        base = self.base
        vk, d, valid = sig.vk, sig.d, sig.valid
        core = _CORE() if self.compiled else None
        if core is not None:
            # the same operations train by train, compiled (tdbtools.physics._driver_kernel)
            best, asked, emergency = np.empty(m), np.empty(m), np.empty(m, dtype=bool)
            new_applied, ok, braking = np.empty(m), np.empty(m, dtype=bool), np.empty(m, dtype=bool)
            core(
                fr, sp, re, code, applied, counts, self.post_v, self.post_s, base, self.sf,
                self.vmax, self.two_a, self.three_a, rates.reach_lag, self.dec, self.lag_on,
                self.lag_div, self.bd, rates.release, rates.build, self.emergency_at, self.settled,
                sig.sig_stop, sig.creep_at, sig.lim_a, sig.lim_b, sig.lim_there, vk, d, valid,
                dt, max(dt, 1e-3), W, AutoDriver.ON_CURVE, AutoDriver.STANDING,
                AutoDriver.ARRIVED_WITHIN, best, asked, emergency, new_applied, ok, braking,
            )  # fmt: skip
        else:
            with np.errstate(all="ignore"):  # rows left to their own call may hold anything
                # the cap: the lowest limit over the train, min(v[a : b + 1]) in order
                a = np.maximum(counts[m:] - 1, 0)
                b = np.maximum(first - 1, 0)
                low = self.post_v[base + a]
                for j in range(1, int((b - a).max()) + 1):
                    cand = self.post_v[base + np.minimum(a + j, b)]
                    low = np.where((a + j <= b) & (cand < low), cand, low)
                cap = _pmin(self.vmax, low * self.sf)
                top = np.maximum(sp, cap)
                reach = top * top / self.two_a + 50.0 + sp * rates.reach_lag
                at = (base + first)[:, None] + self._window
                vk[:, 0] = cap
                post_v = vk[:, 1 : 1 + W]
                np.multiply(self.post_v[at], self.sf[:, None], out=post_v)
                np.subtract(self.post_s[at], fr[:, None], out=d[:, 1 : 1 + W])
                np.less(post_v, cap[:, None], out=valid[:, 1 : 1 + W])
                # the next post out of the window must be out of reach
                after = self.post_s[base + first + W] - fr
                # (max(x, 0.0) as np.maximum: no NaN in a valid column, and a zero's sign
                # goes no further than a `> 0` test or a sum)
                S = 1 + W
                np.maximum(code - fr, 0.0, out=d[:, S])
                valid[:, S] = code == code  # (not NaN: a stop)
                np.maximum(sig.sig_stop - fr, 0.0, out=d[:, S + 1])
                np.subtract(sig.creep_at, fr, out=d[:, S + 2])
                np.greater(sig.creep_at, fr, out=valid[:, S + 2])
                if sig.lim_a.shape[1]:
                    np.maximum(sig.lim_a - fr[:, None], 0.0, out=d[:, S + 3 :])
                    valid[:, S + 3 :] = sig.lim_there & ~(sig.lim_b < re[:, None])
                # _delay_left: the lag of the brake build-up still to come
                short = np.maximum(self.dec - applied, 0.0)
                delay = np.where(self.lag_on, short * short / self.lag_div, 0.0)
                fwd = np.maximum(sp, 0.0)
                ahead = fwd * (dt + delay)
                room_all = np.maximum(d - ahead[:, None], 0.0)
                p = np.where(d > 0.0, np.sqrt(vk * vk + self.two_a[:, None] * room_all), vk)
                # `p < best` from best = inf: NaN and inf never win, the first minimum does
                p = np.where(valid & (p < inf), p, inf)
                k = sig.flat_rows + np.argmin(p, axis=1)
                best, vb, db = p.ravel()[k], vk.ravel()[k], d.ravel()[k]
                on_curve = (db > 0.0) & (vb < sp) & (sp > best - AutoDriver.ON_CURVE)
                room = db - fwd * delay
                need = np.where(room > 1e-3, (sp * sp - vb * vb) / (2.0 * room), self.three_a)
                over = ~on_curve & (sp > best + 1e-6)
                asked = np.where(
                    on_curve,
                    _pmin(need, self.three_a),
                    np.where(over, _pmin((sp - best) / max(dt, 1e-3), self.three_a), 0.0),
                )
                emergency = on_curve & (db > 1e-3) & (need > self.emergency_at)
                follow = applied + _pmin(_pmax(asked - applied, rates.release), rates.build)
                new_applied = np.where(self.bd <= 0.0, asked, follow)
                # Left out by constraints(): posts and targets beyond reach. With v ≥ 0 one
                # can never win: d > reach ≥ cap²/2a + 50 + v·(dt + brake_delay) and ahead ≤
                # v·(dt + brake_delay) (the lag left is at most brake_delay), so its permitted
                # speed is > sqrt(cap² + 100·a) > cap, the first column's (`after` checks the
                # first post outside the window; a post inside it but beyond reach is harmless).
                ok = (
                    self.settled
                    & (sp >= 0.0)
                    & (code != -inf)
                    & ~(
                        (code == code)
                        & (np.abs(sp) < AutoDriver.STANDING)
                        & (code - fr < AutoDriver.ARRIVED_WITHIN)
                    )
                    & (after > reach + 1.0)
                )
            braking = on_curve | over
        go = free[rows]
        held = go & (time < self.depart)  # full brake until the departure time
        ok &= go & ~held
        # what the next step reads of the trains driven here (see _state)
        self._code = code
        self._applied_now = np.where(ok, new_applied, applied)
        self._stale = ~ok
        # written back where the bits change (a train holding its speed keeps 0.0)
        write = ok & (new_applied.view(np.int64) != applied.view(np.int64))
        if np.logical_or.reduce(write):
            for drv, x in zip(compress(autos, write.tolist()), new_applied[write].tolist()):
                drv._applied = x
        # Standing at a stop without end (the end of the run): what __call__ does first,
        # full brake at the planned deceleration, and its signal wrapper's check after.
        stand = go & ~held & self.fixed & (code == -inf)
        stand_dec = None
        if np.logical_or.reduce(stand):
            stand_dec = np.zeros(m)
            for i in np.flatnonzero(stand).tolist():
                drv = autos[i]
                st = drv.stops
                if not st or st[0].arrived_at is None or st[0].wait != inf:
                    stand[i] = False
                    continue
                drv.finished = True
                drv._applied = drv.decel
                stand_dec[i] = drv.decel
                if self.signals[i] is not None:  # SignalDriver.__call__ after its inner call
                    stop = drv.stop_at
                    if stop is not None and stop - drv.STOP_SHORT - float(fr[i]) >= drv.ARRIVED_WITHIN:
                        drv.finished = False  # held at a signal, not at the end of the path
        if stand_dec is not None:
            full = held | stand
            dec_now = np.where(ok & braking, asked, stand_dec)
        else:
            full = held
            dec_now = np.where(ok & braking, asked, 0.0)
        if self.all_rows:
            driven = ok | full
            out_tgt = np.where(ok & ~braking, best, nan)
            out_em = ok & emergency
            out_brk = np.where(full, 1.0, 0.0)
            return driven, (out_thr, out_brk, dec_now, out_tgt, out_em)
        out_brk, out_dec, out_tgt = np.zeros(n), np.zeros(n), np.full(n, np.nan)
        out_em, driven = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        r_ok = rows[ok]
        driven[r_ok] = True
        driven[rows[full]] = True
        out_dec[rows] = dec_now
        out_tgt[r_ok] = np.where(braking, nan, best)[ok]
        out_em[r_ok] = emergency[ok]
        out_brk[rows[full]] = 1.0
        return driven, (out_thr, out_brk, out_dec, out_tgt, out_em)
