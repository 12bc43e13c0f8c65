"""Unit suffixes (docs/formats.md §3): numbers and units as one word, converted to SI."""

from __future__ import annotations

import math

import pytest

from tdbtools.errors import UnitError
from tdbtools.stf.units import parse_quantity, split_quantity


@pytest.mark.parametrize(
    "text, families, si",
    [
        ("80t", ("mass",), 80000.0),
        ("12.5lb", ("mass",), 12.5 * 0.45359237),
        ("25m", ("distance",), 25.0),
        ("3ft", ("distance",), 0.9144),
        ("30in/2", ("distance",), 30 * 0.0127),
        ("200kN", ("force",), 200000.0),
        ("220kN#estimated", ("force",), 220000.0),
        ("160km/h", ("speed",), 160 / 3.6),
        ("70mph", ("speed",), 70 * 0.44704),
        ("70", ("speed",), 70.0),  # Speed defaults to m/s
        ("70", ("speed_mph",), 70 * 0.44704),  # SpeedDefaultMPH
        ("1e6N/m/s", ("resistance",), 1e6),
        ("10lbf/mph", ("resistance",), 99.503884),
        ("2lbf/mph^2", ("resistance_c",), 44.5167698),
        ("3000kW", ("power",), 3e6),
        ("100hp", ("power",), 74569.9872),
        ("10", ("area",), 0.9290304),  # Area defaults to ft²
        ("10m^2", ("area",), 10.0),
        ("5bar", ("pressure",), 72.518869),
        ("25kV", ("voltage",), 25000.0),
        ("2m", ("time",), 120.0),
        ("1,5", ("distance",), 15.0),  # thousands separator, as Open Rails reads it
        ("-4.5e-1m", ("distance",), -0.45),
        ("3m", ("distance", "time"), 3.0),  # families are tried in order
    ],
)
def test_conversions(text, families, si):
    assert math.isclose(parse_quantity(text, *families), si, rel_tol=1e-7)


def test_unknown_suffix_is_a_unit_error():
    with pytest.raises(UnitError, match="unknown unit 'furlong'"):
        parse_quantity("10furlong", "distance")
    with pytest.raises(UnitError):
        parse_quantity("10kg", "distance")


@pytest.mark.parametrize("text", ["", "kg", "abc", "nan", "inf", "--5"])
def test_not_a_number(text):
    with pytest.raises(ValueError):
        split_quantity(text)


def test_huge_numbers_are_refused_not_infinite():
    with pytest.raises(ValueError):
        split_quantity("1e999m")
