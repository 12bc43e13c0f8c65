"""The signal-script language bounded as Open Rails bounds it (issue 32, docs/signals.md §2.5-2.7):
32-bit arithmetic, division rules, literal length, nesting, long ``else if`` chains, generated
source size, and error recovery whose cost does not grow with the number of errors."""

from __future__ import annotations

import random

import pytest
from test_signals import Fake, run

import tdbtools.signals.script as S
import tdbtools.signals.script_base as B
import tdbtools.signals.script_compile as C
import tdbtools.signals.script_parse as P
from tdbtools.errors import Diagnostics
from tdbtools.signals.script import ScriptError, ScriptRuntimeError, read_scripts

INT_MAX = 2**31 - 1
INT_MIN = -(2**31)


def test_arithmetic_wraps_like_a_32_bit_int():
    assert run(f"a = {INT_MAX} + 1; state = a;")[0] == INT_MIN
    # (a literal is at most 2147483647: "-2147483648" is minus an unknown name, 0)
    assert run("a = -2147483648; state = a;")[0] == 0
    assert run(f"a = {INT_MAX} + 1; a = a - 1; state = a;")[0] == INT_MAX
    assert run("a = 65536 * 65536; state = a;")[0] == 0
    assert run("a = 65536 * 32768; state = a;")[0] == INT_MIN
    assert run(f"a = {INT_MAX} + 1; a = -a; state = a;")[0] == INT_MIN
    # A local squared again and again stays an int (the 3.6 GB case).
    body = "a = 3;" + " a = a * a;" * 60 + " state = a;"
    v = run(body)[0]
    x = 3
    for _ in range(60):
        x = ((x * x + 2**31) % 2**32) - 2**31
    assert v == x and INT_MIN <= v <= INT_MAX
    # Wrapping happens before / and % read their operands.
    assert run(f"a = {INT_MAX} + 1 / 2; state = a;")[0] == INT_MIN // 2
    # Signed operands in conditions and call arguments wrap too.
    assert run(f"a = {INT_MAX} + 1; if (-a < 0) state = 1; else state = 2;")[0] == 1


def test_division_and_modulo_as_open_rails():
    assert run("a = 7 / 0; state = a;")[0] == 0
    assert run("a = -7 / 2; state = a;")[0] == -3
    assert run("a = -7 % 3; state = a;")[0] == -1
    assert run("b = -3; a = 7 % b; state = a;")[0] == 1
    with pytest.raises(ScriptRuntimeError, match="by zero"):
        run("a = 7 % 0; state = a;")
    with pytest.raises(ScriptRuntimeError, match="-1"):
        run(f"a = {INT_MAX} + 1; b = -1; b = a / b; state = b;")
    with pytest.raises(ScriptRuntimeError, match="-1"):
        run(f"a = {INT_MAX} + 1; b = -1; b = a % b; state = b;")


def test_huge_literals_read_zero_without_error():
    digits = "9" * 5000
    st, _d, _f, f = run(f"a = {digits}; state = 5 + a;")
    assert st == 5 and any("unknown name" in w.message for w in f.warnings)
    assert digits not in f.scripts[0].source
    # As a function-type argument too.
    run(f"state = next_sig_lr({digits});")


def test_three_thousand_else_if_branches_compile_and_pick_the_right_one():
    n = 3000
    chain = " ".join(f"{'if' if k == 0 else 'else if'} (a == {k}) state = {k + 1};" for k in range(n))
    text = f"SCRIPT T\nfloat a;\na = {n - 2};\n{chain} else state = 77;\n"
    f = read_scripts("t.dat", text=text)
    assert f.errors == 0
    assert f.scripts[0].function(Fake()) == (n - 1, 0)
    # Each branch's condition runs only until one matches (as elif).
    text = text.replace(f"a = {n - 2};", "a = -5;")
    assert read_scripts("t.dat", text=text).scripts[0].function(Fake()) == (77, 0)


def test_short_chain_keeps_elif_and_long_chain_is_flat():
    short = read_scripts("t.dat", text="SCRIPT T\nif (1) state = 1; else if (2) state = 2;\n")
    assert "elif" in short.scripts[0].source
    n = B.MAX_ELIF + 5
    chain = " ".join(f"{'if' if k == 0 else 'else if'} ({k}) state = {k};" for k in range(n))
    long_ = read_scripts("t.dat", text=f"SCRIPT T\n{chain}\n")
    assert "elif" not in long_.scripts[0].source
    assert long_.scripts[0].function(Fake()) == (1, 0)


@pytest.mark.parametrize(
    "body",
    [
        "a = " + "(" * 5000 + "1" + ")" * 5000 + ";",
        "if (" + "(" * 5000 + "a" + ")" * 5000 + ") state = 1;",
        "{" * 3000 + "state = 1;" + "}" * 3000,
        "if (a) " * 3000 + "state = 1;",
        "a = " + "!" * 5000 + "1;",
    ],
    ids=["parens", "condition", "blocks", "nested-if", "nots"],
)
def test_deep_nesting_is_a_located_problem_not_a_crash(body):
    text = f"SCRIPT DEEP\nfloat a;\n{body}\nSCRIPT OK\nstate = 4;\n"
    f = read_scripts("d.dat", text=text)
    assert f.scripts[1].function(Fake()) == (4, 0)  # the other script is unharmed
    assert f.scripts[0].function(Fake()) in ((0, 0), (1, 0))
    if f.errors:
        assert any("DEEP" in w.message and w.location.line == 1 for w in f.warnings)
    with pytest.raises(ScriptError):
        if not f.errors:
            raise ScriptError("fine", None)  # depth within bounds: nothing to refuse
        read_scripts("d.dat", text=text, strict=True)


def test_tree_depth_is_measured_without_recursion():
    body = "a = " + "(" * 20000 + "1" + ")" * 20000 + ";"
    raw = P.preprocess(f"SCRIPT T\nfloat a;\n{body}\n")[0]
    tree, errors = P.parse_script(raw, B.ScriptContext("t", "", Diagnostics(strict=False)))
    assert errors == 0 and C.tree_depth(tree) > 20000


def test_generated_source_is_bounded(monkeypatch):
    monkeypatch.setattr(S, "MAX_SOURCE_CHARS", 500)
    body = " ".join(f"state = {k};" for k in range(200))
    f = read_scripts("t.dat", text=f"SCRIPT BIG\n{body}\nSCRIPT OK\nstate = 2;\n")
    assert f.errors == 1 and "more than 500 characters" in f.warnings[0].message
    assert f.scripts[0].function(Fake()) == (0, 0) and f.scripts[1].function(Fake()) == (2, 0)


def _junked(rng: random.Random, raw: B.RawScript) -> B.RawScript:
    junk = ["(", ")", "{", "}", "IF", "ELSE", "ELSEIF", "=", ";", "+", "&&", "X(", "FLOAT", "@", "!", "é"]
    frags = list(raw.fragments)
    for _ in range(rng.randint(1, 8)):
        k = rng.randrange(len(frags))
        t, line, col = frags[k]
        pos = rng.randrange(len(t) + 1)
        frags[k] = (t[:pos] + rng.choice(junk) + t[pos:], line, col)
    return B.RawScript(raw.name, raw.line, frags)


SAMPLE = """SCRIPT T
extern float block_state();
float a;
float b;
if (block_state() ==# BLOCK_CLEAR) {
  a = next_sig_lr(SIGFN_NORMAL);
  if (a == SIGASP_STOP || a == SIGASP_STOP_AND_PROCEED) {
     state = SIGASP_APPROACH_1;
  } else if (a > 3) {
     state = SIGASP_CLEAR_2; b = a * 2 + 1;
  } elseif (route_set()) { state = 1; }
  else { state = SIGASP_CLEAR_1; }
} else {
  state = SIGASP_STOP;
}
draw_state = def_draw_state(state);
"""


def test_one_pass_recovery_equals_parsing_again_after_each_error():
    raw = P.preprocess(SAMPLE)[0]
    rng = random.Random(32)
    for _ in range(300):
        bad = _junked(rng, raw)
        d1, d2 = Diagnostics(strict=False), Diagnostics(strict=False)
        one = P.parse_script(bad, B.ScriptContext("x", SAMPLE, d1))
        again = P._parse_by_reparsing(bad, B.ScriptContext("x", SAMPLE, d2))
        assert one == again
        assert [(w.message, w.location.line, w.location.column) for w in d1.findings] == [
            (w.message, w.location.line, w.location.column) for w in d2.findings
        ]


def test_recovery_reads_the_script_once(monkeypatch):
    # 150 bad lines in a long script: one parse, not one per error.
    lines = []
    for k in range(3000):
        lines.append("a = 1 + ;" if k % 20 == 0 else f"a = {k};")
    text = "SCRIPT T\nfloat a;\n" + "\n".join(lines) + "\nstate = a;\n"
    made = []
    real = P._parser().parse_interactive

    def counting(*a, **kw):
        made.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(P._parser(), "parse_interactive", counting)
    f = read_scripts("t.dat", text=text)
    assert f.errors == 150 and len(made) == 1
    assert f.scripts[0].function(Fake()) == (2999, 0)
    assert all(w.message.endswith("unexpected ';'") for w in f.warnings)
    # (findings of one code beyond MAX_PER_CODE are counted on the last one kept)
    assert [w.location.line for w in f.warnings] == [3 + k for k in range(0, 3000, 20)][: len(f.warnings)]
    assert sum(w.count for w in f.warnings) == 150


def test_too_many_errors_drop_the_script():
    text = "SCRIPT T\n" + "a = ( ;\n" * (B.MAX_RECOVERIES + 5) + "state = 1;\n"
    f = read_scripts("t.dat", text=text)
    assert f.errors == B.MAX_RECOVERIES + 1 and sum(w.count for w in f.warnings) == B.MAX_RECOVERIES + 2
    assert f.scripts[0].function(Fake()) == (0, 0)


def test_caret_snippets_quote_the_right_line():
    text = "SCRIPT T\nfloat a;\n" + "a = 1;\n" * 50 + "  a = (1 + ;\n"
    f = read_scripts("t.dat", text=text)
    w = f.warnings[0]
    assert w.location.line == 53
    with pytest.raises(ScriptError) as e:
        read_scripts("t.dat", text=text, strict=True)
    assert "a = (1 + ;" in str(e.value) and "^" in str(e.value)
