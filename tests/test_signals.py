"""Signals: sigcfg, world files, the signal-script grammar and compiler, signal objects."""

from __future__ import annotations

import collections
import time

import pytest
from helpers import DK24_ROUTE, needs_dk24

from tdbtools.errors import SourceError
from tdbtools.formats.sigcfg import ASPECTS, find_sigcfg, load_sigcfg, read_sigcfg
from tdbtools.formats.world import read_world, world_files, world_tile
from tdbtools.signals.events import Deadlock
from tdbtools.signals.script import ScriptError, preprocess, read_scripts

dk24 = [pytest.mark.dk24, needs_dk24]

B3_CFG = """SIMISA@@@@@@@@@@JINX0G0t______

LightTextures ( 2
    LightTex ( "ltex" "l.ace" 0 0 1 1 )
)
LightsTab ( 1
    LightsTabEntry ( "Red" colour ( 255 255 0 0 ) )
)
SignalTypes ( 3
    SignalType ( "B3"
        SignalFnType ( NORMAL )
        SignalDrawStates ( 3
            SignalDrawState ( 0 "Red" )
            SignalDrawState ( 1 "Yellow" )
            SignalDrawState ( 2 "Green" )
        )
        SignalAspects ( 3
            SignalAspect ( STOP "Red" )
            SignalAspect ( APPROACH_1 "Yellow" SpeedKPH ( 40 ) )
            SignalAspect ( CLEAR_2 "Green" )
        )
        SignalNumClearAhead ( 2 )
    )
    SignalType ( "Plain"
        SignalFnType ( Repeater )
        SignalDrawStates ( 1 SignalDrawState ( 0 "Red" ) )
        SignalAspects ( 1 SignalAspect ( STOP "Red" ) )
        SignalNumClearAhead ( 3 )
        SignalNumClearAhead ( 4 )
    )
    SignalType ( "B3" SignalFnType ( INFO ) )
)
SignalShapes ( 1
    SignalShape ( "sh\\\\Sig.s" "desc"
        SignalSubObjs ( 2
            SignalSubObj ( 0 "HEAD1" "h" SigSubType ( SIGNAL_HEAD ) SigSubSType ( "B3" ) )
            SignalSubObj ( 1 "" "u" SigSubType ( USER1 ) SignalFlags ( OPTIONAL BACK_FACING ) )
        )
    )
)
ScriptFiles ( ScriptFile ( sigscr.dat ) )
"""

B3_SCRIPT = """junk before the first script
SCRIPT B3
    extern float block_state (); extern float next_sig_lr (); extern float def_draw_state ();
    extern float state; extern float draw_state; extern float enabled;
    float nxt;
    nxt = next_sig_lr (SIGFN_NORMAL);
    if (!enabled || block_state () !=# BLOCK_CLEAR) { state = SIGASP_STOP; }
    else if (nxt ==# SIGASP_STOP) { state = SIGASP_APPROACH_1; }
    else { state = SIGASP_CLEAR_2; }
    draw_state = def_draw_state (state);
"""


class Fake:
    """A head context for the script tests: fixed answers, calls recorded."""

    def __init__(self, **kw):
        self.state = 0
        self.draw_state = 0
        self.enabled = kw.pop("enabled", 1)
        self.approach_position = -1
        self.approach_speed = -1
        self.values = kw
        self.lvars = {}
        self.calls = []

    def __getattr__(self, name):
        def f(*args):
            self.calls.append((name, args))
            v = self.values.get(name, 0)
            return v(*args) if callable(v) else v

        return f

    def store_lvar(self, i, v):
        self.lvars[i] = v
        return 0

    def this_sig_lvar(self, i):
        return self.lvars.get(i, 0)


def run(body: str, decls: str = "float a; float b;", **ctx):
    """Compile one script and run it: returns (state, draw, the fake)."""
    text = f"SCRIPT T\n{decls}\n{body}\n"
    f = read_scripts("t.dat", text=text)
    fake = Fake(**ctx)
    state, draw = f.scripts[0].function(fake)
    return state, draw, fake, f


# -- sigcfg -------------------------------------------------------------------------------------


def test_sigcfg_types_aspects_defaults_and_warnings(tmp_path):
    p = tmp_path / "sigcfg.dat"
    p.write_text(B3_CFG, encoding="utf-8")
    c = read_sigcfg(p)
    assert c.mode == "MSTS" and list(c.types) == ["b3", "plain"]
    b3 = c.types["b3"]
    assert [ASPECTS[a.aspect] for a in b3.aspects] == ["STOP", "APPROACH_1", "CLEAR_2"]
    assert b3.aspect(3).speed == pytest.approx(40 / 3.6) and b3.speed(0) == -1
    assert b3.def_draw_state(7) == 2 and b3.def_draw_state(5) == -1
    assert b3.most_restrictive() == 0 and b3.least_restrictive() == 7
    assert (b3.nca_msts, b3.nca_orts) == (2, -2)
    plain = c.types["plain"]
    assert plain.function == "REPEATER"  # mixed case in the file
    assert (plain.nca_msts, plain.nca_orts) == (-2, 3)  # two blocks in MSTS mode: the first value, ORTS slot
    assert b3.semaphore_info == 1.0 and b3.flash_on == 1.0
    assert list(c.shapes) == ["SIG.S"]
    sub = c.shapes["SIG.S"].sub_objs
    assert sub[0].sub_type == 1 and sub[0].signal_type == "b3" and sub[1].back_facing
    assert c.script_files == ("sigscr.dat",)
    msgs = [w.message for w in c.warnings]
    assert any("count 2, 1 light textures missing" in m for m in msgs)
    assert any("duplicate 'b3'" in m for m in msgs)
    assert all(w.location is not None for w in c.warnings)


def test_sigcfg_orts_mode_from_location(tmp_path):
    (tmp_path / "OpenRails").mkdir()
    text = B3_CFG.replace(
        "SignalTypes ( 3",
        """ORTSSignalFunctions ( 3
    ORTSSignalFunctionType ( "HUMP" "SHUNTING" )
    ORTSSignalFunctionType ( "ORTS_X" )
    ORTSSignalFunctionType ( "DIST2" "NORMAL" )
)
SignalTypes ( 3""",
    ).replace("SignalFnType ( Repeater )", "SignalFnType ( HUMP )")
    (tmp_path / "OpenRails" / "SIGCFG.DAT").write_text(text, encoding="utf-8")
    (tmp_path / "sigcfg.dat").write_text(B3_CFG, encoding="utf-8")
    assert find_sigcfg(tmp_path)[1] == "ORTS"
    c = load_sigcfg(tmp_path)
    assert c.mode == "ORTS"
    assert c.custom_functions == {"HUMP": "SHUNTING", "DIST2": "INFO"}
    assert c.types["plain"].function == "HUMP" and c.types["plain"].function_base == "SHUNTING"
    assert (c.types["b3"].nca_msts, c.types["b3"].nca_orts) == (-2, 2)
    assert any("ORTS_X" in w.message for w in c.warnings)


def test_sigcfg_strict_raises_located_error(tmp_path):
    p = tmp_path / "sigcfg.dat"
    p.write_text(B3_CFG, encoding="utf-8")
    with pytest.raises(SourceError) as e:
        read_sigcfg(p, strict=True)
    assert e.value.line is not None and "^" in str(e.value)


@pytest.mark.dk24
@needs_dk24
def test_dk24_sigcfg_oracles():
    c = load_sigcfg(DK24_ROUTE)
    assert c.mode == "MSTS"
    assert (len(c.light_textures), len(c.lights_tab), len(c.types), len(c.shapes), len(c.script_files)) == (
        25,
        7,
        91,
        99,
        1,
    )
    aspects = [a for t in c.types.values() for a in t.aspects]
    assert len(aspects) == 380
    assert sum(a.speed >= 0 for a in aspects) == 124
    assert sum(a.speed_reset for a in aspects) == 7
    assert all(a.draw_state in t.draw_states for t in c.types.values() for a in t.aspects)
    assert sum("light textures missing" in w.message for w in c.warnings) == 1
    nca = collections.Counter(t.nca_msts for t in c.types.values())
    assert (nca[1], nca[3], nca[4], nca[5], nca[-2]) == (29, 18, 10, 17, 7)


# -- world files -------------------------------------------------------------------------------


def test_world_tile_names():
    assert world_tile("w-005636+015116.w") == (-5636, 15116)
    assert world_tile("w-005636+015116.ws") is None and world_tile("x-005636+015116.w") is None


@pytest.mark.dk24
@needs_dk24
def test_dk24_world_signals():
    files = world_files(DK24_ROUTE)
    ws = [read_world(f) for f in files]
    sigs = [s for w in ws for s in w.signals]
    assert len(sigs) == 85 and sum(len(s.units) for s in sigs) == 95
    assert sum(bool(w.signals) for w in ws) == 19
    w = read_world(DK24_ROUTE / "WORLD" / "w-005636+015116.w")
    s = next(o for o in w.signals if o.uid == 940)
    assert s.file_name == "dk4indsigM.s" and s.sub_obj_mask == 0x23
    assert [(u.sub_obj, u.item_id) for u in s.units] == [(0, 231), (1, 232)]
    assert s.q_direction == pytest.approx((0, 0.844014, 0, 0.53632))
    assert all(o.uid >= 0 and o.file_name for o in w.objects)


# -- the script language ----------------------------------------------------------------------


def test_line_rules_fragments_and_comments():
    raw = preprocess(
        "head\nSCRIPT A\n x = 1; /* c */\n/* start\n still\n end */ y = 2;\n"
        "z = 3 /* d */;\nREM SCRIPT\nw = 4;\nSCRIPT B\nif(a) {b=1;}\n"
    )
    assert [r.name for r in raw] == ["A", "B"]
    assert [f[0] for f in raw[0].fragments] == ["X = 1;", "Z = 3 /* D */;"]
    assert [f[0] for f in raw[1].fragments] == ["IF(A)", "{", "B=1;", "}"]
    assert raw[0].fragments[0][1:] == (3, 2)


def test_quirks_arithmetic():
    assert run("a = 7 - 2 * 3; state = a;")[0] == 15
    assert run("a = 7 / 0; state = a;")[0] == 0
    assert run("a = -7 / 2; state = a;")[0] == -3
    assert run("a = 1.5; state = a;")[0] == 0
    assert run("a = SIGFN_NORMAL; state = a;")[0] == -1
    assert run("a = 5 - block_state(); state = a;", block_state=1)[0] == 6
    assert run("a = -(2 + 3) * 2; state = a;")[0] == -10
    assert run("a = !0 + NOT 5; state = a;")[0] == 1


def test_quirks_conditions():
    assert run("a = 1; if (a = 1) { state = 5; } else { state = 2; }")[0] == 2
    assert run("a = 2; if (a = 1) { state = 5; }")[0] == 5
    assert run("if (1 || 0 && 0) { state = 5; } else { state = 3; }")[0] == 3
    assert run("if (1 OR 0 AND 1) state = 5;")[0] == 5
    assert run("a = 3; if (a ==# 3 && a !=# 4 && a >=# 3) state = 4;")[0] == 4
    assert run("a = 0; if (!a) state = 6; else if (a == 1) state = 1; ELSEIF (a == 2) state = 2;")[0] == 6
    # No short-circuit: both calls run.
    _s, _d, fake, _f = run("if (route_set() || next_sig_lr(SIGFN_NORMAL)) state = 1;", route_set=1)
    assert [c[0] for c in fake.calls] == ["route_set", "next_sig_lr"]
    assert fake.calls[1][1] == (0,)


def test_quirks_names_locals_and_lvars():
    st, _d, _f, f = run("a = misspelt + 2; state = a;")
    assert st == 2 and any("unknown name 'MISSPELT'" in w.message for w in f.warnings)
    st, _d, _f, f = run("undeclared = 3; state = 1;")
    assert st == 1 and any("not defined" in w.message for w in f.warnings)
    _s, _d, _f, f = run("state = 1;", decls="float a, b;")
    assert any("one name per declaration" in w.message for w in f.warnings)
    _s, _d, _f, f = run("a = 1; float c; c = 2;")
    assert any("late declaration" in w.message for w in f.warnings)
    # Locals are reset on every run; store_lvar persists.
    f = read_scripts(
        "t.dat",
        text="SCRIPT T\nfloat a;\nstate = a; a = 9; store_lvar(1, 5);\ndraw_state = this_sig_lvar(1);\n",
    )
    fake = Fake()
    assert f.scripts[0].function(fake) == (0, 5)
    assert f.scripts[0].function(fake) == (0, 5)
    # The -f() double negation.
    assert run("a = 10 - this_sig_lr(SIGFN_INFO); state = a;", this_sig_lr=-1)[0] == 9
    # RETURN stops the script; STATE/DRAW_STATE are read as the head's current values.
    assert run("state = 3; return; state = 4;")[0] == 3


def test_unknown_function_and_constants_warn():
    st, _d, _f, f = run("a = frobnicate(1) + SIGASP_PURPLE + 4; state = a;")
    assert st == 4
    msgs = " ".join(w.message for w in f.warnings)
    assert "unknown function call" in msgs and "SIGASP_PURPLE" in msgs


def test_syntax_error_is_located_and_lenient_goes_on(tmp_path):
    text = "SCRIPT S\nfloat a;\n  a = (1 + ;\nstate = 3;\n"
    with pytest.raises(ScriptError) as e:
        read_scripts("s.dat", text=text, strict=True)
    err = e.value
    assert (err.path, err.line) == ("s.dat", 3) and err.column >= 3 and "^" in str(err)
    f = read_scripts("s.dat", text=text)
    assert f.errors == 1 and f.scripts[0].function(Fake()) == (3, 0)
    # A '/*' inside a statement is no comment: a parse problem, the statement is dropped.
    f = read_scripts("s.dat", text="SCRIPT S\nstate = 1 /* c */;\ndraw_state = 2;\n")
    assert f.errors == 1 and f.scripts[0].function(Fake()) == (0, 2)


def test_hostile_names_never_reach_the_generated_code():
    evil = "__import__('os').system('echo x')"
    text = (
        f"SCRIPT {evil}\nfloat {evil};\nstate = __import__;\nif (__class__) state = 1;\n"
        "a__b = exec(1);\nstate = 99999999999999999999;\n"
    )
    f = read_scripts("h.dat", text=text)
    src = f.scripts[0].source
    for bad in ("import", "os", "system", "__class__", "exec", "99999999999999999999"):
        assert bad not in src.replace("_script0", "")
    assert f.scripts[0].function(Fake()) == (0, 0)


def test_b3_script_semantics():
    f = read_scripts("s.dat", text=B3_SCRIPT)
    fn = f.scripts[0].function
    assert fn(Fake(enabled=0, def_draw_state=lambda a: {0: 0, 3: 1, 7: 2}[a])) == (0, 0)
    assert fn(Fake(block_state=1, def_draw_state=lambda a: a)) == (0, 0)
    assert fn(Fake(next_sig_lr=0, def_draw_state=lambda a: {3: 1}[a])) == (3, 1)
    assert fn(Fake(next_sig_lr=7, def_draw_state=lambda a: {7: 2}[a])) == (7, 2)


@pytest.mark.dk24
@needs_dk24
def test_dk24_scripts_parse_fast_without_errors():
    # CPU time of this process (the machine is shared): building the grammar, reading, parsing
    # and compiling every script.
    import tdbtools.signals.script_parse as script_parse

    script_parse._PARSER = None
    t0 = time.process_time()
    f = read_scripts(DK24_ROUTE / "sigscr.dat")
    took = time.process_time() - t0
    assert len(f.scripts) == 89 and len({s.key for s in f.scripts}) == 89
    assert f.errors == 0 and f.warnings == ()
    calls = collections.Counter()
    for s in f.scripts:
        calls.update(s.calls)
    assert calls == {
        "sig_feature": 98,
        "block_state": 89,
        "def_draw_state": 89,
        "route_set": 67,
        "next_sig_lr": 53,
        "this_sig_lr": 37,
        "this_sig_mr": 2,
    }
    assert took < 0.5, f"parsing and compiling took {took:.3f} s"


@pytest.mark.dk24
@needs_dk24
def test_dk24_dkam_script():
    f = read_scripts(DK24_ROUTE / "sigscr.dat")
    dkam = next(s for s in f.scripts if s.key == "dkam").function
    draw = {0: 0, 6: 1, 7: 2, 2: 3}.__getitem__
    assert dkam(Fake(block_state=1, def_draw_state=draw)) == (0, 0)
    for nxt in (6, 7, 5):
        assert dkam(Fake(next_sig_lr=nxt, def_draw_state=draw)) == (7, 2)
    assert dkam(Fake(next_sig_lr=3, def_draw_state=draw)) == (6, 1)
    assert dkam(Fake(enabled=0, sig_feature=0, def_draw_state=draw)) == (2, 3)
    assert dkam(Fake(enabled=0, sig_feature=1, def_draw_state=draw)) == (0, 0)


# -- signal objects ---------------------------------------------------------------------------


# (dk24_signals: DK24's signal objects, made once per run in conftest.py)


@pytest.mark.dk24
@needs_dk24
def test_dk24_signal_objects(dk24_signals):
    s = dk24_signals
    heads = s.heads
    assert len(heads) == 95 and len({h.type_name for h in heads}) == 12
    assert all(h.type is not None for h in heads)
    assert collections.Counter(h.function for h in heads) == {
        "NORMAL": 74,
        "SPEED": 10,
        "INFO": 10,
        "DISTANCE": 1,
    }
    assert len(s.signals) == 85 and collections.Counter(len(o.heads) for o in s.signals) == {1: 75, 2: 10}
    assert all(o.world is not None for o in s.signals)  # no TDB item without a world object
    assert s.world_signals == 85
    assert len(s.scripts) == 89 and sorted(set(s.config.types) - set(s.scripts)) == ["dk4indh", "dk4indv"]
    linked = {h.item: h.junction for h in heads if h.junction}
    assert linked == {38: (500, 0, 459), 39: (499, 1, 493)}
    o = next(
        o for o in s.signals if o.world and o.world.uid == 940 and o.world.file.endswith("w-005636+015116.w")
    )
    assert [(h.item, h.type_name) for h in o.heads] == [(231, "dk4ind"), (232, "dkhviser")]
    # The real sigcfg makes dk4ind an INFO type (the spec's worked example calls it NORMAL).
    assert [h.function for h in o.heads] == ["INFO", "SPEED"]
    assert (o.sig_feature(9), o.sig_feature(6), o.sig_feature(1), o.sig_feature(4)) == (1, 0, 1, 0)
    assert (o.hashead(5), o.hashead(2)) == (1, 0)
    limits = collections.Counter(round(p.speed[0] * 3.6) for p in s.speedposts)
    assert len(s.speedposts) == 52 and limits == {
        180: 10,
        170: 10,
        150: 7,
        160: 6,
        120: 5,
        140: 4,
        130: 4,
        90: 3,
        110: 2,
        100: 1,
    }
    js = s.summary()
    assert {"signals", "heads", "scripts", "warnings"} <= set(js)
    assert js["scripts"]["parsed"] == 89 and js["scripts"]["errors"] == 0


# -- the runtime ------------------------------------------------------------------------------


class FakeLine:
    """The TrackLine columns the interlocking reads: one node walked one way."""

    def __init__(self, node: int, direction: int, length: float, start_offset: float):
        import numpy as np

        self.seg_node = np.array([node])
        self.seg_dir = np.array([direction])
        self.seg_s0 = np.array([0.0])
        self.seg_s1 = np.array([length])
        self.seg_off0 = np.array([start_offset])
        self.junction_s = self.junction_node = self.junction_route = np.array([])
        self.length = length


@pytest.fixture(scope="module")
def sample_route():
    from helpers import SAMPLE_ROUTE

    from tdbtools.formats.route import load_route

    return load_route(SAMPLE_ROUTE)


def b3_line(tmp_path, route, nca=2, script=True, offsets=(200.0, 400.0, 600.0, 800.0, 1000.0), dirs=None):
    """S1..S5 of type B3 on the sample route's V_main (node 4), governing eastbound trains."""
    import dataclasses

    from tdbtools.signals.objects import Head, SignalObject
    from tdbtools.signals.runtime import Interlocking

    p = tmp_path / "sigcfg.dat"
    p.write_text(B3_CFG, encoding="utf-8")
    b3 = dataclasses.replace(read_sigcfg(p).types["b3"], nca_msts=nca)
    sc = read_scripts("s.dat", text=B3_SCRIPT).scripts[0] if script else None
    objs = []
    for k, off in enumerate(offsets):
        d = 0 if dirs is None else dirs[k]
        h = Head(100 + k, "b3", b3, "NORMAL", 0, d, 4, off, None, sc)
        objs.append(SignalObject(k, "signal", (h,), 4, off, d))
    return Interlocking(route, objs)


def names(ilk):
    return [ASPECTS[ilk.aspect(k)] for k in range(len(ilk.objects))]


def test_runtime_scripts_only_converge_in_two_cycles(tmp_path, sample_route):
    ilk = b3_line(tmp_path, sample_route)
    assert [len(ilk.node_secs[4])] == [6]  # V_main split at the five signals
    ilk.add_train("t", FakeLine(4, 1, 1153.6, 0.0), 50.0, front=700.0)
    ilk.time = 0.0
    for s in ilk.sections:
        ilk.set_occupants(s.index, {})
    ilk.set_occupants(ilk.node_secs[4][3], {0: 1})  # the train stands between S3 and S4
    ilk.trains[0].speed = 0.0
    ilk.update_blocks()
    ilk.run_scripts(force_enabled=True)
    assert names(ilk) == ["APPROACH_1", "APPROACH_1", "STOP", "APPROACH_1", "APPROACH_1"]
    ilk.update_blocks()
    ilk.run_scripts(force_enabled=True)
    assert names(ilk) == ["CLEAR_2", "APPROACH_1", "STOP", "CLEAR_2", "APPROACH_1"]
    assert [h.draw_state for h in ilk.heads] == [2, 1, 0, 2, 1]


def test_runtime_a_pass_that_changed_nothing_is_skipped_until_an_input_changes(tmp_path, sample_route):
    ilk = b3_line(tmp_path, sample_route)
    ilk.add_train("t", FakeLine(4, 1, 1153.6, 0.0), 50.0, front=700.0)
    for s in ilk.sections:
        ilk.set_occupants(s.index, {})
    ilk.set_occupants(ilk.node_secs[4][3], {0: 1})
    ilk.trains[0].speed = 0.0
    passes = []
    for _ in range(4):
        ilk.update_blocks()
        ilk.run_scripts(force_enabled=True)
        passes.append(ilk.script_passes)
    # two passes to converge, a third that changes nothing, then at rest
    assert passes == [1, 2, 3, 3]
    before = names(ilk)
    for s in ilk.sections:  # the train leaves: the blocks change
        ilk.set_occupants(s.index, {})
        ilk.reserve_section(s.index, -1)
    ilk.update_blocks()
    ilk.run_scripts(force_enabled=True)
    assert ilk.script_passes == 4 and names(ilk) != before


@pytest.mark.parametrize(
    "nca,expected",
    [
        (1, ["APPROACH_1", "STOP", "STOP"]),
        (2, ["CLEAR_2", "APPROACH_1", "STOP", "STOP"]),
        (3, ["CLEAR_2", "CLEAR_2", "APPROACH_1", "STOP"]),
    ],
)
def test_runtime_enabling_follows_numclearahead(tmp_path, sample_route, nca, expected):
    ilk = b3_line(tmp_path, sample_route, nca=nca)
    ilk.add_train("t", FakeLine(4, 1, 1153.6, 0.0), 50.0, front=150.0)
    for k in range(4):
        ilk.update(float(k), [150.0], [0.0])
    assert names(ilk)[: len(expected)] == expected
    assert [ilk.enabled_train[k] for k in range(5)] == [0] * nca + [-1] * (5 - nca)
    stop, _creep, limits = ilk.targets(0)
    assert stop == pytest.approx(ilk.trains[0].signals[nca][0] - 15.0)
    if nca == 1:
        assert limits and limits[0][2] == pytest.approx(40 / 3.6)  # APPROACH_1 carries 40 km/h


def test_runtime_no_script_uses_block_state(tmp_path, sample_route):
    ilk = b3_line(tmp_path, sample_route, script=False)
    ilk.add_train("t", FakeLine(4, 1, 1153.6, 0.0), 50.0, front=700.0)
    ilk.update(0.0, [700.0], [0.0])
    a = names(ilk)
    assert a[2] == "STOP" and a[0] == "CLEAR_2" and a[3] == "CLEAR_2"


def test_runtime_following_train_held_and_released(tmp_path, sample_route):
    ilk = b3_line(tmp_path, sample_route, nca=2)
    line = FakeLine(4, 1, 1153.6, 0.0)
    ilk.add_train("lead", line, 100.0, front=450.0)
    ilk.add_train("follow", line, 100.0, front=150.0)
    pos, v = [450.0, 150.0], [10.0, 0.0]
    for k in range(5):
        ilk.update(float(k), pos, v)
    stop, _c, _l = ilk.targets(1)
    assert stop == pytest.approx(200.0 - 15.0)  # S1 not cleared: the lead is in S1-S2 (... S2-S3)
    t = 5.0
    while pos[0] < 950.0:
        pos[0] += 10.0
        ilk.update(t, pos, v)
        t += 1.0
    assert ilk.enabled_train[0] == 1 and ilk.targets(1)[0] is not None and ilk.targets(1)[0] > 200.0
    kinds = [e.kind for e in ilk.events]
    assert "spad" not in kinds and "aspect" in kinds


def test_runtime_deadlock_reported(tmp_path, sample_route):
    ilk = b3_line(tmp_path, sample_route, offsets=(500.0, 700.0), dirs=(0, 1))
    ilk.deadlock_after = 10.0
    ilk.add_train("east", FakeLine(4, 1, 1153.6, 0.0), 50.0, front=400.0)
    ilk.add_train("west", FakeLine(4, 0, 1153.6, 1153.6), 50.0, front=353.6)
    for k in range(30):
        ilk.update(float(k), [400.0, 353.6], [0.0, 0.0])
    dl = [e for e in ilk.events if isinstance(e, Deadlock)]  # typed by the runtime itself
    assert len(dl) == 1 and sorted(dl[0].trains) == ["east", "west"]
    assert dl[0].sections and 10.0 <= dl[0].time <= 12.0
    assert dl[0].to_dict()["trains"] == list(dl[0].trains)


# -- command line -----------------------------------------------------------------------------


@pytest.mark.dk24
@needs_dk24
def test_cli_signals_json():
    import json

    from click.testing import CliRunner

    from tdbtools.cli import main

    r = CliRunner().invoke(main, ["signals", str(DK24_ROUTE), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert len(d["signals"]) == 85 and len(d["heads"]) == 95
    assert d["scripts"]["parsed"] == 89 and d["scripts"]["errors"] == 0
    assert isinstance(d["warnings"], list) and d["mode"] == "MSTS"


def test_cli_signals_bad_route_exits_2(tmp_path):
    from click.testing import CliRunner

    from tdbtools.cli import main

    r = CliRunner().invoke(main, ["signals", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "Traceback" not in r.output


# -- signalled replays ------------------------------------------------------------------------

FOLLOW = """route = "{route}"
step = 0.2
duration = 700
stand_in = true

[[train]]
name = "leader"
consist = "{consist}"
path = "629.pat"
start_offset = 700
beyond_path = 9500

[[train]]
name = "follower"
consist = "{consist}"
path = "629.pat"
beyond_path = 9500
depart = 120
"""


@pytest.mark.slow
@pytest.mark.dk24
@needs_dk24
def test_dk24_follower_brakes_for_a_red_without_collision(tmp_path, dk24, dk24_signals):
    import numpy as np
    from helpers import SAMPLE_INSTALL

    from tdbtools.physics.replay import Replay
    from tdbtools.physics.scenario import read_scenario
    from tdbtools.physics.signalling import space_time

    p = tmp_path / "follow.toml"
    p.write_text(
        FOLLOW.format(
            route=DK24_ROUTE.as_posix(),
            consist=(SAMPLE_INSTALL / "TRAINS" / "CONSISTS" / "sample_freight.con").as_posix(),
        ),
        encoding="utf-8",
    )
    rp = Replay(read_scenario(p), route=dk24, signals=dk24_signals)  # both read once per run
    res = rp.run()
    kinds = collections.Counter(e.kind for e in res.events)
    assert kinds["collision"] == 0 and kinds["side_collision"] == 0 and kinds["spad"] == 0
    assert kinds["deadlock"] == 0
    seen = res.summary["signalling"]["trains"]["follower"]["aspects_seen"]
    reds = [s for s in seen if s["aspect"] == "STOP" and s["time"] > 120.0]
    assert reds, seen
    # The follower brakes from line speed to a stand short of a signal at danger.
    tr = res.traces["follower"]
    v = tr["speed"]
    st = space_time(rp, res)
    red_sig = reds[-1]["signal"]
    s_sig = next(s["s"] for s in st["signals"] if s["signal"] == red_sig)
    stopped = np.flatnonzero((tr["time"] > reds[-1]["time"]) & (np.abs(v) < 0.05))
    assert len(stopped), "the follower never stopped"
    k = stopped[0]
    assert v[:k].max() > 10.0
    front = st["trains"]["follower"]["front"][k]
    assert 5.0 < s_sig - front < 60.0, (s_sig, front)
    # The leader was ahead of the follower the whole time (same line, no overtaking).
    lead, fol = st["trains"]["leader"]["rear"], st["trains"]["follower"]["front"]
    n = min(len(lead), len(fol))
    assert np.all(lead[:n] > fol[:n])


# -- the signalled sample route -----------------------------------------------------------------


def test_sample_signals_route_loads():
    from helpers import SAMPLE_INSTALL

    from tdbtools.formats.route import load_route
    from tdbtools.signals import signal_report

    rep = signal_report(load_route(SAMPLE_INSTALL / "ROUTES" / "SIGNALS"))
    assert rep["mode"] == "MSTS" and rep["types"] == 1
    assert len(rep["signals"]) == 6 and all(
        h["function"] == "NORMAL" and h["script"] == "b3" for h in rep["heads"]
    )
    assert rep["scripts"] == {"files": ["sigscr.dat"], "parsed": 1, "errors": 0, "bound": 1}
    # No world file holds the signals: they work from their TDB items alone (with a note).
    assert all(s["world"] is None for s in rep["signals"])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["follow", "crossing"])
def test_sample_signals_scenarios_run_without_collision(name):
    from helpers import SAMPLE_INSTALL

    from tdbtools.physics.replay import replay

    res = replay(SAMPLE_INSTALL / f"signals_{name}.toml")
    kinds = collections.Counter(e.kind for e in res.events)
    assert kinds["collision"] == kinds["side_collision"] == kinds["spad"] == kinds["derailment"] == 0
    sig = res.summary["signalling"]["trains"]
    if name == "follow":
        waits = sig["follower"]["signal_waits_s"]
        assert waits.get("0", 0.0) > 20.0  # held at the home signal of J_W
        assert any(s["aspect"] == "STOP" for s in sig["follower"]["aspects_seen"])
        assert res.summary["trains"]["leader"]["finished"]
    else:
        assert all(t["finished"] for t in res.summary["trains"].values())
        assert sum(sum(w.values()) for w in (sig[n]["signal_waits_s"] for n in sig)) > 5.0


def test_hostile_nesting_is_an_error_not_a_crash():
    deep_parens = "SCRIPT D\nfloat a;\na = " + "(" * 400 + "1" + ")" * 400 + ";\nstate = 2;\n"
    long_sum = "SCRIPT L\nfloat a;\na = " + " + ".join(["1"] * 400) + ";\nstate = 3;\n"
    blocks = "SCRIPT B\n" + "{" * 500 + "state = 1;" + "}" * 500 + "\n"
    ifs = "SCRIPT I\n" + "if (1) " * 120 + "state = 1;\n"
    chain = (
        "SCRIPT C\nfloat a;\n"
        + "".join(f"if (a == {k + 1}) state = 1; else " for k in range(500))
        + "state = 4;\n"
    )
    for text in (deep_parens, long_sum, blocks, ifs):
        with pytest.raises(ScriptError):
            read_scripts("x.dat", text=text, strict=True)
        f = read_scripts("x.dat", text=text)
        assert f.errors >= 1 and f.scripts[0].function(Fake()) == (0, 0)
    f = read_scripts("x.dat", text=chain)  # a long else-if chain is fine: it becomes elif
    assert f.errors == 0 and f.scripts[0].function(Fake()) == (4, 0)


@pytest.mark.slow
def test_cli_replay_plot_draws_the_signal_chart_and_no_signals_turns_them_off(tmp_path):
    import json

    from click.testing import CliRunner
    from helpers import SAMPLE_INSTALL

    from tdbtools.cli import main

    sc = str(SAMPLE_INSTALL / "signals_crossing.toml")
    r = CliRunner().invoke(main, ["replay", sc, "--out", str(tmp_path / "a"), "--plot", "--duration", "60"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "a" / "signals_space_time.png").stat().st_size > 10_000
    summary = json.loads((tmp_path / "a" / "summary.json").read_text(encoding="utf-8"))
    assert summary["signalling"]["signals"] == 6
    events = json.loads((tmp_path / "a" / "events.json").read_text(encoding="utf-8"))["events"]
    assert any(e["kind"] == "aspect" for e in events) and any(e["kind"] == "signal" for e in events)
    r = CliRunner().invoke(
        main, ["replay", sc, "--out", str(tmp_path / "b"), "--no-signals", "--duration", "20"]
    )
    assert r.exit_code == 0, r.output
    assert "signalling" not in json.loads((tmp_path / "b" / "summary.json").read_text(encoding="utf-8"))


def test_speed_heads_are_variable_speed_posts(tmp_path, sample_route):
    import dataclasses

    from tdbtools.signals.objects import Head, SignalObject

    ilk0 = b3_line(tmp_path, sample_route, nca=3, offsets=(200.0, 800.0))
    b3 = ilk0.objects[0].heads[0].type
    speed_type = dataclasses.replace(b3, name="spd", function="SPEED", function_base="SPEED")
    sc = read_scripts("s.dat", text="SCRIPT SPD\nstate = SIGASP_APPROACH_1;\n").scripts[0]
    h = Head(200, "spd", speed_type, "SPEED", 5, 0, 4, 500.0, None, sc)
    from tdbtools.signals.runtime import Interlocking

    objs = list(ilk0.objects) + [SignalObject(2, "signal", (h,), 4, 500.0, 0)]
    ilk = Interlocking(sample_route, objs)
    assert len(ilk.node_secs[4]) == 3  # a SPEED head does not split track circuits
    ilk.add_train("t", FakeLine(4, 1, 1153.6, 0.0), 50.0, front=150.0)
    for k in range(3):
        ilk.update(float(k), [150.0], [0.0])
    _stop, _creep, limits = ilk.targets(0)
    assert (500.0, 800.0, pytest.approx(40 / 3.6)) in [(round(a, 3), round(b, 3), v) for a, b, v in limits]


def test_route_set_follows_the_linked_junction():
    import dataclasses

    from helpers import SAMPLE_INSTALL

    from tdbtools.formats.route import load_route
    from tdbtools.signals import load_signals
    from tdbtools.signals.objects import Head, SignalObject
    from tdbtools.signals.runtime import Interlocking

    route = load_route(SAMPLE_INSTALL / "ROUTES" / "SIGNALS")
    home = load_signals(route).signals[0]  # home signal of J_W, eastbound, on V_w
    assert (home.node, round(home.offset), home.direction) == (2, 30, 1)
    h = home.heads[0]
    linked = Head(
        h.item,
        h.type_name,
        h.type,
        h.function,
        h.function_index,
        h.direction,
        h.node,
        h.offset,
        (3, 1, 5),
        h.script,
    )  # linked to J_W route 1: the loop (node 5)
    pointer = dataclasses.replace(linked, function="DISTANCE", function_index=1)
    ilk = Interlocking(
        route,
        [
            SignalObject(0, "signal", (linked,), home.node, home.offset, home.direction),
            SignalObject(1, "signal", (pointer,), home.node, home.offset + 5.0, home.direction),
        ],
    )
    ilk.set_switch(3, 1)
    # a NORMAL signal no train enabled: not set (Open Rails' route_set walks the set
    # switches only for enabled signals and those without a NORMAL head)
    assert (ilk.heads[0].route_set(), ilk.heads[1].route_set()) == (0, 1)
    ilk.set_switch(3, 0)
    assert (ilk.heads[0].route_set(), ilk.heads[1].route_set()) == (0, 0)
