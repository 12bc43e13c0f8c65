"""A car's mass as Open Rails sets it (docs/physics.md §7.5; facts from
``MSTSWagon.LoadFromWagFile`` and ``FreightAnimations``): with ``ORTSFreightAnims``
giving ``WagonEmptyWeight``, the empty weight plus the load of its first continuous
animation that is full at the start plus its static animations' weights; else ``MassKG``.
"""

from __future__ import annotations

from ...formats.stock import Stock

__all__ = ["orts_mass"]


def orts_mass(s: Stock) -> float:
    """The mass (kg) Open Rails runs ``s`` with at the start of a run."""
    f = s.orts.freight if s.orts is not None else None
    if f is None or f.empty_kg is None:
        return float(s.mass_kg)
    return f.empty_kg + f.load_kg + f.static_kg
