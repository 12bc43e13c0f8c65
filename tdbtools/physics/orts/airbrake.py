"""The automatic air brake along a train (docs/physics.md §7.3; facts from Open Rails'
``AirSinglePipe``: ``PropagateBrakeLinePressures`` and ``Update``).

Pressures in psi (gauge), rates in psi/s, times in s. Per car: brake-pipe pressure
``bp``, auxiliary reservoir ``aux``, brake cylinder ``cyl`` and the triple valve's state.

**The pipe** is advanced in sub-steps of at most the brake-pipe time factor τ (the
locomotive's ``BrakePipeTimeFactor``). In each: the lead car's pipe moves towards the
equalising-reservoir pressure the driver's handle sets (up at ``BrakePipeChargingRate``;
down by the share ``min(h/τ_service, 0.95)`` of its pressure per sub-step, τ_service =
``BrakeServiceTimeFactor``, or the emergency one), then, car by car from the front,
each pair of neighbours exchanges ``Δp·min(h/τ, 1)`` in proportion to their pipe
volumes (``0.028 ft³ per metre of car + 0.028``), which keeps the air.

**The triple valve** of each car: *apply* when the pipe is more than 1 psi below the
auxiliary reservoir, *release* when more than 1 psi above, *lap* when an application
has brought the reservoir down to the pipe, *emergency* below the full-service pipe
pressure less 1 psi. Applying moves air from the reservoir to the cylinder at
``MaxApplicationRate`` (cylinder psi/s; the reservoir falls by 1/``TripleValveRatio`` of
it) until reservoir and cylinder meet or the reservoir reaches the pipe; releasing empties
the cylinder at ``MaxReleaseRate`` and recharges the reservoir from the pipe at
``MaxAuxilaryChargingRate``, taking the air from the pipe (the reservoir's volume is
``AuxBrakeLineVolumeRatio`` = 3.1 pipe volumes).

Simplified: the main reservoir and compressor are unlimited, no quick service, no
retainers, no distributor (graduated release), no emergency reservoir; the last car's
rear angle cock is closed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels import LazyKernel

__all__ = ["APPLY", "EMERGENCY", "LAP", "RELEASE", "AirBrakeTrain", "Handle", "pipe_volumes_ft3"]

LAP, APPLY, RELEASE, EMERGENCY = 0, 1, 2, 3
#: Auxiliary reservoir volume over the car's brake-pipe volume (Open Rails' default).
AUX_PIPE_VOLUME_RATIO = 3.1
#: Triple-valve switching band (psi).
VALVE_BAND = 1.0
#: The compiled sub-steps of :meth:`AirBrakeTrain.step_pipe` (None without numba)
_PIPE = LazyKernel("_orts_kernel", "step_pipe")
#: The compiled :meth:`AirBrakeTrain.step_valves` (None without numba)
_VALVES = LazyKernel("_orts_kernel", "step_valves")
#: A pipe within this of the handle's pressure everywhere (psi) has settled.
SETTLED_PSI = 1e-6


def pipe_volumes_ft3(lengths_m) -> np.ndarray:
    """Each car's brake-pipe volume (ft³): 0.028·(1 + length in m)."""
    return 0.028 * (1.0 + np.asarray(lengths_m, dtype=np.float64))


@dataclass(frozen=True, slots=True)
class Handle:
    """The train-brake handle: ``release`` (pipe to the system pressure), ``lap`` (pipe
    isolated), ``service`` with a pipe reduction ``reduction`` psi, ``emergency``."""

    position: str = "release"
    reduction: float = 0.0

    def target(self, max_psi: float, full_service_drop: float) -> float | None:
        if self.position == "release":
            return max_psi
        if self.position == "service":
            return max_psi - min(max(self.reduction, 0.0), full_service_drop)
        if self.position == "emergency":
            return 0.0
        return None  # lap


class AirBrakeTrain:
    """The air-brake state of one train (numpy arrays over its cars, front first).

    Per car: ``max_cyl`` is the cylinder pressure of the full force (only for the force
    fraction), ``app_rate``, ``rel_rate``, ``aux_rate`` and ``ratio`` (TripleValveRatio)
    as in :class:`~tdbtools.formats.stock_orts.AirBrakeSpec`. Train: the lead's
    :class:`~tdbtools.formats.stock_orts.LocoBrakeSpec` values.
    """

    def __init__(
        self,
        lengths_m,
        *,
        app_rate,
        rel_rate,
        aux_rate,
        ratio,
        max_psi: float = 90.0,
        full_service_drop: float = 26.0,
        charging_rate: float = 21.0,
        tau: float = 0.0015,
        service_tau: float = 1.009,
        emergency_tau: float = 0.1,
        charged: bool = True,
        compiled: bool = True,
    ) -> None:
        n = len(lengths_m)
        self.vol = pipe_volumes_ft3(lengths_m)
        f = np.float64
        self.app_rate = np.broadcast_to(np.asarray(app_rate, f), (n,)).copy()
        self.rel_rate = np.broadcast_to(np.asarray(rel_rate, f), (n,)).copy()
        self.aux_rate = np.broadcast_to(np.asarray(aux_rate, f), (n,)).copy()
        self.ratio = np.broadcast_to(np.asarray(ratio, f), (n,)).copy()
        self.max_psi = max_psi
        self.full_service_drop = full_service_drop
        self.charging_rate = charging_rate
        self.tau, self.service_tau, self.emergency_tau = tau, service_tau, emergency_tau
        p0 = max_psi if charged else 0.0
        self.bp = np.full(n, p0)
        self.aux = np.full(n, p0)
        self.cyl = np.zeros(n)
        self.state = np.full(n, LAP, dtype=np.int8)
        #: advance the pipe with the compiled kernel when numba is there (the same numbers)
        self.compiled = compiled

    # -- the pipe ---------------------------------------------------------------------------
    def _lead(self, target: float | None, emergency: bool, h: float) -> None:
        bp = self.bp
        if target is None:
            return
        if bp[0] < target:
            bp[0] = min(bp[0] + h * self.charging_rate, target)
        elif bp[0] > target:
            tau = self.emergency_tau if emergency else self.service_tau
            drop = min(h / tau, 0.95) * bp[0]
            bp[0] = max(bp[0] - drop, target)

    def _propagate(self, h: float) -> None:
        bp, vol = self.bp, self.vol
        k = min(h / self.tau, 1.0)
        for i in range(1, len(bp)):
            d = (bp[i] - bp[i - 1]) * k
            s = vol[i - 1] + vol[i]
            bp[i] -= d * vol[i - 1] / s
            bp[i - 1] += d * vol[i] / s

    def step_pipe(self, handle: Handle, dt: float) -> None:
        """Advance the brake pipe by ``dt`` s (sub-steps of at most τ)."""
        target = handle.target(self.max_psi, self.full_service_drop)
        bp = self.bp
        emergency = handle.position == "emergency"
        kernel = _PIPE() if self.compiled else None
        if kernel is not None:  # (the settled pipe's shortcut below included)
            kernel(
                bp, self.vol, 0.0 if target is None else float(target), target is not None, emergency,
                float(self.charging_rate), float(self.service_tau), float(self.emergency_tau),
                float(self.tau), float(dt), SETTLED_PSI,
            )  # fmt: skip
            return
        if target is not None and float(np.max(np.abs(bp - target))) <= SETTLED_PSI:
            # the pipe stands at the handle's pressure: the sub-steps would not move it
            # (more than float rounding); skipping them keeps a running train cheap
            bp[:] = target
            return
        n = int(dt / self.tau + 1)
        h = dt / n
        for _ in range(n):
            self._lead(target, emergency, h)
            self._propagate(h)

    # -- the valves ---------------------------------------------------------------------------
    def step_valves(self, dt: float) -> None:
        """Advance every car's triple valve, reservoir and cylinder by ``dt`` s."""
        bp, aux, cyl, st, r = self.bp, self.aux, self.cyl, self.state, self.ratio
        full_service_bp = self.max_psi - self.full_service_drop
        kernel = _VALVES() if self.compiled else None
        if kernel is not None:  # (the same numbers; a dozen array passes fewer)
            kernel(
                bp, aux, cyl, st, r, self.app_rate, self.rel_rate, self.aux_rate,
                float(full_service_bp), float(dt),
            )  # fmt: skip
            return
        emerg = bp < full_service_bp - VALVE_BAND
        release = ~emerg & (bp > aux + VALVE_BAND)
        release |= (st == EMERGENCY) & (bp > aux)
        apply_ = ~emerg & ~release & (st != EMERGENCY) & (bp < aux - VALVE_BAND)
        lap = (st == APPLY) & ~emerg & ~release & ~apply_ & (bp >= aux)
        st[emerg] = EMERGENCY
        st[release] = RELEASE
        st[apply_] = APPLY
        st[lap] = LAP

        a = (st == APPLY) | (st == EMERGENCY)
        dp = dt * self.app_rate
        meet = aux - dp / r < cyl + dp
        dp = np.where(meet, (aux - cyl) * r / (1.0 + r), dp)
        at_pipe = bp > aux - dp / r
        dp = np.where(at_pipe, (aux - bp) * r, dp)
        dp = np.where(a, np.maximum(dp, 0.0), 0.0)
        st[a & at_pipe & (st == APPLY)] = LAP
        aux -= dp / r
        cyl += dp

        rel = st == RELEASE
        cyl[rel] = np.maximum(cyl[rel] - dt * self.rel_rate[rel], 0.0)
        charge = rel & (aux < bp)
        dq = np.minimum(dt * self.aux_rate, (bp - aux) / (1.0 + AUX_PIPE_VOLUME_RATIO))
        dq = np.where(charge, np.maximum(dq, 0.0), 0.0)
        aux += dq
        bp -= dq * AUX_PIPE_VOLUME_RATIO

    def step(self, handle: Handle, dt: float) -> None:
        self.step_pipe(handle, dt)
        self.step_valves(dt)
