"""Signals without a NORMAL head that test ENABLED and their block (issue 27, found with
the French and Czech script families): Open Rails enables such a signal for the train that
reserved the section holding it (``TrackCircuitSection.Reserve``), and reads its block from
its own section on to the next NORMAL signal, counting trains only (a train in its own
section only when ahead of it; reservations do not count: ``getBlockState_notRouted``).
Before, these signals were never enabled and always read JN_OBSTRUCTED, so a family whose
distant signals say ``if (!enabled || block_state () !=# BLOCK_CLEAR)`` showed its
restrictive aspect on an empty line.

The line (tests/data/sigfamily, the sample route's V_main, eastbound):

    G0 GUARD 100   H1 HOME 200   G2 GUARD 300   H3 HOME 500   G4 GUARD 700   H5 HOME 900

GUARD (sigscr.dat): not enabled -> STOP; block JN_OBSTRUCTED -> STOP; OCCUPIED ->
STOP_AND_PROCEED; next NORMAL at STOP -> APPROACH_1; else CLEAR_2. The oracle below is
read from the script text, situation by situation.
"""

from __future__ import annotations

import pytest
from test_signal_family import FAMILY, FN
from test_signals import FakeLine

from tdbtools.formats.sigcfg import ASPECTS, read_sigcfg
from tdbtools.signals import runtime as rt
from tdbtools.signals.objects import Head, SignalObject
from tdbtools.signals.script import read_scripts

LINE = [("GUARD", "DISTANCE", 100.0), ("HOME", "NORMAL", 200.0), ("GUARD", "DISTANCE", 300.0)]
LINE += [("HOME", "NORMAL", 500.0), ("GUARD", "DISTANCE", 700.0), ("HOME", "NORMAL", 900.0)]
NAMES = ["G0", "H1", "G2", "H3", "G4", "H5"]


@pytest.fixture(scope="module")
def sample_route():
    from helpers import SAMPLE_ROUTE

    from tdbtools.formats.route import load_route

    return load_route(SAMPLE_ROUTE)


def guard_line(route) -> rt.Interlocking:  # noqa: ANN001
    cfg = read_sigcfg(FAMILY / "sigcfg.dat")
    assert len(cfg.types) == 6 and "guard" in cfg.types
    scripts = read_scripts(FAMILY / "sigscr.dat")
    assert scripts.errors == 0 and not scripts.warnings
    by_name = scripts.by_name()
    objs = []
    for k, (tname, fn, off) in enumerate(LINE):
        h = Head(
            100 + k, tname, cfg.types[tname.lower()], fn, FN[fn], 0, 4, off, None, by_name[tname.lower()]
        )
        objs.append(SignalObject(k, "signal", (h,), 4, off, 0))
    return rt.Interlocking(route, objs)


def shown(ilk: rt.Interlocking) -> dict[str, str]:
    return {name: ASPECTS[ilk.heads[k].state] for k, name in enumerate(NAMES)}


#: A lone train, front 50 m (rear 10 m):
#: H5 - not enabled (NumClearAhead 2 from H1 reaches H3): STOP.
#: H3 - enabled, clear, next NORMAL H5 STOP: APPROACH_1.  H1 - H3 APPROACH_1: CLEAR_2.
#: G0 - its section (0-200) reserved by the train: enabled; the train is in that section
#:      but behind the signal, so its block is clear; next NORMAL H1 CLEAR_2: CLEAR_2.
#: G2 - section 200-500 reserved through H1: enabled, clear; H3 APPROACH_1 is not STOP: CLEAR_2.
#: G4 - section 500-900 reserved through H3: enabled, clear; H5 STOP: APPROACH_1.
LONE = {
    "G0": "CLEAR_2",
    "H1": "CLEAR_2",
    "G2": "CLEAR_2",
    "H3": "APPROACH_1",
    "G4": "APPROACH_1",
    "H5": "STOP",
}

#: A train stands at 390-450 m (inside H1-H3, ahead of G2), another comes up at 50 m:
#: standing: holds 200-500 (so G2 is enabled for it), clears H3 (500-900, G4 enabled) and,
#:      NumClearAhead, H5: H5 clear with nothing beyond (STOP): APPROACH_1; H3: CLEAR_2;
#:      G4: clear, H5 APPROACH_1 is not STOP: CLEAR_2.
#: behind: H1's block is occupied by a standing train: BLOCK_OCCUPIED, HOME: STOP_AND_PROCEED.
#: G2 - enabled, a train in its own section ahead of it: OCCUPIED: STOP_AND_PROCEED.
#: G0 - enabled (0-200 held by the train behind), clear; H1 STOP_AND_PROCEED is not STOP: CLEAR_2.
BEHIND = {"G0": "CLEAR_2", "H1": "STOP_AND_PROCEED", "G2": "STOP_AND_PROCEED", "H3": "CLEAR_2"}
BEHIND |= {"G4": "CLEAR_2", "H5": "APPROACH_1"}


def run(ilk: rt.Interlocking, fronts: list[float], speeds: list[float]) -> None:
    for k in range(8):
        ilk.update(float(k), fronts, speeds)


def test_signals_of_other_functions_are_enabled_by_the_train_that_reserves_them(sample_route):
    ilk = guard_line(sample_route)
    ilk.add_train("lone", FakeLine(4, 1, 1153.6, 0.0), 40.0, front=50.0, end_s=1150.0)
    run(ilk, [50.0], [10.0])
    assert shown(ilk) == LONE
    asp = ilk.aspects
    assert [asp.enabled_for(k) for k in (0, 2, 4)] == [0, 0, 0]
    assert [ilk.block[k] for k in (0, 2, 4)] == [rt.BLOCK_CLEAR] * 3
    # a lone train sees nothing restricting: no creep, only H3's APPROACH_1 limit
    stop, creep, limits = ilk.targets(0)
    assert creep is None
    assert limits == [(500.0, 900.0, pytest.approx(60 / 3.6))]


def test_a_distant_signal_reads_a_train_ahead_in_its_block_as_occupied(sample_route):
    ilk = guard_line(sample_route)
    ilk.add_train("standing", FakeLine(4, 1, 1153.6, 0.0), 60.0, front=450.0, end_s=1150.0)
    ilk.add_train("behind", FakeLine(4, 1, 1153.6, 0.0), 40.0, front=50.0, end_s=1150.0)
    run(ilk, [450.0, 50.0], [0.0, 10.0])
    assert shown(ilk) == BEHIND
    assert ilk.block[2] == rt.BLOCK_OCCUPIED and ilk.aspects.enabled_for(2) == 0
    assert ilk.aspects.enabled_for(0) == 1


def test_a_signal_no_train_reserved_is_not_enabled_and_a_leaving_train_frees_it(sample_route):
    ilk = guard_line(sample_route)
    ilk.add_train("lone", FakeLine(4, 1, 1153.6, 0.0), 40.0, front=50.0, end_s=1150.0)
    # before any update nothing is reserved: every GUARD reads ENABLED 0 and shows STOP
    ilk.aspects.run_scripts()
    assert [ASPECTS[ilk.heads[k].state] for k in (0, 2, 4)] == ["STOP"] * 3
    run(ilk, [50.0], [10.0])
    ilk.leave(0)
    assert [ilk.aspects.enabled_for(k) for k in (0, 2, 4)] == [-1, -1, -1]


def test_a_train_passing_a_distant_signal_in_its_own_section_is_seen_at_once(sample_route):
    """The block of a signal without a NORMAL head follows the trains within its own
    section (only those ahead of it count), also when the section's occupants stay the
    same from one cycle to the next (the incremental update, docs/signals.md §4.4)."""
    for incremental in (True, False):
        ilk = guard_line(sample_route)
        ilk.incremental = incremental
        ilk.add_train("lone", FakeLine(4, 1, 1153.6, 0.0), 40.0, front=250.0, end_s=1150.0)
        for k in range(4):
            ilk.update(float(k), [250.0], [10.0])
        assert ilk.block[2] == rt.BLOCK_CLEAR  # 210-250 m: behind G2 (300 m)
        for k in range(4, 6):
            ilk.update(float(k), [330.0], [10.0])
        assert ilk.block[2] == rt.BLOCK_OCCUPIED, incremental  # 290-330 m: past it


def test_guard_line_scheduled_cycle_gives_the_full_passes_every_cycle(sample_route):
    """With signals enabled by reservation (``enabled_other``), the scheduled cycle
    (docs/signals.md §4.4) still shows what full passes show, cycle by cycle, as a train
    runs up behind a standing one and through the line."""
    seen: dict[bool, list] = {}
    for incremental in (True, False):
        ilk = guard_line(sample_route)
        ilk.incremental = incremental
        ilk.add_train("standing", FakeLine(4, 1, 1153.6, 0.0), 60.0, front=800.0, end_s=1150.0)
        ilk.add_train("mover", FakeLine(4, 1, 1153.6, 0.0), 40.0, front=50.0, end_s=1150.0)
        rows = []
        for k in range(60):
            front = min(50.0 + 10.0 * k, 650.0)
            ilk.update(float(k), [800.0, front], [0.0, 10.0 if front < 650.0 else 0.0])
            rows.append(
                (
                    [h.state for h in ilk.heads],
                    list(ilk.block),
                    [ilk.aspects.enabled_for(s) for s in range(len(LINE))],
                )
            )
        seen[incremental] = rows
    assert seen[True] == seen[False]
    # G2 was enabled for the mover at some cycle; G4 read the standing train ahead of it
    assert any(r[2][2] == 1 for r in seen[True]) and any(r[1][4] == rt.BLOCK_OCCUPIED for r in seen[True])
