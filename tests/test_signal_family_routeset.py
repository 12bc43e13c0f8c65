"""Junction links past the next main signal (tests/data/sigfamily2: our own sigcfg.dat and
sigscr.dat), with an oracle worked out by hand from the script text (docs/signals.md §4.5,
``route_set``).

Real families link a head to a turnout beyond the next main signal: the French "rappel de
ralentissement" heads, route pointers and route-indicating distant signals. Open Rails'
``SignalObject.route_set`` answers from the enabled train's whole path, then walks the
sections as set from the signal *past* NORMAL signals; tdbtools used to look only up to the
next NORMAL signal, so such a signal showed its "branch ahead" aspect on a straight, empty
line.

The line: the signalled sample's V_w (node 2), eastbound (offsets decreasing), then J_W
(node 3) and the main line V_main (node 4, route 0) or the loop (node 5, route 1):

    W0 WARN (NORMAL, linked to J_W route 0: V_main) 900   P1 POINTER (DISTANCE, same link) 500
    T4 TALLY (INFO) 200   H2 MAIN (NORMAL) 30   | J_W |   E3 MAIN (NORMAL) on V_main at 140
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tdbtools.formats.sigcfg import ASPECTS, read_sigcfg
from tdbtools.signals import runtime as rt
from tdbtools.signals.objects import Head, SignalObject
from tdbtools.signals.script import read_scripts

FAMILY = Path(__file__).parent / "data" / "sigfamily2"
NAMES = ["W0", "P1", "H2", "E3"]


class PathLine:
    """V_w eastbound from offset 1400, J_W, then V_main (route 0) or the loop (route 1)."""

    def __init__(self, route: int):
        v_w = 1400.0
        other = 1198.7
        self.seg_node = np.array([2, 4 if route == 0 else 5])
        self.seg_dir = np.array([0, 0 if route == 0 else 1])
        self.seg_s0 = np.array([0.0, v_w])
        self.seg_s1 = np.array([v_w, v_w + other])
        self.seg_off0 = np.array([v_w, other if route == 0 else 0.0])
        self.junction_s = np.array([v_w])
        self.junction_node = np.array([3])
        self.junction_route = np.array([route])
        self.length = v_w + other


@pytest.fixture(scope="module")
def signals_route():
    from helpers import SAMPLE_INSTALL

    from tdbtools.formats.route import load_route

    return load_route(SAMPLE_INSTALL / "ROUTES" / "SIGNALS")


def family_line(route, extra: tuple = ()) -> rt.Interlocking:  # noqa: ANN001
    cfg = read_sigcfg(FAMILY / "sigcfg.dat")
    scripts = read_scripts(FAMILY / "sigscr.dat")
    # TALLY's this_sig_mr(SIGFN_DISTANCE, SIGFN_INFO) (as the Majorca family's BM-B writes it)
    assert scripts.errors == 0 and [w.message for w in scripts.warnings] == [
        "script TALLY: this_sig_mr: 1 extra argument(s) ignored"
    ]
    by_name = scripts.by_name()
    link = (3, 0, 4)  # J_W, route 0, the node past it: V_main
    line = [("WARN", "NORMAL", 0, 2, 900.0, link), ("POINTER", "DISTANCE", 1, 2, 500.0, link)]
    line += [("MAIN", "NORMAL", 0, 2, 30.0, None), ("MAIN", "NORMAL", 0, 4, 140.0, None)]
    line += [("TALLY", "INFO", 4, 2, 200.0, None), *extra]
    objs = []
    for k, (tname, fn, fi, node, off, jn) in enumerate(line):
        h = Head(100 + k, tname, cfg.types[tname.lower()], fn, fi, 1, node, off, jn, by_name[tname.lower()])
        objs.append(SignalObject(k, "signal", (h,), node, off, 1))
    return rt.Interlocking(route, objs)


def shown(ilk: rt.Interlocking) -> dict[str, str]:
    return {n: ASPECTS[ilk.heads[k].state] for k, n in enumerate(NAMES)}


def lone(route, junction_route: int) -> rt.Interlocking:  # noqa: ANN001
    ilk = family_line(route)
    line = PathLine(junction_route)
    ilk.add_train("lone", line, 40.0, front=50.0, end_s=line.length - 5.0)
    for k in range(8):
        ilk.update(float(k), [50.0], [10.0])
    return ilk


def test_a_turnout_past_the_next_signal_set_for_the_train_is_a_set_route(signals_route):
    """The train runs onto V_main (J_W route 0), the node W0 and P1 are linked to:
    E3 - not enabled (NumClearAhead 2 from W0 reaches H2 only): STOP.
    H2 - enabled, block clear, next NORMAL E3 STOP: APPROACH_1.
    W0 - enabled, block clear, route_set: V_main is on its train's path (Open Rails reads the
         enabled train's route, not only the signal's own up to H2): 1; next H2 APPROACH_1,
         not STOP: CLEAR_2 (tdbtools before: route_set 0, APPROACH_2 on a straight line).
    P1 - enabled by the train's reservation of its section; V_main on the path: CLEAR_2."""
    ilk = lone(signals_route, 0)
    assert shown(ilk) == {"W0": "CLEAR_2", "P1": "CLEAR_2", "H2": "APPROACH_1", "E3": "STOP"}
    assert ilk.enabled_train[:4] == [0, -1, 0, -1] and ilk.aspects.enabled_for(1) == 0
    # the only limit the train meets is H2's APPROACH_1 (60 km/h), none at W0
    _stop, creep, limits = ilk.targets(0)
    assert creep is None
    assert [round(a) for a, _b, _v in limits] == [1370]


def test_a_turnout_past_the_next_signal_set_for_the_branch_is_not(signals_route):
    """The train takes the loop (J_W route 1): V_main is not on its path nor on W0's route;
    Open Rails then walks the sections as set from W0, past H2, through J_W (set for the
    train: route 1), onto the loop and on to the end of the track: no V_main.
    W0 - route_set 0: APPROACH_2.  P1 - route_set 0: APPROACH_1.
    H2 - its next NORMAL signal on the loop is not one of ours (none ahead): STOP ahead,
    APPROACH_1."""
    ilk = lone(signals_route, 1)
    assert ilk.circuits.switches[3] == 1
    assert shown(ilk)["W0"] == "APPROACH_2" and shown(ilk)["P1"] == "APPROACH_1"
    assert shown(ilk)["H2"] == "APPROACH_1"


def test_route_set_without_a_train(signals_route):
    """No train: a NORMAL signal no train enabled reads 0 (Open Rails walks only for
    signals without a NORMAL head or enabled ones); the pointer follows the switch as set,
    past H2 (1 when J_W lies for V_main, else 0)."""
    ilk = family_line(signals_route, extra=(("POINTER", "DISTANCE", 1, 2, 1200.0, (3, 0, 4)),))
    w0, p1, p5 = ilk.heads[0], ilk.heads[1], ilk.heads[5]
    ilk.set_switch(3, 0)
    # P5 stands before W0: its walk passes two NORMAL signals (W0, H2) on its way to J_W
    assert (w0.route_set(), p1.route_set(), p5.route_set()) == (0, 1, 1)
    ilk.set_switch(3, 1)
    assert (w0.route_set(), p1.route_set(), p5.route_set()) == (0, 0, 0)


def test_the_train_path_decides_not_the_switch(signals_route):
    """W0 enabled for the straight train reads its path (V_main on it): 1 even when J_W is
    thrown for the loop under it (a test's hand; the interlocking would not)."""
    ilk = lone(signals_route, 0)
    ilk.set_switch(3, 1)
    assert ilk.heads[0].route_set() == 1
    assert ilk.heads[1].route_set() == 1  # P1: enabled for the same train


def test_every_built_in_the_real_families_call(signals_route):
    """TALLY (INFO, at 200 between P1 and H2) adds one bit per answer (the lone train on the
     straight route, as in the first test), read from the script text:
       1  next_sig_lr(NORMAL): H2, APPROACH_1            2  next_sig_mr(NORMAL) == 3: yes
       4  this_sig_lr(REPEATER): no such head, -1        8  this_sig_mr(DISTANCE, INFO): the
          extra argument ignored, no DISTANCE head: -1
      16  block_state: its section up to H2 is clear    32  route_set: no link, 1
      64  sig_feature USER2 and NUMBER_PLATE: no world file, every flag set (Open Rails too)
     128  dist_multi_sig_mr(NORMAL, DISTANCE): no distant ahead, so every NORMAL signal to
          the end: H2 APPROACH_1, E3 STOP: STOP
     256  enabled: its section is reserved for the train
       -  next_sig_lr(INFO): none ahead, STOP (not added)
    1024  def_draw_state(APPROACH_1): draw state 3 > 2
    """
    ilk = lone(signals_route, 0)
    tally = ilk.heads[4]
    assert tally.head.script is not None and tally.head.script.name == "TALLY"
    assert (tally.state, tally.draw_state) == (7, 1 + 2 + 4 + 8 + 16 + 32 + 64 + 128 + 256 + 1024)
    assert shown(ilk) == {"W0": "CLEAR_2", "P1": "CLEAR_2", "H2": "APPROACH_1", "E3": "STOP"}
