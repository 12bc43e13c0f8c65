"""The .tdb bulk reader's compiled number reader (formats/_numbers_kernel.py) against its
reference, numpy's ``np.fromstring(span, sep=" ")``: the same values bit for bit, the
same refusals, and the numbers outside Clinger's fast path handed back to numpy."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from helpers import DK24_ROUTE, needs_dk24, needs_kernels
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tdbtools import _compiled
from tdbtools.formats import tdb as tdb_mod
from tdbtools.formats import tdb_bulk_nodes as nodes_mod

pytestmark = [needs_kernels, pytest.mark.filterwarnings("error")]


@pytest.fixture(autouse=True)
def _numba():
    pytest.importorskip("numba", reason="the compiled reader needs numba")


def _both(text: str, spans: list[tuple[int, int]]):
    """(compiled, numpy) readings of ``spans``, warnings as errors (as the tests run:
    numpy's partial reads are then refused)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = nodes_mod.parse_number_spans(text, spans, compiled=True)
    want = [nodes_mod._fromstring(text[a:b]) for a, b in spans]
    return got, want


def _assert_same(got, want) -> None:
    assert [x is None for x in got] == [x is None for x in want]
    for g, w in zip(got, want):
        if w is not None:
            assert g.dtype == w.dtype == np.float64
            assert g.tobytes() == w.tobytes(), (g, w)  # (bit for bit: -0.0 is not 0.0)


def _spans_of(pieces: list[str], gap: str = ")x(") -> tuple[str, list[tuple[int, int]]]:
    text, spans = "", []
    for p in pieces:
        text += gap
        spans.append((len(text), len(text) + len(p)))
        text += p
    return text + gap, spans


def _handed_back(monkeypatch, pieces: list[str]) -> list[str]:
    """The spans of ``pieces`` that the compiled reader hands back to numpy."""
    calls: list[str] = []
    plain = nodes_mod._fromstring
    monkeypatch.setattr(nodes_mod, "_fromstring", lambda t: calls.append(t) or plain(t))
    text, spans = _spans_of(pieces)
    nodes_mod.parse_number_spans(text, spans, compiled=True)
    return calls


#: Route-file numbers the fast path reads, and everything around its edges.
FAST = [
    "0", "00", "-0", "+0", "-0.0", "0.000", "+3", "1", "-5642", "567.2473", "0.000490005",
    "-0.1632503", ".5", "-.5", "5.", "-5.", "1e5", "1E-5", "2.5e+22", "7e-22", "1e22", "1e-22",
    "1.5e21", "0.1e-21", "123456789012345", "-999999999999999", "0.123456789012345",
    "00000000000000000000012", "000.000000000000000000001", "1e0000", "0e9999", "-0e-9999",
    "100000000000000e8", "12345.6789e-10", "450359962737049", "1.0000", "9007199254740.99",
]  # fmt: skip
#: Numbers past the fast path's bounds (more than 15 significant digits, an exponent
#: past 10**±22 after the point's digits), which numpy reads; the 16-digit ones are
#: wrong if read as one integer (rounded) then divided (rounded again).
SLOW = [
    "1234567890123456", "4503599627370497", "0.1234567890123456", "99999999999999999999", "9007199254740993",
    "0.9139962084340797", "0.9513282814504773", "994.8187476389095", "969111452580723.9",
    "1e23", "3e23", "501461895223897e23", "812381323017540e23", "28647527737060e-23", "4e-23",
    "4.163337e-18", "1.00000000000000000", "1e300", "-1.5e-300", "4.9e-324", "2.2250738585072014e-308",
    "1.7976931348623157e308", "1e309", "1e-400", "1e00023", "1e99999", "123456789012345e-23",
]  # fmt: skip
#: Tokens numpy refuses or reads partly (the reader must refuse them alike).
JUNK = [
    "nan", "inf", "-inf", "NaN", "infinity", "1e", "1e+", "1e-", ".", "-", "+", "+-1", "--1",
    "1-2", "1+2", "1,5", "1.2.3", "12abc", "0x10", "1_000", "é", "\u20ac5", "5\u00a0", "1e5.5",
    "e5", ".e5", "1..2", "(", ")", "\x00", "1\x01", "1d5", "٣",
]  # fmt: skip
SPACES = [" ", "  ", "\t", "\r\n", "\n", "\x0b", "\x0c", "\r"]


@pytest.mark.parametrize("token", FAST + SLOW + JUNK)
def test_every_edge_token_alone_and_in_company(token):
    pieces = [token, f" {token} ", f"1 {token}", f"{token}\t2.5", f"-7 {token} 0.25\r\n"]
    _assert_same(*_both(*_spans_of(pieces)))


def test_the_fast_path_reads_the_route_numbers_and_hands_back_the_rest(monkeypatch):
    """Every FAST token is read by the kernel (numpy never sees it); every SLOW and JUNK
    token is handed back: a wider digit or exponent bound is a wrong value somewhere."""
    assert _handed_back(monkeypatch, FAST) == []
    # (each group on its own: a character outside Latin-1 sends a whole call to numpy)
    for group in (SLOW, [t for t in JUNK if t.isascii()] + [" ", ""]):
        monkeypatch.undo()
        assert _handed_back(monkeypatch, group) == group
        monkeypatch.undo()
        assert _handed_back(monkeypatch, [x for t in group for x in (t, "1.5")]) == group


def test_sixteen_digits_or_an_exponent_past_22_would_read_wrong():
    """Why the bounds are where they are (a mutant's widened bound reads these wrong):
    one integer rounded, then scaled and rounded again, is not the nearest double."""
    assert float(9139962084340797) / 1e16 != float("0.9139962084340797")
    assert 501461895223897 * 1e23 != float("501461895223897e23")
    assert 28647527737060 / 1e23 != float("28647527737060e-23")


def test_spans_with_whitespace_of_every_kind_and_empty_spans():
    pieces = ["", " ", "\n\t", "1", " 1 ", "1\x0b2\x0c3\r4", "\r\n\t 5 \r\n", "1 2  3   4", "-0 +0 0"]
    got, want = _both(*_spans_of(pieces))
    _assert_same(got, want)
    # (numpy reads a span of white space alone oddly; the kernel hands such spans back)
    assert [len(x) for x in got[3:]] == [1, 1, 4, 1, 4, 3]


def test_text_outside_latin_1_goes_to_numpy_whole():
    text, spans = _spans_of(["1 2", "3.5", "\u20ac", "-0"])
    _assert_same(*_both(text, spans))
    text, spans = _spans_of(["1 2", "3.5", "-0"], gap=")\u20ac(")  # (only between the spans)
    _assert_same(*_both(text, spans))


def test_no_spans_and_no_compiled_flag():
    assert nodes_mod.parse_number_spans("abc", [], compiled=True) == []
    text, spans = _spans_of(["1 2", "x"])
    _assert_same(
        nodes_mod.parse_number_spans(text, spans), [nodes_mod._fromstring(text[a:b]) for a, b in spans]
    )


_DECIMAL = st.builds(
    lambda sign, lead, digits, point, exp: (
        sign + lead + (digits[:point] + "." + digits[point:] if point is not None else digits) + exp
    ),
    st.sampled_from(["", "-", "+"]),
    st.sampled_from(["", "0", "000"]),
    st.text("0123456789", min_size=1, max_size=22),
    st.one_of(st.none(), st.integers(0, 22)),
    st.one_of(
        st.just(""),
        st.builds(
            lambda e, s, n: f"{e}{s}{n}",
            st.sampled_from("eE"),
            st.sampled_from(["", "+", "-"]),
            st.integers(0, 40),
        ),
        st.builds(lambda n: f"e{n:+05d}", st.integers(-330, 330)),
    ),
)
_FLOAT = st.floats(allow_nan=True, allow_infinity=True).flatmap(
    lambda x: st.sampled_from([repr(x), f"{x:.7g}", f"{x:.15g}", f"{x:.17g}", f"{x:e}", f"{x:.3f}"])
)
_TOKEN = st.one_of(
    _DECIMAL, _FLOAT, st.integers(-(10**20), 10**20).map(str), st.sampled_from(FAST + SLOW + JUNK)
)
_SPAN = st.builds(
    lambda words, seps, lead: lead + "".join(w + s for w, s in zip(words, seps)),
    st.lists(_TOKEN, max_size=12),
    st.lists(st.sampled_from(SPACES + [""]), min_size=12, max_size=12),
    st.sampled_from(["", " ", "\n\t"]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_SPAN, min_size=1, max_size=8))
def test_random_spans_read_as_numpy_reads_them(pieces):
    _assert_same(*_both(*_spans_of(pieces)))


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 10**15 - 1),
    st.integers(0, 15),
    st.integers(-22, 22),
    st.booleans(),
)
def test_fast_path_numbers_are_correctly_rounded(m, point, exp, neg):
    """Numbers inside the fast path: bit for bit numpy's (and Python's) reading."""
    digits = str(m).rjust(point + 1, "0")
    token = (
        ("-" if neg else "") + digits[: len(digits) - point] + "." + digits[len(digits) - point :] + f"e{exp}"
    )
    got, want = _both(*_spans_of([token]))
    _assert_same(got, want)
    assert got[0].tobytes() == np.array([float(token)]).tobytes()


def test_the_switch_and_the_threshold(monkeypatch):
    """Small tables never import numba; TDBTOOLS_PURE_PYTHON turns the reader off."""
    big = nodes_mod.NUMBERS_COMPILED_MIN_CHARS
    monkeypatch.delenv(_compiled.PURE_PYTHON_ENV, raising=False)
    assert nodes_mod.numbers_compiled(big)
    assert not nodes_mod.numbers_compiled(big - 1)
    monkeypatch.setenv(_compiled.PURE_PYTHON_ENV, "1")
    assert not nodes_mod.numbers_compiled(big)


def test_a_small_route_does_not_import_numba(tmp_path):
    """The sample route's load runs numpy's reader alone: numba is never imported."""
    import subprocess
    import sys

    from helpers import REPO, SAMPLE_ROUTE

    code = (
        "import sys; from tdbtools.formats import load_route; "
        f"load_route({str(SAMPLE_ROUTE)!r}, cache=False); print('numba' in sys.modules)"
    )
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "TDBTOOLS_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"


@needs_dk24
def test_dk24_read_compiled_is_the_same_model(monkeypatch):
    """DK24.tdb with the threshold at 0: the same model (pickled bit for bit) as numpy's
    reader, and numpy reads only the spans holding a number past the fast path (DK24 has
    one vector node with 4.163337e-18)."""
    path = DK24_ROUTE / "DK24.tdb"
    reference = tdb_mod.read_tdb(path)
    calls: list[str] = []
    plain = nodes_mod._fromstring
    monkeypatch.setattr(nodes_mod, "_fromstring", lambda t: calls.append(t) or plain(t))
    monkeypatch.setattr(nodes_mod, "NUMBERS_COMPILED_MIN_CHARS", 0)
    model = tdb_mod.read_tdb(path)
    assert model == reference
    assert pickle.dumps(model) == pickle.dumps(reference)
    for name in tdb_mod.SECTION_FIELDS:
        a, b = getattr(model.sections, name), getattr(reference.sections, name)
        assert a.dtype == b.dtype
        assert a.tolist() == b.tolist() if a.dtype == object else a.tobytes() == b.tobytes()
    vector = sum(1 for n in model.nodes if getattr(n, "section_count", 0))
    assert vector > 1000
    assert len(calls) == 1 and "4.163337e-18" in calls[0]


@needs_dk24
@pytest.mark.parametrize("slice_nodes", [1, 7, 64])
def test_dk24_read_compiled_in_small_slices_is_the_same_model(monkeypatch, slice_nodes):
    """DK24.tdb read compiled a few vector nodes at a time (many slices, nearly all of
    them fast-path numbers only, one with a span handed back to numpy; the junction and
    end nodes' UiDs made per slice): the same model, pickled bit for bit, as numpy's."""
    path = DK24_ROUTE / "DK24.tdb"
    reference = tdb_mod.read_tdb(path)
    monkeypatch.setattr(nodes_mod, "NUMBERS_COMPILED_MIN_CHARS", 0)
    monkeypatch.setattr(nodes_mod, "_BULK_SLICE", slice_nodes)
    model = tdb_mod.read_tdb(path)
    assert pickle.dumps(model) == pickle.dumps(reference)
    for name in tdb_mod.SECTION_FIELDS:
        a, b = getattr(model.sections, name), getattr(reference.sections, name)
        assert a.tolist() == b.tolist() if a.dtype == object else a.tobytes() == b.tobytes()
