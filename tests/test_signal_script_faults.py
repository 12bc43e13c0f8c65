"""A script that sets a state outside the aspect table, or fails while it runs, never stops
the replay (docs/signals.md §4.5; issue 32 item 1, runtime side)."""

from __future__ import annotations

import dataclasses

import pytest
from test_signals import B3_CFG, FakeLine

from tdbtools.formats.sigcfg import read_sigcfg
from tdbtools.signals.objects import Head, SignalObject
from tdbtools.signals.runtime import Interlocking
from tdbtools.signals.script import read_scripts

STATE_9 = """SCRIPT B3
    extern float state; extern float draw_state;
    state = 9;
    draw_state = 2;
"""

DIV_0 = """SCRIPT B3
    extern float block_state (); extern float state; extern float draw_state;
    float z;
    z = 0;
    state = SIGASP_CLEAR_2;
    if (block_state () ==# BLOCK_CLEAR) { state = 7 % z; }
    draw_state = 2;
"""


@pytest.fixture(scope="module")
def sample_route():
    from helpers import SAMPLE_ROUTE

    from tdbtools.formats.route import load_route

    return load_route(SAMPLE_ROUTE)


def _line(tmp_path, route, script: str) -> Interlocking:  # noqa: ANN001
    p = tmp_path / "sigcfg.dat"
    p.write_text(B3_CFG, encoding="utf-8")
    b3 = dataclasses.replace(read_sigcfg(p).types["b3"], nca_msts=2)
    sc = read_scripts("faulty.dat", text=script).scripts[0]
    objs = []
    for k, off in enumerate((200.0, 400.0, 600.0)):
        h = Head(100 + k, "b3", b3, "NORMAL", 0, 0, 4, off, None, sc)
        objs.append(SignalObject(k, "signal", (h,), 4, off, 0))
    return Interlocking(route, objs)


def test_a_state_outside_the_aspect_table_is_kept_and_read_as_stop(tmp_path, sample_route):
    ilk = _line(tmp_path, sample_route, STATE_9)
    ilk.add_train("t", FakeLine(4, 1, 1153.6, 0.0), 50.0, front=100.0)
    for k in range(3):
        ilk.update(float(k), [100.0], [10.0])
    # the head keeps the int the script set (other scripts read it back, as in Open Rails) ...
    assert [h.state for h in ilk.heads] == [9, 9, 9]
    assert ilk.aspects.sig_lr(0, 0) == 9
    # ... and a driver reads it as STOP: it stops before the first signal
    stop, _creep, _limits = ilk.targets(0)
    assert stop == pytest.approx(200.0 - 15.0)
    assert [e.aspect for e in ilk.events if e.kind == "aspect"] == ["STOP"]


def test_a_script_that_fails_is_disabled_with_a_located_event_and_the_replay_goes_on(tmp_path, sample_route):
    ilk = _line(tmp_path, sample_route, DIV_0)
    ilk.add_train("t", FakeLine(4, 1, 1153.6, 0.0), 50.0, front=100.0)
    for k in range(4):
        ilk.update(float(k), [100.0], [10.0])
    failed = [e for e in ilk.events if e.kind == "script_error"]
    # once per head whose block went clear (the first signal, cleared for the train)
    assert failed and {e.signal for e in failed} <= {0, 1, 2}
    e = failed[0]
    assert (e.path, e.line, e.script) == ("faulty.dat", 1, "B3")
    assert "by zero" in e.message
    assert len({e.head for e in failed}) == len(failed)  # each head disabled once
    # the failed heads follow the basic rule: clear block -> least restrictive (CLEAR_2)
    h0 = ilk.heads[0]
    assert h0.failed and h0.state == 7
    stop, _creep, _limits = ilk.targets(0)
    assert stop is None or stop > 200.0


APPROACH = """SCRIPT B3
    extern float block_state (); extern float approach_control_position ();
    extern float state; extern float draw_state; extern float enabled;
    if (!enabled || block_state () !=# BLOCK_CLEAR) { state = SIGASP_STOP; }
    else if (!approach_control_position (150)) { state = SIGASP_STOP; }
    else { state = SIGASP_CLEAR_2; }
    draw_state = 2;
"""


def test_approach_control_holds_a_signal_until_its_train_is_close(tmp_path, sample_route):
    """Open Rails' ApproachControlPosition: the signal clears once the train it is cleared
    for is closer than the distance, only for the train's next signal (not forced), and
    stays clear for that train (docs/signals.md §4.5)."""
    ilk = _line(tmp_path, sample_route, APPROACH)
    ilk.add_train("t", FakeLine(4, 1, 1153.6, 0.0), 50.0, front=20.0)
    steps = [20.0, 20.0, 60.0, 60.0, 100.0, 100.0, 260.0, 260.0]
    seen = []
    for k, front in enumerate(steps):
        ilk.update(float(k), [front], [5.0])
        seen.append((ilk.heads[0].state, ilk.heads[1].state))
    # 180 m from S0: held; 140 m: clear; S1 (cleared ahead, not the next signal): held until
    # the train has passed S0 and is 140 m from S1
    assert seen[:2] == [(0, 0), (0, 0)]
    assert seen[3] == (7, 0) and seen[5] == (7, 0)
    assert seen[-1][1] == 7
