"""Steam locomotives' tractive effort (docs/physics.md §7.4), to the level a replay needs.

Starting tractive effort (the classic formula Open Rails' steam model and its manual
use): ``TE = (n/2)·0.85·P·d²·s/D`` lbf, with ``n`` cylinders, boiler pressure ``P``
(psi), cylinder diameter ``d`` and stroke ``s`` and driving wheel diameter ``D`` in
inches. The force at a regulator opening is ``regulator·TE``, limited by the
locomotive's power over the speed. Not modelled (say so when it matters): the boiler's
steam production and pressure drop, cut-off, cylinder condensation and back pressure,
superheat, the firing: Open Rails computes the power from all of these.
"""

from __future__ import annotations

from ...formats.stock_orts import SteamSpec

__all__ = ["starting_tractive_effort", "steam_force"]

LBF_N = 4.44822162
M_IN = 1.0 / 0.0254
#: The mean effective pressure at starting as a share of the boiler pressure.
MEP_FACTOR = 0.85


def starting_tractive_effort(spec: SteamSpec, wheel_radius_m: float) -> float:
    """Starting tractive effort (N)."""
    d = spec.cylinder_diameter_m * M_IN
    s = spec.cylinder_stroke_m * M_IN
    wheel_d = 2.0 * wheel_radius_m * M_IN
    lbf = spec.num_cylinders / 2.0 * MEP_FACTOR * spec.boiler_psi * d * d * s / wheel_d
    return lbf * LBF_N


def steam_force(
    spec: SteamSpec, wheel_radius_m: float, regulator: float, speed: float, max_power_w: float
) -> float:
    """Force (N) at a regulator opening (0–1) and speed, power-limited."""
    f = min(max(regulator, 0.0), 1.0) * starting_tractive_effort(spec, wheel_radius_m)
    v = abs(speed)
    if v > 0 and max_power_w > 0:
        f = min(f, regulator * max_power_w / v)
    return f
