"""The driving stage of a replay: every train's driver called for its controls, each
step, and the trains that finished found (arrived, stopped for good, derailed and
standing).

A few trains are driven one by one in Python. From
:attr:`DrivingStage.BATCH_DRIVERS_MIN_TRAINS` trains on, the plain automatic drivers
(alone or in a signal or departure wrapper) are driven together in numpy calls over all
of them (:class:`~tdbtools.physics.driver.DriverBatch`, the same numbers), the others
by their own call, in train order. What the stage keeps between steps (the batch, the
unwrapped drivers, the derailed flags) is made anew when the trains'
:class:`~tdbtools.physics.stages.setup.Changes` moved (docs/running-time.md §2.1).
"""

from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...signals.runtime import CREEP
from ..driver import AutoDriver, Controls, DriverBatch, DriveState, ScheduleDriver
from ..events import Arrived, EventLog, TrainStopped
from ..signalling import DepartDriver, SignalDriver
from .setup import Layout, Train


@dataclass(frozen=True, slots=True, eq=False)
class ControlArrays:
    """The drivers' :class:`Controls` of one step as arrays over all trains."""

    throttle: np.ndarray
    brake: np.ndarray
    deceleration: np.ndarray
    target: np.ndarray  # speed_target, NaN for None
    emergency: np.ndarray  # bool
    dynamic: np.ndarray | None = None  # the dynamic-brake handles (None: all 0)

    @classmethod
    def of(cls, ctrl: list[Controls]) -> ControlArrays:
        nan = float("nan")
        return cls(
            np.array([c.throttle for c in ctrl], dtype=np.float64),
            np.array([c.brake for c in ctrl], dtype=np.float64),
            np.array([c.deceleration for c in ctrl], dtype=np.float64),
            np.array([nan if c.speed_target is None else c.speed_target for c in ctrl], dtype=np.float64),
            np.array([c.emergency for c in ctrl], dtype=bool),
            np.array([c.dynamic for c in ctrl], dtype=np.float64),
        )


# (C-level attribute reads for the passes over all trains of each step)
_DRIVER = operator.attrgetter("driver")
_DONE_AT = operator.attrgetter("done_at")
_FINISHED = operator.attrgetter("finished")


def _replaced(before: list, now: list) -> bool:
    """Whether any object of ``now`` is not the one in ``before`` (by identity: a driver
    may compare equal to another)."""
    return len(before) != len(now) or any(map(operator.is_not, before, now))


class DrivingStage:
    """The drivers of a replay's trains (module docstring)."""

    #: From this many trains on, a step works out the traction and brakes of all trains
    #: with numpy calls over all of them, and from BATCH_DRIVERS_MIN_TRAINS on it also
    #: drives the automatic drivers so (the same numbers, docs/running-time.md §2.1);
    #: below, per-train Python is cheaper (measured break-even: ~25 and ~50 trains).
    BATCH_MIN_TRAINS = 24
    BATCH_DRIVERS_MIN_TRAINS = 48
    #: Up to this many trains, the fronts, rears and speeds are read car by car.
    FEW_TRAINS = 4

    def __init__(self, layout: Layout, log: EventLog) -> None:
        self.L = layout
        self.trains = layout.trains
        self.engine = layout.engine
        self.log = log
        self.changes = layout.trains[0].changes if layout.trains else None
        self.running = list(range(len(self.trains)))  # trains not done yet, in order
        self._batch: DriverBatch | None = None
        self._batch_of: list = []
        self._batch_key: tuple | None = None
        self._inner_of: list = []
        self._inner: list = []
        self._inner_kind: list[int] = []
        self._inner_key: tuple | None = None
        self._run_view: tuple | None = None
        self._derailed_of: tuple | None = None
        self._done_key: tuple | None = None
        self._ends: list[tuple[int, int, float]] | None = None  # (controls: the trains' end cars)
        #: (after_step) the Changes key and running list for which ``_quiet`` holds, and
        #: the running trains' automatic drivers when none of them is derailed or runs on
        #: a schedule (None: some is; every step then asks due_batch)
        self._quiet: tuple | None = None
        self._running_key: tuple | None = None  # (after_step: running made for this key)
        self._all_done: tuple | None = None  # (all_done: its key and answer)

    def _key(self) -> tuple:
        return (self.changes.version if self.changes is not None else 0, len(self.trains))

    def controls(
        self, time: float, x: np.ndarray, v: np.ndarray, dt: float, signals_version: int
    ) -> tuple[Any, list | None, bool]:
        """The drivers' controls for this step: (a list of :class:`Controls`, or
        :class:`ControlArrays` over all trains; the trains' speeds as floats for the
        per-train force loop, or None; whether the forces go in numpy calls over all
        trains)."""
        L = self.L
        T = len(self.trains)
        batch = T >= self.BATCH_MIN_TRAINS
        if batch and T >= self.BATCH_DRIVERS_MIN_TRAINS:
            return self.drive_batch(time, x, v, dt, signals_version), None, True
        # One Python pass over the trains: the drivers (scalars), fed with the fronts,
        # rears and speeds read out in one go (a train or two: element by element, the
        # same numbers without numpy's calls on arrays of one).
        drive = self.drive
        if T <= self.FEW_TRAINS:
            ends = self._ends
            if ends is None or len(ends) != T:
                ends = self._ends = list(
                    zip(L.train_start.tolist(), L.train_end.tolist(), L.end_length.tolist())
                )
            # (one pass: the positions do not change while the drivers are called)
            item, vitem = x.item, v.item
            speeds = []
            ctrl = []
            for k, (i, j, e) in enumerate(ends):
                s = vitem(i)
                speeds.append(s)
                ctrl.append(drive(time, k, item(i), s, item(j) - e, dt))
        else:
            starts = L.train_start
            fronts = x[starts].tolist()
            speeds = v[starts].tolist()
            rears = (x[L.train_end] - L.end_length).tolist()
            ctrl = [drive(time, k, fronts[k], speeds[k], rears[k], dt) for k in range(T)]
        if batch:
            return ControlArrays.of(ctrl), speeds, True
        return ctrl, speeds, False

    def drive(self, time: float, k: int, front: float, speed: float, rear: float, dt: float) -> Controls:
        """Train k's driver, called for this step (a derailed train brakes)."""
        t = self.trains[k]
        if t.derailed:
            c = Controls(0.0, 1.0, 0.0)
        else:
            c = t.driver(DriveState(time, front - t.front0, speed, front, rear, dt))
            d = t.driver  # (the one now: a driver may hand over to another)
            evs = getattr(getattr(d, "inner", d), "events", None)
            if evs:  # waiting points: arrived and waiting, departed
                for e in evs:
                    self.log.add(e)
                evs.clear()
        t.controls = c
        return c

    def running_view(self) -> tuple[list, list, bool]:
        """The running trains (``_running``) as their trains and their automatic inner
        drivers, and whether any runs on a schedule; made anew when either changes."""
        inner, kind = self.inner_drivers()
        run = self.running
        got = self._run_view
        if got is None or got[0] is not run or got[1] is not inner:
            trains = self.trains
            got = self._run_view = (
                run,
                inner,
                [trains[k] for k in run],
                [inner[k] for k in run if kind[k] == 2],
                any(kind[k] == 1 for k in run),
            )
        return got[2], got[3], got[4]

    def due_batch(self) -> list[int]:
        """The running trains :meth:`done` must look at (derailed, on a schedule, or with
        an automatic driver that finished): most steps none, found by C-level passes over
        the flags before the per-train list (docs/running-time.md §2.1)."""
        run_trains, autos, sched = self.running_view()
        if not sched and not self.derailed()[1] and not any(map(_FINISHED, autos)):
            return []
        inner, kind = self.inner_drivers()
        trains = self.trains
        return [
            k
            for k in self.running
            if trains[k].derailed or kind[k] == 1 or (kind[k] == 2 and inner[k].finished)
        ]

    def any_done(self) -> bool:
        """Whether a running train has its ``done_at`` set (by this step's end of line,
        the signals or a subclass)."""
        key = (*self._key(), self.running)
        got = self._done_key
        if got is not None and got[0] == key[:2] and got[1] is key[2]:
            return got[2]
        run_trains = self.running_view()[0]
        done = any(map(operator.is_not, map(_DONE_AT, run_trains), itertools.repeat(None)))
        self._done_key = (key[:2], key[2], done)
        return done

    def derailed(self) -> tuple[np.ndarray, bool]:
        """Which trains are derailed, and whether any (made anew when a train's flags
        were set)."""
        key = self._key()
        got = self._derailed_of
        if got is None or got[0] != key:
            arr = np.array([t.derailed for t in self.trains], dtype=bool)
            got = self._derailed_of = (key, arr, bool(arr.any()))
        return got[1], got[2]

    def inner_drivers(self) -> tuple[list, list[int]]:
        """Per train: its driver out of its wrapper (``inner``), and 1 for a schedule
        driver, 2 for an automatic one, 0 else; made anew when a train's driver is
        replaced (a wrapper's ``inner`` is taken to stay)."""
        if self._inner_key == self._key():
            return self._inner, self._inner_kind
        self._inner_key = self._key()
        drivers = list(map(_DRIVER, self.trains))
        if _replaced(self._inner_of, drivers):
            inner = [getattr(d, "inner", d) for d in drivers]
            self._inner = inner
            self._inner_kind = [
                1 if isinstance(d, ScheduleDriver) else 2 if isinstance(d, AutoDriver) else 0 for d in inner
            ]
            self._inner_of = drivers
        return self._inner, self._inner_kind

    def driver_batch(self) -> DriverBatch:
        """The batch of automatic drivers of this replay's trains, made anew when a
        train's driver was replaced (an activity's service drivers, a test's wrapper).
        Only plain automatic drivers, alone or in a signal or departure wrapper, are in
        it: any other driver (or one whose constraints were replaced) is called."""
        if self._batch is not None and self._batch_key == self._key():
            return self._batch
        self._batch_key = self._key()
        drivers = list(map(_DRIVER, self.trains))
        if self._batch is None or _replaced(self._batch_of, drivers):
            autos: list[AutoDriver | None] = []
            departs: list[Any] = []
            sigs: list[Any] = []
            for d in drivers:
                a: AutoDriver | None = None
                dep: Any = None
                sig: Any = None
                if type(d) is AutoDriver and "constraints" not in vars(d):
                    a = d
                elif isinstance(d, SignalDriver | DepartDriver) and type(d.inner) is AutoDriver:
                    own = vars(d.inner).get("constraints")
                    if type(d) is SignalDriver and own is d.constraints:
                        a, dep, sig = d.inner, d, d
                    elif type(d) is DepartDriver and own is None:
                        a, dep = d.inner, d
                autos.append(a)
                departs.append(dep)
                sigs.append(sig)
            self._batch = DriverBatch(autos, departs, sigs, CREEP, compiled=self.L.compiled)
            self._batch_of = drivers
        return self._batch

    def drive_batch(
        self, time: float, x: np.ndarray, v: np.ndarray, dt: float, signals_version: int
    ) -> ControlArrays:
        """The controls of every train: the automatic drivers in the common state in
        numpy calls over all of them (:class:`DriverBatch`), the others by their own
        call, in train order (their events keep it). Trains driven in the batch keep
        the ``controls`` of the last step they were called."""
        front = x[self.L.train_start]
        speed = v[self.L.train_start]
        rear = x[self.L.train_end] - self.L.end_length
        free = ~self.derailed()[0]
        driven, (thr, brk, dec, tgt, em) = self.driver_batch().drive(
            time, dt, front, speed, rear, free, signals_version
        )
        rest = np.flatnonzero(~driven).tolist()
        dyn = np.zeros(len(thr))  # the batch's automatic drivers use no dynamic brake
        if rest:
            fl, sl, rl = front[rest].tolist(), speed[rest].tolist(), rear[rest].tolist()
            nan = float("nan")
            for j, k in enumerate(rest):
                c = self.drive(time, k, fl[j], sl[j], rl[j], dt)
                thr[k], brk[k], dec[k] = c.throttle, c.brake, c.deceleration
                tgt[k] = nan if c.speed_target is None else c.speed_target
                em[k] = c.emergency
                dyn[k] = c.dynamic
        return ControlArrays(thr, brk, dec, tgt, em, dyn)

    def done(self, time: float, t: Train, dt: float, speed: float) -> None:
        if t.done_at is not None:
            return
        drv = getattr(t.driver, "inner", t.driver)
        if isinstance(drv, AutoDriver) and drv.finished:
            t.finish(time)
            self.log.add(
                Arrived(time=time, train=t.spec.name, distance=float(self.engine.x[t.cars][0] - t.front0))
            )
            return
        if t.derailed:
            if speed < 1e-3:
                t.finish(time)
            return
        if isinstance(drv, ScheduleDriver):
            last = drv.at[-1] if drv.at else 0.0
            key = time if drv.by == "time" else float(self.engine.x[t.cars][0] - t.front0)
            t.stopped_for = t.stopped_for + dt if speed < 1e-3 else 0.0
            if key >= last and t.stopped_for >= 10.0 and t.controls.throttle == 0.0:
                t.finish(time - t.stopped_for)
                self.log.add(TrainStopped(time=time - t.stopped_for, train=t.spec.name))

    def all_done(self) -> bool:
        """Whether every train has finished (its ``done_at`` set): looked at again only
        when the trains' :class:`~.setup.Changes` moved (:meth:`Train.finish` moves it)."""
        key = self._key()
        got = self._all_done
        if got is None or got[0] != key:
            got = self._all_done = (key, all(t.done_at is not None for t in self.trains))
        return got[1]

    def after_step(self, time: float, dt: float, v1: np.ndarray, batch: bool) -> None:
        """The running trains that finished in this step marked done (with their events),
        and taken out of the running ones. Most steps nobody is derailed or on a schedule
        and no automatic driver finished: one C-level pass over the drivers' flags finds
        it (the trains' Changes say when to look at them again)."""
        key = self._key()
        quiet = self._quiet
        if quiet is None or quiet[0] != key or quiet[1] is not self.running:
            run_trains, autos, sched = self.running_view()
            quiet = self._quiet = (key, self.running, None if sched or self.derailed()[1] else autos)
        # done() does nothing for a train that runs on (saves the speeds)
        due = [] if quiet[2] is not None and not any(map(_FINISHED, quiet[2])) else self.due_batch()
        trains = self.trains
        if due:
            top = np.maximum.reduceat(np.abs(v1), self.L.train_start).tolist()
            for k in due:
                self.done(time, trains[k], dt, top[k])
        # (done_at is set only by Train.finish, which moves the key: only done() above
        # can have moved it since it was read)
        now = self._key() if due else key
        if now != self._running_key:
            self.running = [k for k in self.running if trains[k].done_at is None]
            self._running_key = now


__all__ = ["ControlArrays", "DrivingStage"]
