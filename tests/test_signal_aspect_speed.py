"""How an aspect's speed reaches a train (signals/aspect_speed.py, docs/signals.md §4.6), on
the test family's line (tests/test_signal_family.py): the limit of the aspect a train passes
holds up to the next signal (Open Rails, activity mode), and OR_NOSPEEDREDUCTION lets a train
pass a STOP_AND_PROCEED signal without slowing first."""

from __future__ import annotations

import dataclasses

import pytest
from test_signal_family import family_line, run, sample_route  # noqa: F401 - fixture
from test_signals import FakeLine

from tdbtools.formats.sigcfg import STOP_AND_PROCEED


def _behind_a_standing_train(route):  # noqa: ANN001, ANN202
    ilk = family_line(route)
    ilk.add_train("standing", FakeLine(4, 1, 1153.6, 0.0), 60.0, front=650.0, end_s=1150.0)
    ilk.add_train("behind", FakeLine(4, 1, 1153.6, 0.0), 40.0, front=50.0, end_s=1150.0)
    run(ilk, [650.0, 50.0], [0.0, 10.0])
    return ilk


def test_the_limit_of_a_passed_signal_holds_up_to_the_next_signal(sample_route):  # noqa: F811
    ilk = _behind_a_standing_train(sample_route)
    ilk.keep_aspect_limit = True
    # A1 shows APPROACH_1 (ASK: SpeedKPH 40) as the train passes it; the train is now
    # between A1 (200 m) and H3 (500 m)
    for k in range(6, 9):
        ilk.update(float(k), [650.0, 260.0], [0.0, 10.0])
    stop, creep, limits = ilk.targets(1)
    assert (200.0, 500.0, pytest.approx(40 / 3.6)) in limits
    assert creep == pytest.approx(500.0)
    # past H3 (STOP_AND_PROCEED, HOME: SpeedKPH 15) the 40 km/h limit is gone, 15 km/h holds
    for k in range(9, 12):
        ilk.update(float(k), [650.0, 520.0], [0.0, 3.0])
    stop, creep, limits = ilk.targets(1)
    assert not any(v == pytest.approx(40 / 3.6) for _a, _b, v in limits)
    assert (500.0, 900.0, pytest.approx(15 / 3.6)) in limits


def test_by_default_the_limit_of_a_passed_signal_ends_at_it(sample_route):  # noqa: F811
    """tdbtools' default (docs/signals.md §4.6): the limit applies on the approach only."""
    ilk = _behind_a_standing_train(sample_route)
    for k in range(6, 9):
        ilk.update(float(k), [650.0, 260.0], [0.0, 10.0])
    stop, creep, limits = ilk.targets(1)
    assert not any(v == pytest.approx(40 / 3.6) for _a, _b, v in limits)
    assert ilk.trains[1].passed == (200.0, 500.0, pytest.approx(40 / 3.6))


def test_no_speed_reduction_lets_a_train_approach_stop_and_proceed_at_line_speed(sample_route):  # noqa: F811
    ilk = _behind_a_standing_train(sample_route)
    assert ilk.targets(1)[1] == pytest.approx(500.0)  # creep up to H3
    # the same line with HOME's STOP_AND_PROCEED flagged OR_NOSPEEDREDUCTION
    h3 = ilk.aspects.heads_of[3][0]
    typ = h3.type
    aspects = tuple(
        dataclasses.replace(x, no_speed_reduction=True) if x.aspect == STOP_AND_PROCEED else x
        for x in typ.aspects
    )
    h3.type = dataclasses.replace(typ, aspects=aspects)
    ilk.aspects.normal_typed[3] = [h3]
    ilk.update(6.0, [650.0, 50.0], [0.0, 10.0])
    stop, creep, limits = ilk.targets(1)
    assert creep is None
    assert (500.0, 900.0, pytest.approx(15 / 3.6)) in limits  # its speed still holds past it
