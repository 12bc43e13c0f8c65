"""The stand-in table of class designations (docs/stand-ins.md §4)."""

from __future__ import annotations

import pytest

from tdbtools.formats.consist import CarEntry, Consist, stand_in_variant
from tdbtools.formats.stand_in_classes import class_hint


@pytest.mark.parametrize(
    ("name", "variant"),
    [
        ("EN57", "emu"),
        ("PKP_EN71_ra", "emu"),
        ("ED72", "emu"),
        ("SM42-1234", "diesel"),
        ("ST44", "diesel"),
        ("SU45", "diesel"),
        ("SA135", "dmu"),
        ("SN84", "dmu"),
        ("ET22", "electric"),
        ("EU07", "electric"),
        ("EP09", "electric"),
        ("BR218", "diesel"),
        ("db_br_101", "electric"),
        ("Baureihe 423", "emu"),
        ("BR642_A", "dmu"),
        ("BB67400", "diesel"),
        ("BB 22200", "electric"),
        ("CC72000", "diesel"),
        ("X73500", "dmu"),
        ("Z27500", "emu"),
        ("Class 66", "diesel"),
        ("class08", "diesel"),
        ("Class158_DMSL", "dmu"),
        ("Class 390", "emu"),
        ("class91", "electric"),
    ],
)
def test_class_table(name, variant):
    hint = class_hint(name)
    assert hint is not None and hint.variant == variant


@pytest.mark.parametrize("name", ["ME1501", "MZ", "EA3001", "ET4001", "IC3", "GENERIC", "x", "RBE 540", "A1"])
def test_names_without_a_class(name):
    assert class_hint(name) is None


def test_every_car_of_an_emu_is_a_power_car():
    cars = tuple(CarEntry("engine", i, False, f"EN57_{x}", "EN57") for i, x in enumerate("sra"))
    con = Consist("x.con", "EN57", "EN57", 0, None, cars)
    assert [stand_in_variant(c, con) for c in cars] == ["emu"] * 3
    # an SM42 stays a locomotive, also when the consist is called after a unit
    loco = CarEntry("engine", 0, False, "SM42", "PKP")
    assert stand_in_variant(loco, Consist("y.con", "EN57 + SM42", "", 0, None, (loco,))) == "diesel"
