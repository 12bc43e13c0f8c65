"""The test family of signal scripts (tests/data/sigfamily: our own sigcfg.dat and
sigscr.dat) on a line of six signals of every common function, with an oracle worked out
by hand from the script text, situation by situation (docs/signals.md §4.6).

The line: the sample route's V_main (node 4), eastbound; heads governing forward trains.

    D0 DIST 100   A1 ASK (NORMAL) 200   R2 REP 300   H3 HOME (NORMAL) 500
    S4 SHUNT 700  H5 HOME (NORMAL) 900

Track circuits are cut at the NORMAL signals only (200, 500, 900): A1 asks for the next
SHUNTING signal, S4, which lies beyond the NORMAL H3 (a search that stops at NORMAL
signals finds nothing and A1 shows STOP_AND_PROCEED on a clear line); D0 asks for the next
NORMAL signal though it is not NORMAL itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_signals import FakeLine

from tdbtools.formats.sigcfg import ASPECTS, read_sigcfg
from tdbtools.signals import runtime as rt
from tdbtools.signals.objects import Head, SignalObject
from tdbtools.signals.script import read_scripts

FAMILY = Path(__file__).parent / "data" / "sigfamily"
LINE = [("DIST", "DISTANCE", 100.0), ("ASK", "NORMAL", 200.0), ("REP", "REPEATER", 300.0)]
LINE += [("HOME", "NORMAL", 500.0), ("SHUNT", "SHUNTING", 700.0), ("HOME", "NORMAL", 900.0)]
NAMES = ["D0", "A1", "R2", "H3", "S4", "H5"]
FN = {"NORMAL": 0, "DISTANCE": 1, "REPEATER": 2, "SHUNTING": 3}


@pytest.fixture(scope="module")
def sample_route():
    from helpers import SAMPLE_ROUTE

    from tdbtools.formats.route import load_route

    return load_route(SAMPLE_ROUTE)


def family_line(route) -> rt.Interlocking:  # noqa: ANN001
    cfg = read_sigcfg(FAMILY / "sigcfg.dat")
    scripts = read_scripts(FAMILY / "sigscr.dat")
    assert scripts.errors == 0 and not scripts.warnings
    by_name = scripts.by_name()
    objs = []
    for k, (tname, fn, off) in enumerate(LINE):
        typ = cfg.types[tname.lower()]
        h = Head(100 + k, tname, typ, fn, FN[fn], 0, 4, off, None, by_name[tname.lower()])
        objs.append(SignalObject(k, "signal", (h,), 4, off, 0))
    return rt.Interlocking(route, objs)


def shown(ilk: rt.Interlocking) -> dict[str, str]:
    out = {}
    for k, name in enumerate(NAMES):
        st = ilk.heads[k].state
        out[name] = ASPECTS[st] if 0 <= st < len(ASPECTS) else str(st)
    return out


def run(ilk: rt.Interlocking, fronts: list[float], speeds: list[float], cycles: int = 6) -> None:
    for k in range(cycles):
        ilk.update(float(k), fronts, speeds)


#: (signal, expected) for a lone train at 50 m, read from the scripts:
#: H5 - not enabled (NumClearAhead 2 from A1 reaches H3 only): HOME's first rule, STOP.
#: H3 - enabled, block clear, next NORMAL (H5) is STOP: APPROACH_1.
#: R2 - next NORMAL (H3) most restrictive APPROACH_1 > STOP_AND_PROCEED: CLEAR_2.
#: A1 - REPEATER R2 found (CLEAR_2), SHUNTING S4 found past H3 (id 4 >= 0), next NORMAL
#:      H3 APPROACH_1 > STOP_AND_PROCEED, USER1 set (no world file: set): CLEAR_2.
#: D0 - next NORMAL A1 is CLEAR_2, not STOP: CLEAR_2.
#: S4 - A1 stored the SHUNTING id (4) in its lvar 3: > 0, CLEAR_1.
LONE = {"D0": "CLEAR_2", "A1": "CLEAR_2", "R2": "CLEAR_2", "H3": "APPROACH_1", "S4": "CLEAR_1", "H5": "STOP"}

#: A second train stands between H3 and H5 (front 650 m), the first at 50 m:
#: H3 - enabled for the first train (propagated from A1), its block occupied by a standing
#:      train: BLOCK_OCCUPIED (occupancy is read before the other train's reservation),
#:      HOME's second rule: STOP_AND_PROCEED.
#: H5 - cleared for the standing train, block clear, no NORMAL beyond (end of its path:
#:      STOP): APPROACH_1.
#: R2 - next NORMAL H3 STOP_AND_PROCEED <= STOP_AND_PROCEED: APPROACH_1.
#: A1 - next NORMAL H3 STOP_AND_PROCEED: APPROACH_1 (the repeater and shunting rules pass).
#: D0 - A1 APPROACH_1 is not STOP: CLEAR_2.  S4 - as before: CLEAR_1.
BEHIND = {"D0": "CLEAR_2", "A1": "APPROACH_1", "R2": "APPROACH_1", "H3": "STOP_AND_PROCEED"}
BEHIND |= {"S4": "CLEAR_1", "H5": "APPROACH_1"}


def test_a_lone_train_sees_what_the_scripts_give_for_a_clear_line(sample_route):
    ilk = family_line(sample_route)
    ilk.add_train("lone", FakeLine(4, 1, 1153.6, 0.0), 40.0, front=50.0, end_s=1150.0)
    run(ilk, [50.0], [10.0])
    assert shown(ilk) == LONE
    # every function type found along the line as set, each signal once
    asp = ilk.aspects
    assert [asp.next_signal(1, fn) for fn in (0, 1, 2, 3)] == [3, -1, 2, 4]
    assert asp.next_signal(0, 0) == 1  # a DISTANCE signal's next NORMAL
    assert asp.next_signal(2, 0) == 3 and asp.next_signal(4, 0) == 5
    assert [x for _s, x in asp.all_signals(ilk.trains[0])] == [0, 1, 2, 3, 4, 5]
    assert ilk.lvars[1] == {3: 4}
    # nothing restricting before H3: no creep, only H3's APPROACH_1 limit (60 km/h) to H5
    stop, creep, limits = ilk.targets(0)
    assert creep is None
    assert limits == [(500.0, 900.0, pytest.approx(60 / 3.6))]


def test_every_signal_behind_a_standing_train_shows_its_occupied_block_aspect(sample_route):
    ilk = family_line(sample_route)
    ilk.add_train("standing", FakeLine(4, 1, 1153.6, 0.0), 60.0, front=650.0, end_s=1150.0)
    ilk.add_train("behind", FakeLine(4, 1, 1153.6, 0.0), 40.0, front=50.0, end_s=1150.0)
    run(ilk, [650.0, 50.0], [0.0, 10.0])
    assert shown(ilk) == BEHIND
    assert ilk.block[3] == rt.BLOCK_OCCUPIED and ilk.enabled_train[3] == 1
    # the train behind: APPROACH_1's limit (40 km/h) from A1 to H3, creep from H3 on
    stop, creep, limits = ilk.targets(1)
    assert creep == pytest.approx(500.0)
    assert limits[0] == (200.0, 500.0, pytest.approx(40 / 3.6))
    assert limits[1] == (500.0, 900.0, pytest.approx(15 / 3.6))


def test_the_section_state_order_is_open_rails(sample_route):
    """Occupied before reserved; a train's own occupation is its reservation."""
    ilk = family_line(sample_route)
    ilk.add_train("a", FakeLine(4, 1, 1153.6, 0.0), 40.0, front=50.0)
    ilk.add_train("b", FakeLine(4, 1, 1153.6, 0.0), 40.0, front=700.0)
    sec = ilk.sections[ilk.node_secs[4][2]]  # 500..900
    ilk.set_occupants(sec.index, {1: 1})
    ilk.reserve_section(sec.index, 1)
    ilk.trains[1].speed = 0.0
    assert ilk._section_state(sec, 0, 1) == rt.OCC_SAME
    assert ilk._section_state(sec, 0, 0) == rt.OCC_SAME  # a standing train: both directions
    ilk.trains[1].speed = 5.0
    assert ilk._section_state(sec, 0, 0) == rt.OCC_OPPOSITE
    assert ilk._section_state(sec, 1, 1) == rt.RESERVED
    ilk.set_occupants(sec.index, {})
    assert ilk._section_state(sec, 0, 1) == rt.RESERVED_OTHER
    ilk.reserve_section(sec.index, -1)
    assert ilk._section_state(sec, 0, 1) == rt.RESERVABLE


def test_the_driver_behind_creeps_at_open_rails_speed_and_keeps_the_aspect_limits(sample_route):
    """What the interlocking sets for the train behind reaches its driver as constraints:
    2.5 m/s from the STOP_AND_PROCEED signal on (Open Rails' creep speed), 40 km/h from the
    APPROACH_1 signal (the ASK type's SpeedKPH), 15 km/h past H3 (HOME's STOP_AND_PROCEED)."""
    from tdbtools.physics.driver import AutoDriver, DriveState
    from tdbtools.physics.signalling import SignalDriver

    ilk = family_line(sample_route)
    ilk.add_train("standing", FakeLine(4, 1, 1153.6, 0.0), 60.0, front=650.0, end_s=1150.0)
    ilk.add_train("behind", FakeLine(4, 1, 1153.6, 0.0), 40.0, front=50.0, end_s=1150.0)
    run(ilk, [650.0, 50.0], [0.0, 10.0])
    auto = AutoDriver([0.0], [40.0], 1150.0, max_speed=None, deceleration=0.5)
    d = SignalDriver(auto, depart=0.0)
    d.stop_s, d.creep_at, d.limits = ilk.targets(1)
    st = DriveState(time=10.0, travelled=0.0, speed=10.0, front=50.0, rear=10.0)
    got = auto.constraints(st)
    assert (pytest.approx(2.5), pytest.approx(450.0)) in got
    assert (pytest.approx(40 / 3.6), pytest.approx(150.0)) in got
    assert (pytest.approx(15 / 3.6), pytest.approx(450.0)) in got
