"""Numbers with unit suffixes (``80t``, ``25m``, ``200kN``, ``160km/h``, ``1e6N/m/s``),
converted to SI as Open Rails' STFReader does (docs/formats.md §3).

The number and its unit are one word: ``60 kph`` is the number 60 followed by another
item. Without a suffix a family's default unit applies (m/s for Speed, mph for
SpeedDefaultMPH, ft² for Area). Where several families are allowed they are tried
in order, so under ``Any`` an ``m`` means metres.
"""

from __future__ import annotations

import math
import re

from ..errors import UnitError, truncate_value

# Factors to SI (kg, m, m², s, m/s, N, W, N/m, N/(m/s), N/(m/s)², Hz, A, V, psi, rad).
# Pressure stays in psi, as in Open Rails' internal unit.
_LBF = 4.44822162
_MPH = 0.44704
_KPH = 0.27777778

FAMILIES: dict[str, dict[str, float]] = {
    "mass": {"kg": 1.0, "lb": 0.45359237, "t": 1000.0, "t-uk": 1016.05, "t-us": 907.18474},
    "distance": {"m": 1.0, "cm": 0.01, "mm": 0.001, "km": 1000.0, "ft": 0.3048, "in": 0.0254, "in/2": 0.0127},
    "area": {"m^2": 1.0, "*(m^2)": 1.0, "ft^2": 0.09290304, "*(ft^2)": 0.09290304},
    "time": {"s": 1.0, "m": 60.0, "h": 3600.0},
    "speed": {
        "m/s": 1.0,
        "mph": _MPH,
        "kph": _KPH,
        "km/h": _KPH,
        "kmph": _KPH,
        "kmh": _KPH,
        "cm/s": 0.01,
        "mm/s": 0.001,
        "ft/s": 0.3048,
        "in/s": 0.0254,
    },
    "force": {"n": 1.0, "kn": 1000.0, "lbf": _LBF, "lb": _LBF},
    "power": {"w": 1.0, "kw": 1000.0, "hp": 745.699872},
    "stiffness": {"n/m": 1.0},
    # STF-new factors (STF-old had 10.0264321 and 22.42849, both wrong).
    "resistance": {"n/m/s": 1.0, "ns/m": 1.0, "lbf/mph": 9.9503884},
    "resistance_c": {"n/m/s^2": 1.0, "lbf/mph^2": 22.2583849},
    "frequency": {"hz": 1.0, "rps": 1.0, "rpm": 1.0 / 60.0},
    "current": {"a": 1.0, "amps": 1.0},
    "voltage": {"v": 1.0, "kv": 1000.0},
    "pressure": {"psi": 1.0, "bar": 14.5037738, "inhg": 0.4911542, "kpa": 0.145037738, "cmhg": 0.1933672},
    "angle": {"rad": 1.0, "deg": 0.0174533},
    "force_rate": {"n/s": 1.0, "kn/s": 1000.0, "lbf/s": _LBF},
    "power_rate": {"w/s": 1.0, "kw/s": 1000.0, "hp/s": 745.699872},
    # Brake rates (Open Rails' PressureRateDefaultPSIpS): psi/s, like pressures.
    "pressure_rate": {"psi/s": 1.0, "bar/s": 14.5037738, "inhg/s": 0.4911542, "kpa/s": 0.145037738},
}

#: The unit a bare number has, per family (as a factor to SI).
DEFAULTS: dict[str, float] = {f: 1.0 for f in FAMILIES}
DEFAULTS.update(area=0.09290304)

#: Aliases with another default unit.
_ALIASES = {
    "speed_mph": ("speed", _MPH),
    "time_m": ("time", 60.0),
    "time_h": ("time", 3600.0),
    # Open Rails' PressureDefaultInHg / PressureRateDefaultInHgpS (vacuum brake tokens)
    "pressure_inhg": ("pressure", 0.4911542),
    "pressure_rate_inhg": ("pressure_rate", 0.4911542),
}

_NUMBER = re.compile(r"[+-]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def split_quantity(text: str) -> tuple[float, str]:
    """``'200kN'`` → ``(200.0, 'kn')``: the number and the lower-cased suffix."""
    m = _NUMBER.match(text)
    if m is None:
        raise ValueError(f"not a number: {truncate_value(text)}")
    num = m.group().replace(",", "")
    value = float(num)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {truncate_value(text)}")
    suffix = text[m.end() :]
    hash_at = suffix.find("#")
    if hash_at >= 0:
        suffix = suffix[:hash_at]
    return value, suffix.strip().lower()


def parse_quantity(text: str, *families: str) -> float:
    """Convert ``text`` to SI in the first of ``families`` that knows its suffix.

    Raises :class:`ValueError` for a malformed number and :class:`UnitError` for a
    suffix no family knows (the caller adds the file location).
    """
    if not families:
        raise ValueError("no unit family given")
    value, suffix = split_quantity(text)
    resolved = [(_ALIASES[f] if f in _ALIASES else (f, DEFAULTS[f])) for f in families]
    if not suffix:
        return value * resolved[0][1]
    for fam, _default in resolved:
        factor = FAMILIES[fam].get(suffix)
        if factor is not None:
            return value * factor
    if suffix == "degf" and "temperature" in families:
        return (value - 32.0) * 5.0 / 9.0
    known = sorted({s for fam, _ in resolved for s in FAMILIES[fam]})
    raise UnitError(
        f"unknown unit {truncate_value(suffix)} in {truncate_value(text)} for {'/'.join(families)}; "
        f"known: {', '.join(known)}"
    )


FAMILIES["temperature"] = {"degc": 1.0}
DEFAULTS["temperature"] = 1.0
