"""The signalling cycle scheduled by what changed (docs/signals.md §4.4, issue 32).

A script runs again only when something it read changed (``signals/schedule.py``); a free
block is worked out again only when its walk changed; a block update looks only at the
signals something happened to. Here scripts that read every kind of input (lvars of their
own and of other signals, the next signal's aspect and lvars, another signal by id,
approach control, their own state) run on a line where a train moves, stops and moves on,
scheduled and with full passes, and every cycle must agree; and the work done per cycle
must follow the train, not the number of signals.
"""

from __future__ import annotations

import random

import pytest
from test_signal_cycle import _cycles
from test_signals import B3_CFG, FakeLine

from tdbtools.formats.sigcfg import read_sigcfg
from tdbtools.signals import runtime as rt
from tdbtools.signals.aspects import HeadRuntime
from tdbtools.signals.schedule import BLK, EN, ST, ScriptSchedule, changed_at
from tdbtools.signals.script import read_scripts

#: Reads its own lvar (a counter it stores: the head is never at rest while it counts), the
#: next signal's aspect and lvar, signal 2 by id, whether the next signal is enabled, and
#: approach control (a head that reads the train's position).
MIX = """SCRIPT B3
    extern float block_state (); extern float next_sig_lr (); extern float def_draw_state ();
    extern float this_sig_lvar (); extern float store_lvar (); extern float id_sig_lr ();
    extern float id_sig_enabled (); extern float approach_control_position ();
    extern float next_sig_id (); extern float next_sig_lvar ();
    extern float state; extern float draw_state; extern float enabled;
    float nxt; float c; float d; float me; float up; float far; float near;
    nxt = next_sig_lr (SIGFN_NORMAL);
    me = next_sig_id (SIGFN_NORMAL);
    c = this_sig_lvar (1);
    d = c + 1;
    if (enabled && c < 3) { store_lvar (1, d); }
    if (!enabled) { store_lvar (1, 0); }
    up = id_sig_lr (2, SIGFN_NORMAL);
    far = next_sig_lvar (SIGFN_NORMAL, 1);
    near = approach_control_position (150);
    if (!enabled || block_state () !=# BLOCK_CLEAR) { state = SIGASP_STOP; }
    else if (near ==# 0 && c > 2) { state = SIGASP_STOP; }
    else if (nxt ==# SIGASP_STOP || far < 1) { state = SIGASP_APPROACH_1; }
    else if (id_sig_enabled (me) && up ==# SIGASP_STOP) { state = SIGASP_APPROACH_1; }
    else { state = SIGASP_CLEAR_2; }
    draw_state = def_draw_state (state);
"""


def _line(tmp_path, route, script: str, offsets, dirs=None, nca: int = 2) -> rt.Interlocking:  # noqa: ANN001
    import dataclasses

    from tdbtools.signals.objects import Head, SignalObject

    p = tmp_path / "sigcfg.dat"
    p.write_text(B3_CFG, encoding="utf-8")
    b3 = dataclasses.replace(read_sigcfg(p).types["b3"], nca_msts=nca)
    sc = read_scripts("s.dat", text=script).scripts[0]
    objs = []
    for k, off in enumerate(offsets):
        d = 0 if dirs is None else dirs[k]
        objs.append(
            SignalObject(k, "signal", (Head(100 + k, "b3", b3, "NORMAL", 0, d, 4, off, None, sc),), 4, off, d)
        )
    return rt.Interlocking(route, objs)


@pytest.fixture(scope="module")
def sample_route():  # noqa: ANN201
    from helpers import SAMPLE_ROUTE

    from tdbtools.formats.route import load_route

    return load_route(SAMPLE_ROUTE)


def _journey(seed: int, n: int = 60) -> list[tuple[list[float], list[float]]]:
    """A train running east along node 4 with stops (random lengths), then standing."""
    rng = random.Random(seed)
    front, out = 60.0, []
    for _ in range(n):
        v = rng.choice([0.0, 0.0, 4.0, 12.0, 25.0])
        front = min(front + v, 1150.0)
        out.append(([front], [v]))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_scheduled_scripts_and_blocks_match_full_passes_every_cycle(tmp_path, sample_route, seed):
    offsets = (150.0, 300.0, 420.0, 560.0, 700.0, 850.0, 1000.0)
    dirs = [0, 0, 1, 0, 0, 1, 0]  # two face the train: free signals whose block it changes
    got = []
    for incremental in (True, False):
        ilk = _line(tmp_path, sample_route, MIX, offsets, dirs)
        ilk.incremental = incremental
        ilk.add_train("t", FakeLine(4, 1, 1153.6, 0.0), 50.0, front=60.0)
        got.append(_cycles(ilk, _journey(seed)))
    assert len(got[0]) == len(got[1])
    for k, (a, b) in enumerate(zip(*got)):
        assert a == b, f"cycle {k} differs"
    heads = [st[7] for st in got[0]]
    assert len({tuple(h) for h in heads}) > 3  # the aspects did change along the way
    assert any(lv for st in got[0] for lv in st[8])  # and the lvars


def test_a_cycle_runs_the_heads_near_the_train_not_all(tmp_path, sample_route, monkeypatch):
    """40 signals: once settled, a train moving within its section runs no script and
    looks at no free signal far away; passing a signal runs a handful of heads."""
    offsets = tuple(100.0 + 25.0 * k for k in range(40))
    ilk = _line(tmp_path, sample_route, MIX.replace("approach_control_position (150)", "0"), offsets)
    ilk.add_train("t", FakeLine(4, 1, 1153.6, 0.0), 50.0, front=60.0)
    runs: list[int] = []
    due = ScriptSchedule.due

    def counted(self, ilk_, force):  # noqa: ANN001, ANN202
        got = due(self, ilk_, force)
        runs.append(len(got))
        return got

    monkeypatch.setattr(ScriptSchedule, "due", counted)
    for k in range(12):  # settle, standing
        ilk.update(float(k), [60.0], [0.0])
    assert runs[0] == 40 and runs[-1] == 0
    runs.clear()
    ilk.update(12.0, [62.0], [1.0])  # moves: its own section changes only
    ilk.update(13.0, [64.0], [1.0])
    assert max(runs, default=0) <= 3
    runs.clear()
    for k, f in enumerate((90.0, 110.0, 130.0)):  # passes signal 0 (100 m) and 1 (125 m)
        ilk.update(14.0 + k, [f], [10.0])
    assert 0 < max(runs) <= 8


def test_changed_at_finds_every_difference():
    a = list(range(1000))
    b = list(a)
    assert changed_at(a, b) == []
    b[0], b[517], b[999] = -1, -1, -1
    assert changed_at(a, b) == [0, 517, 999]


def test_no_pass_while_no_input_changed(tmp_path, sample_route):
    ilk = _line(tmp_path, sample_route, MIX.replace("approach_control_position (150)", "0"), (200.0, 400.0))
    ilk.add_train("t", FakeLine(4, 1, 1153.6, 0.0), 50.0, front=60.0)
    for k in range(8):
        ilk.update(float(k), [60.0], [0.0])
    deps = ilk.aspects.schedule.deps[0]
    assert {BLK, EN, ST} <= {c & ~0xFFFFFFFF for c in deps}  # what head 0 read is recorded
    passes = ilk.script_passes
    ilk.update(9.0, [60.0], [0.0])
    assert ilk.script_passes == passes


#: HeadRuntime's script built-ins and what they read: each records its reads (the cells of
#: signals/schedule.py) or reads nothing that changes. A built-in added without recording
#: what it reads would leave a head unscheduled when that input changes: add it here only
#: once it records its reads (docs/signals.md §4.4).
RECORDED = {
    "block_state",
    "route_set",
    "next_sig_lr",
    "next_sig_mr",
    "this_sig_lr",
    "this_sig_mr",
    "dist_multi_sig_mr",
    "dist_multi_sig_mr_of_lr",
    "next_nsig_lr",
    "next_sig_id",
    "next_nsig_id",
    "id_sig_enabled",
    "id_sig_lr",
    "store_lvar",
    "this_sig_lvar",
    "next_sig_lvar",
    "id_sig_lvar",
    "approach_control_position",
    "approach_control_position_forced",
    "approach_control_speed",
    "approach_control_next_stop",
}
CONSTANT = {
    "opp_sig_lr",
    "opp_sig_mr",
    "opp_sig_id",
    "sig_feature",
    "hashead",
    "def_draw_state",
    "this_sig_noupdate",
    "switchstand",
}


def test_every_script_builtin_records_what_it_reads():
    builtins = {n for n in vars(HeadRuntime) if not n.startswith("_") and callable(getattr(HeadRuntime, n))}
    assert builtins == RECORDED | CONSTANT, sorted(builtins ^ (RECORDED | CONSTANT))
