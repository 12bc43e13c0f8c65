"""One train's Open Rails forces of a replay step in one compiled call
(``_orts_step_kernel.train_step``; docs/physics.md §7.9): this module packs what the call
takes once (the units' specs and states, the brakes' constants and memo) and, each step,
hands it the driver's controls as the reference reads them.

The reference is ``OrtsTrainForces``' per-train step (orts/replay_forces.py), the same
operations in the same order; a train the call does not cover runs it: always when one
of its power units or its brakes have no compiled kernel (a gearbox, force curves, a
dynamic brake, several diesel engines or a ``ThrottleRPMTab``, vacuum brakes, shoe
friction tables), and for a step when the automatic driver needs its brakes (a
deceleration demand, or a speed target the train overruns without traction; the call
says so before it changes anything). The state then goes to the reference's objects and
back (:meth:`FusedTrain.to_objects`, :meth:`FusedTrain.from_objects`).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..kernels import LazyKernel
from .airbrake import Handle

__all__ = ["FusedTrain", "fused_train"]

#: the compiled step of one train (None without numba)
_TRAIN_STEP = LazyKernel("_orts_step_kernel", "train_step")


class FusedTrain:
    """One train's packed arguments of ``train_step`` (see there) and its last handle."""

    __slots__ = (
        "kernel",
        "call",
        "tb",
        "units",
        "tconst",
        "units_a",
        "uidx",
        "caps",
        "brake_args",
        "handle",
        "triple",
    )

    def __init__(
        self, kernel: Any, tb: Any, groups: list, member: list[int], inertia: float, start: int, limits: tuple
    ) -> None:
        from .. import _orts_kernel as OK
        from .. import _orts_step_kernel as K

        _, bcars, bconsts, frac, air, memo = tb._fused
        q = np.zeros(K.N_TRAIN_Q)
        q[K.Q_INERTIA], q[K.Q_NEUMAIER] = inertia, sys.version_info >= (3, 12)
        q[K.Q_APPLIED], (q[K.Q_BRAKES_ON], q[K.Q_MOVING]) = tb.applied, limits
        tconst = np.concatenate((bconsts, memo, q))
        # (no views of one array in another: a deep copy of the replay keeps them apart)
        self.kernel, self.tb, self.tconst = kernel, tb, tconst
        #: the kernel's machine code for the types step_fused hands it (kernels.entry_point),
        #: found at the first call
        self.call: Any = None
        self.units = [u for u, _ in groups]
        self.units_a = np.zeros((len(groups), K.N_UNIT_COLS))
        for g, u in enumerate(self.units):
            self.units_a[g, : OK.N_UNIT_SPEC] = u._ck[2]
        rows = [int(r) for _, rr in groups for r in rr]
        by_row = {r: g for g, (_, rr) in enumerate(groups) for r in rr.tolist()}
        # per powered car, front first: its row and its unit (member order: the sum's)
        order = sorted(rows)
        self.uidx = np.array([order, [by_row[r] for r in order]], dtype=np.int64).reshape(2, len(order))
        assert [by_row[r] for r in order] == list(member) and all(r >= start for r in order)
        self.caps = np.empty(len(groups) + len(order))
        self.brake_args = (air.bp, air.aux, air.cyl, air.state, bcars, frac)
        self.handle: Handle | None = None
        self.triple = (0.0, False, False)
        self.from_objects()

    @property
    def q(self) -> np.ndarray:
        """``tconst``'s Q_* entries (a view)."""
        from .. import _orts_kernel as OK

        return self.tconst[OK.N_BRAKE_CONSTS + OK.N_BRAKE_MEMO :]

    def _memo(self) -> tuple[np.ndarray, np.ndarray]:
        """(the brakes' memo in ``tconst``, the reference's own memo)."""
        from .. import _orts_kernel as OK

        nb = OK.N_BRAKE_CONSTS
        return self.tconst[nb : nb + OK.N_BRAKE_MEMO], self.tb._fused[5]

    def from_objects(self) -> None:
        """The units' state, the brakes' memo and applied share from the reference's
        objects."""
        from .. import _orts_step_kernel as K

        mine, theirs = self._memo()
        mine[:] = theirs

        for g, u in enumerate(self.units):
            row = self.units_a[g]
            row[K.U_RPM], row[K.U_DRPM] = (u.rpm[0], u.drpm[0]) if u.rpm else (0.0, 0.0)
            row[K.U_AVERAGE], row[K.U_TRACTION], row[K.U_PREV_SPEED] = u.average, u.traction, u.prev_speed
        self.q[K.Q_APPLIED] = self.tb.applied

    def to_objects(self) -> None:
        """The units' state, the brakes' memo and applied share into the reference's
        objects (Python floats, as their compiled calls give them)."""
        from .. import _orts_step_kernel as K

        mine, theirs = self._memo()
        theirs[:] = mine

        for g, u in enumerate(self.units):
            row = self.units_a[g].tolist()
            if u.rpm:
                u.rpm[0], u.drpm[0] = row[K.U_RPM], row[K.U_DRPM]
            u.average, u.traction, u.prev_speed = row[K.U_AVERAGE], row[K.U_TRACTION], row[K.U_PREV_SPEED]
        self.tb.applied = float(self.q[K.Q_APPLIED])

    def handle_target(self, handle: Handle) -> tuple[float, bool, bool]:
        """(pipe target, has one, emergency) of ``handle``, as ``_TrainBrakes.step`` hands
        them to its kernel (kept while the handle is the same object)."""
        if handle is not self.handle:
            air = self.tb.air
            target = handle.target(air.max_psi, air.full_service_drop)
            self.handle = handle
            self.triple = (
                0.0 if target is None else float(target),
                target is not None,
                handle.position == "emergency",
            )
        return self.triple


def fused_train(
    tb: Any, groups: list, member: list[int], inertia: float, start: int, limits: tuple
) -> FusedTrain | None:
    """The train's one-call step if the compiled kernels cover it: numba there, every power
    unit on the compiled kernels (``PowerUnit.compile``) and the brakes on the one-call
    brake kernel (``_TrainBrakes._fuse``); None: the reference. ``limits``: the
    reference's (BRAKES_ON, MOVING)."""
    if not tb.compiled or any(u._ck is None or u.dynbrake is not None for u, _ in groups):
        return None
    if not tb._fuse_decided:
        tb._fused, tb._fuse_decided = tb._fuse(), True
    if tb._fused is None:
        return None
    kernel = _TRAIN_STEP()
    if kernel is None:
        return None
    return FusedTrain(kernel, tb, groups, member, inertia, start, limits)
