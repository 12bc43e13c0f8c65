"""The automatic vacuum brake along a train (docs/physics.md §7.3, "Vacuum brake"; facts
from Open Rails' ``VacuumSinglePipe``: ``PropagateBrakeLinePressures`` and ``Update``).

Open Rails keeps absolute pressures (psia; the atmosphere is 1 bar = 14.504 psi) and
shows them as vacuum (inHg below the atmosphere, 1 inHg = 0.49115 psi). Per car: the
brake pipe ``p``, the vacuum reservoir (the cylinder's upper chamber) ``res`` and the
cylinder's lower chamber ``cyl_a``. Charged and released, all three stand at full vacuum.

**The train's volume** scales the lead's rates (a 200 ft³ train is the reference): the
volume is every car's pipe (a 2-inch pipe, ``max(5, 1 + length in m)`` m long) and brake
cylinders (``ORTSNumberBrakeCylinders`` × π(d/2)²·4.5 in³, d = ``ORTSBrakeCylinderSize``,
default two of 18 in); with m = volume / 200 ft³ the pipe time factor, the service and
emergency time factors are multiplied by m (the emergency one at least 1 s) and the
ejector's (exhauster's) rate divided by it.

**The pipe** is advanced in sub-steps of at most the adjusted pipe time factor. In each,
the lead car's pipe moves towards the handle's vacuum: air comes in (an application) by
the factor ``1 + h/τ`` on its absolute pressure per sub-step (τ the adjusted service or
emergency time factor), the ejector takes it out (a release) at its adjusted rate; then,
car by car from the front, each pair exchanges ``h·Δp/τ_pipe`` shared by the
neighbours' pipe volumes, the lead's own pipe left as it is (the handle sets it).

**Each car's valves** (per step): when the pipe has more vacuum than the reservoir, the
reservoir is evacuated towards it (the cylinder follows it: released); else when the
pipe has more vacuum than the cylinder, the cylinder is evacuated at ``MaxReleaseRate``;
else when it has less, air enters the cylinder at ``MaxApplicationRate`` — from the pipe
(whose vacuum rises by the cylinder/pipe volume ratio) unless the car has a direct
admission valve (``ORTSDirectAdmissionValve ( 1 )``: from the atmosphere). The brake
force is ``MaxBrakeForce · min((cyl − res′)/p_max, 1)`` with p_max
``BrakeCylinderPressureForMaxBrakeBrakeForce`` (21 inHg) and res′ the reservoir pressure
Open Rails adjusts for the piston's travel.

Simplified (as the run says): no altitude correction of the vacuum, no pipe leakage,
small ejector, vacuum pump or equalising reservoir, the discharge time factor is 1, no
steam or engine brake, the rear angle cock closed, the default reservoir volume
(``ORTSAuxilaryResCapacity`` is not read).
"""

from __future__ import annotations

import numpy as np

from .airbrake import Handle

__all__ = ["ATM_PSI", "INHG_PSI", "VacuumBrakeTrain", "adjusted_reservoir", "cylinder_for"]

#: One atmosphere (psi; Open Rails' ``Bar.ToPSI(1)``).
ATM_PSI = 14.5037738
#: One inch of mercury (psi).
INHG_PSI = 0.4911542
_IN3_M3 = 1.6387064e-5
#: The reference train's brake-system volume (m³; 200 ft³).
REFERENCE_M3 = 200 * 0.028316847
#: The default vacuum reservoir: 24 in across, 16 in long (in³ → m³).
RESERVOIR_M3 = np.pi * 12.0 * 12.0 * 16.0 * _IN3_M3
#: Piston travel (in) that sizes a cylinder's volume.
PISTON_TRAVEL_IN = 4.5


def cylinder_volume_m3(size_m) -> np.ndarray:
    """One brake cylinder's volume (m³): π(d/2)²·4.5 in³ with d the size in inches."""
    d = np.asarray(size_m, dtype=np.float64) / 0.0254
    return np.pi * (d / 2.0) ** 2 * PISTON_TRAVEL_IN * _IN3_M3


def pipe_volumes_m3(lengths_m) -> np.ndarray:
    """Each car's vacuum pipe (m³): a 2-inch pipe ``max(5, 1 + length)`` m long."""
    return (0.05 * 0.05 * np.pi / 4.0) * np.maximum(5.0, 1.0 + np.asarray(lengths_m, dtype=np.float64))


def adjusted_reservoir(res, cyl, res_vol, cyl_vol, max_vacuum_psi: float):
    """The reservoir pressure the force counts from (psia): the reservoir itself while it
    is at or above the cylinder, else the reservoir plus ``V_res/(V_res − t·V_cyl)``
    (Open Rails' correction for the piston's travel t, the cylinder's share of the
    atmosphere over full vacuum, 0.01–1), at most the cylinder."""
    travel = np.clip(1.0 - (ATM_PSI - cyl) / max_vacuum_psi, 0.01, 1.0)
    adj = res + res_vol / (res_vol - travel * cyl_vol)
    return np.where(res >= cyl, res, np.minimum(adj, cyl))


def cylinder_for(res, p, res_vol, cyl_vol, max_vacuum_psi: float):
    """The cylinder pressure (psia) whose piston difference against the adjusted
    reservoir is ``p`` psi (a few fixed-point steps; the correction varies slowly)."""
    c = res + p + 1.0
    for _ in range(8):
        travel = np.clip(1.0 - (ATM_PSI - c) / max_vacuum_psi, 0.01, 1.0)
        c = res + p + res_vol / (res_vol - travel * cyl_vol)
    return np.minimum(c, ATM_PSI)


class VacuumBrakeTrain:
    """The vacuum-brake state of one train (numpy arrays over its cars, front first).

    Its interface is the air brake's where the callers need it: ``step(handle, dt)``,
    ``max_psi`` and ``full_service_drop`` (here inHg of vacuum: a handle's reduction is
    inHg below full vacuum; full service destroys all of it), ``bp`` (the pipe's vacuum,
    inHg), ``cyl`` (psi: the pressure difference across the piston that makes the force)
    and ``aux`` (the reservoir's pressure, psia).
    """

    def __init__(
        self,
        lengths_m,
        *,
        app_rate,
        rel_rate,
        cylinder_size_m,
        num_cylinders,
        direct_admission,
        max_vacuum_psi: float = 21 * INHG_PSI,
        charging_rate: float = 10 * INHG_PSI,
        tau: float = 0.0015,
        service_tau: float = 1.009,
        emergency_tau: float = 0.1,
    ) -> None:
        n = len(lengths_m)
        f = np.float64
        self.pipe_vol = pipe_volumes_m3(lengths_m)
        self.cyl_vol = np.broadcast_to(np.asarray(num_cylinders, f), (n,)) * np.broadcast_to(
            cylinder_volume_m3(cylinder_size_m), (n,)
        )
        self.res_vol = np.full(n, RESERVOIR_M3)
        self.app_rate = np.broadcast_to(np.asarray(app_rate, f), (n,)).copy()
        self.rel_rate = np.broadcast_to(np.asarray(rel_rate, f), (n,)).copy()
        self.dav = np.broadcast_to(np.asarray(direct_admission, bool), (n,)).copy()
        self.ratio = np.ones(n)  # (the air brake's TripleValveRatio; no meaning here)
        self.max_vacuum_psi = float(max_vacuum_psi)
        self.max_psi = self.max_vacuum_psi / INHG_PSI
        self.full_service_drop = self.max_psi
        m = float(np.sum(self.pipe_vol) + np.sum(self.cyl_vol)) / REFERENCE_M3
        self.tau = tau * m
        self.service_tau = service_tau * m
        self.emergency_tau = max(emergency_tau * m, 1.0)
        self.charging_rate = charging_rate / m
        low = ATM_PSI - self.max_vacuum_psi
        self.low = low
        self.p = np.full(n, low)
        self.res = np.full(n, low)
        self.cyl_a = np.full(n, low)
        self.cyl = np.zeros(n)
        self.aux = self.res.copy()

    @property
    def bp(self) -> np.ndarray:
        """The pipe's vacuum (inHg) per car."""
        return (ATM_PSI - self.p) / INHG_PSI

    # -- the pipe ---------------------------------------------------------------------------
    def step_pipe(self, handle: Handle, dt: float) -> None:
        target = handle.target(self.max_psi, self.full_service_drop)
        p = self.p
        target_p = None if target is None else ATM_PSI - target * INHG_PSI
        if float(np.ptp(p)) <= 1e-9 and (target_p is None or abs(float(p[0]) - target_p) <= 1e-9):
            return  # settled: the sub-steps would not move it
        tau_x = self.emergency_tau if handle.position == "emergency" else self.service_tau
        n = int(dt / self.tau + 1)
        h = dt / n
        k = h / self.tau
        vol = self.pipe_vol
        w_rear = vol[:-1] / (vol[:-1] + vol[1:])  # the share car i takes (front neighbour's volume)
        w_front = vol[1:] / (vol[:-1] + vol[1:])
        low = self.low
        for _ in range(n):
            if target_p is not None:
                if p[0] < target_p:
                    p[0] = min(p[0] * (1.0 + h / tau_x), target_p)
                elif p[0] > target_p:
                    p[0] = max(p[0] - h * self.charging_rate, target_p)
            for i in range(1, len(p)):
                d = k * (p[i] - p[i - 1])
                p[i] = min(max(p[i] - d * w_rear[i - 1], low), ATM_PSI)
                if i > 1:
                    p[i - 1] = min(max(p[i - 1] + d * w_front[i - 1], low), ATM_PSI)

    # -- the valves ---------------------------------------------------------------------------
    def step_valves(self, dt: float) -> None:
        p, res, cyl = self.p, self.res, self.cyl_a
        charge = p < res
        release = ~charge & (p < cyl)
        apply_ = ~charge & ~release & (p > cyl)

        vr = self.res_vol / self.pipe_vol
        dp = dt * self.app_rate * self.cyl_vol / self.res_vol
        dp = np.where(res - dp < p + dp * vr, (res - p) / (1.0 + vr), dp)
        res[charge] -= dp[charge]
        cyl[charge] = res[charge]

        vc = self.cyl_vol / self.pipe_vol
        dp = dt * self.rel_rate
        dp = np.where(cyl - dp < p + dp * vc, (cyl - p) / (1.0 + vc), dp)
        cyl[release] -= dp[release]

        dp = dt * self.app_rate
        dp = np.where(cyl + dp > p - dp * vc, (p - cyl) / (1.0 + vc), dp)
        cyl[apply_] += dp[apply_]
        from_pipe = apply_ & ~self.dav
        p[from_pipe] -= (dp * vc)[from_pipe]
        self._force_pressure()

    def _force_pressure(self) -> None:
        """``cyl``: the piston's pressure difference (psi) against the reservoir as Open
        Rails adjusts it for the piston's travel (once the cylinder is above it)."""
        adj = adjusted_reservoir(self.res, self.cyl_a, self.res_vol, self.cyl_vol, self.max_vacuum_psi)
        self.cyl = np.maximum(self.cyl_a - adj, 0.0)
        self.aux = self.res

    def step(self, handle: Handle, dt: float) -> None:
        self.step_pipe(handle, dt)
        self.step_valves(dt)
