"""The compiled TrackNodes scanner (formats/_nodes_kernel.py, tdb_scan.py, read_scanned_nodes in tdb.py)
against its reference, the walk with the regular expressions of grammars/tdb_nodes.lark
(scan_track_nodes, read_bulk_nodes): where the kernel takes a table, the same run end and
the same nodes and sections, pickled bit for bit; where it does not, the reference reads
it. Also its section rows' compiled fill (fill_rows) against _BulkColumns.add."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from helpers import DK24_ROUTE, needs_dk24, needs_kernels
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_tdb_bulk import _GOOD, TDB_FILES, VARIANTS

from tdbtools.errors import Diagnostics, TdbToolsError
from tdbtools.formats import tdb as tdb_mod
from tdbtools.formats import tdb_bulk_nodes as nodes_mod
from tdbtools.formats import tdb_scan
from tdbtools.formats.tdb import parse_tdb
from tdbtools.stf import parser as stf_parser
from tdbtools.stf import prescan
from tdbtools.stf.source import Source

pytestmark = [needs_kernels, pytest.mark.filterwarnings("error")]


@pytest.fixture(autouse=True)
def _numba():
    pytest.importorskip("numba", reason="the compiled scanner needs numba")


def _table(doc):
    db = doc.find("TrackDB")
    return None if db is None else db.find("TrackNodes")


def _both(source: Source, monkeypatch):
    """(the bulk read through the kernel's scan or None, the reference's, whether the
    kernel took the table) for one source, numbers read compiled either way."""
    monkeypatch.setattr(nodes_mod, "NUMBERS_COMPILED_MIN_CHARS", 0)
    doc = stf_parser.parse_source(source, bulk=True)
    table = _table(doc)
    if table is None or table.raw_span() is None:
        return None, None, False
    taken = isinstance(table.hint, tdb_scan.NodeScan)
    got = nodes_mod.read_bulk_nodes(table)  # (takes the scan: the block forgets it)
    assert table.hint is None
    ref_doc = stf_parser.parse_source(source, bulk=True)
    ref_table = _table(ref_doc)
    ref_table.take_hint()
    want = nodes_mod.read_bulk_nodes(ref_table)
    return got, want, taken


def _assert_same(got, want) -> None:
    assert (got is None) == (want is None)
    if got is not None:
        assert got[0] == want[0]
        assert pickle.dumps(got) == pickle.dumps(want)
        for name in tdb_mod.SECTION_FIELDS + ("node",):
            a, b = getattr(got[1], name), getattr(want[1], name)
            assert a.dtype == b.dtype
            assert a.tolist() == b.tolist() if a.dtype == object else a.tobytes() == b.tobytes()


def _reference_run_end(text: str, pos: int, monkeypatch) -> int | None:
    with monkeypatch.context() as m:
        m.setattr(nodes_mod, "NUMBERS_COMPILED_MIN_CHARS", 1 << 60)
        got = nodes_mod._table_run_end(text, pos)
    assert got is None or isinstance(got, int)
    return got


def _run_ends(text: str, monkeypatch) -> tuple:
    """(the kernel's run end and whether it walked, the reference's) of the first
    TrackNodes table of ``text``, as the lexer's hint asks for them."""
    blank = prescan._blank_first_line(text)
    m = stf_parser._TABLE_OPEN.match(blank, blank.find("TrackNodes") + 10)
    if m is None:  # (a table the hint never looks at)
        return None, False, None
    pos = m.end()
    monkeypatch.setattr(nodes_mod, "NUMBERS_COMPILED_MIN_CHARS", 0)
    got = nodes_mod._table_run_end(blank, pos)
    walked = isinstance(got, tuple)
    end = got[0] if walked else got
    return end, walked, _reference_run_end(blank, pos, monkeypatch)


#: Variants the kernel must take (the others it may take or hand back).
TAKEN = {"good", "one_line_node", "tab_separated", "section_count", "section_word", "section_nan"}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_bulk_variant_same_as_the_regex_walk(name, monkeypatch):
    """Each node and defect variant of the bulk reader's tests: the kernel's run end is
    the reference's, and its nodes and sections are (or it hands the table back)."""
    old, new = VARIANTS[name]
    text = _GOOD.replace(old, new, 1) if old else _GOOD
    end, walked, ref_end = _run_ends(text, monkeypatch)
    if walked:
        assert end == ref_end
    got, want, taken = _both(Source("<v>", text, "str"), monkeypatch)
    _assert_same(got, want)
    if name in TAKEN:
        assert walked and taken


@pytest.mark.parametrize("path", TDB_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_same_as_the_regex_walk(path, monkeypatch):
    """The fixtures (UTF-16LE with a BOM and CRLF among them) read through the scan."""
    from tdbtools.stf.source import read_source

    try:
        src = read_source(path)
        got, want, _taken = _both(src, monkeypatch)
    except TdbToolsError:  # (a defective fixture: the parse fails either way)
        return
    _assert_same(got, want)


@needs_dk24
@pytest.mark.parametrize("name", ["DK24.tdb", "DK24.rdb"])
def test_dk24_through_the_scan_pickled_bit_for_bit(name, monkeypatch):
    """DK24 read with the compiled scanner (threshold 0): the whole model pickled bit for
    bit as the reference's (regex walk, numpy's numbers), in buffers of any size."""
    path = DK24_ROUTE / name
    reference = tdb_mod.read_tdb(path)
    monkeypatch.setattr(nodes_mod, "NUMBERS_COMPILED_MIN_CHARS", 0)
    for chunk in (tdb_scan.CHUNK, 997, 64):
        monkeypatch.setattr(tdb_scan, "CHUNK", chunk)
        doc = parse_tdb(path, Diagnostics())
        assert isinstance(_table(doc).hint, tdb_scan.NodeScan)  # (the kernel took it)
        model = tdb_mod.tdb_from_document(doc, Diagnostics())
        assert pickle.dumps(model) == pickle.dumps(reference)


def test_the_hint_goes_with_its_block_once():
    """The scan is given to the block kept raw from the run it walked, and taken once."""
    src = Source("<s>", _GOOD, "str")
    tdb_mod_threshold = nodes_mod.NUMBERS_COMPILED_MIN_CHARS
    try:
        nodes_mod.NUMBERS_COMPILED_MIN_CHARS = 0
        table = _table(stf_parser.parse_source(src, bulk=True))
    finally:
        nodes_mod.NUMBERS_COMPILED_MIN_CHARS = tdb_mod_threshold
    scan = table.hint
    assert isinstance(scan, tdb_scan.NodeScan)
    assert scan.kinds.tolist() == [2, 0, 1, 0]
    assert scan.refs.tolist() == [0, 1] and scan.vrefs.tolist() == [2, 2]
    assert scan.vpins.tolist() == [[1, 1, 3, 1], [3, 1, 3, 2]]
    assert scan.oints[:, :6].tolist() == [[1, 2, 3, 0, 1, 2], [1, 2, 4, 0, 1, 2]]
    assert scan.oints[:, 6:].tolist() == [[2, 1, 0, 0, 0, 0], [2, 0, 4, 1, 4, 0]]
    assert scan.oflts.tolist() == [[10.5, 0, -20.25, 0, 3.1, 0], [13, 0, -30, 0, 3.2, 0]]
    a, b = scan.vspan[1]
    assert _GOOD[a:b] == " 1 5 6 1 2 9 0 1 00 1 2 13 0 -30 0 0 0 "
    assert [_GOOD[a:b] for a, b in scan.ospan] == [" 0 ", " 0 71 0 "]
    assert table.take_hint() is scan and table.take_hint() is None
    # A block that is no raw run of the hint's (split already) has none.
    table2 = _table(stf_parser.parse_source(src, bulk=True))
    assert table2.hint is None  # (threshold back: the regex walk, no payload)


# -- random tables: the kernel takes what it reads exactly, the reference the rest ------

_WS_ALL = st.text(alphabet="".join(chr(c) for c in range(33)), min_size=1, max_size=3)
_WS_PLAIN = st.text(alphabet=" \t\r\n", min_size=1, max_size=3)
_U_OK = st.one_of(st.integers(0, 99), st.integers(0, 999_999_999)).map(str)
_U_ANY = st.one_of(_U_OK, st.just("1234567890"), st.just("0099"))
_F_OK = st.one_of(
    # on the kernel's fast path, and off it (read by Python's float(), as the reference)
    st.sampled_from(["0", "-0", "1.5", "599.4438", "-5e-3", "1e22", ".5", "5.", "+2", "1E+3", "0e999"]),
    st.sampled_from(["4.163337e-18", "1e23", "12345678901234567", "1_0", "1e-320"]),
    st.integers(-(10**15) + 1, 10**15 - 1).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
_F_ANY = st.one_of(
    _F_OK, st.sampled_from(["nan", "inf", "1e", "0x10", "--1", "1.2.3", "1e99999", "-Infinity"])
)


@st.composite
def _node(draw, index: int, clean: bool, ws_chars):
    u = _U_OK if clean else _U_ANY
    f = _F_OK if clean else _F_ANY
    _WS = ws_chars
    _WS0 = st.one_of(st.just(""), ws_chars)

    def pins(outs: int) -> str:
        one = "".join(
            f"TrPin{draw(_WS0)}({draw(_WS0)}{draw(u)}{draw(_WS)}{draw(u)}{draw(_WS0)}){draw(_WS0)}"
            for _ in range(1 + outs)
        )
        return f"TrPins{draw(_WS0)}({draw(_WS0)}1{draw(_WS)}{outs}{draw(_WS)}{one}){draw(_WS0)})"

    kind = draw(st.sampled_from(["vector", "junction", "end"]))
    head = f"{draw(_WS)}TrackNode{draw(_WS0)}({draw(_WS0)}{index}{draw(_WS)}"
    if kind == "vector":
        n = draw(st.integers(0, 2))
        nums = [draw(st.sampled_from(["1", "0", "00", "2", "-3", "1e-05", "0.25"])) for _ in range(16 * n)]
        sections = draw(_WS).join([str(n), *nums])
        refs = ""
        if draw(st.booleans()):
            k = draw(st.integers(0, 3))
            items = "".join(
                f"{draw(_WS)}TrItemRef{draw(_WS0)}({draw(_WS0)}{draw(u)}{draw(_WS0)})" for _ in range(k)
            )
            count = str(k) if clean else draw(st.sampled_from([str(k), str(k + 1)]))
            refs = f"TrItemRefs{draw(_WS0)}({draw(_WS0)}{count}{items}{draw(_WS0)}){draw(_WS0)}"
        body = (
            f"TrVectorNode{draw(_WS0)}({draw(_WS0)}TrVectorSections{draw(_WS0)}({draw(_WS0)}{sections}"
            f"{draw(_WS0)}){draw(_WS0)}{refs}){draw(_WS0)}{pins(1)}"
        )
    else:
        name, outs = ("TrJunctionNode", 2) if kind == "junction" else ("TrEndNode", 0)
        choices = ["0", "0 71 0", " 0 4294967295 1 "] + ([] if clean else ["0 x 0", "", "0 -1"])
        values = draw(st.sampled_from(choices))
        uid = "".join(draw(st.sampled_from(["", "-"])) + draw(u) + draw(_WS) for _ in range(6))
        uid += draw(_WS).join(draw(f) for _ in range(6))
        body = f"{name}{draw(_WS0)}({values}){draw(_WS0)}UiD{draw(_WS0)}({draw(_WS0)}{uid}{draw(_WS0)}){draw(_WS0)}"
        body += pins(outs)
    return head + body


@st.composite
def _tables(draw, clean: bool = False, ws_chars=_WS_ALL):
    n = draw(st.integers(1 if clean else 0, 5))
    nodes = "".join(draw(_node(i + 1, clean, ws_chars)) for i in range(n))
    _WS0 = st.one_of(st.just(""), ws_chars)
    text = f"SIMISA@@@@@@@@@@JINX0T0t______\n\nTrackDB (\n\tTrackNodes ( {n}{nodes}{draw(_WS0)})\n)\n"
    if not clean and draw(st.booleans()):  # one character changed, dropped or added in the table
        lo = text.index("TrackNodes") + 10
        at = draw(st.integers(lo, len(text) - 3))
        op = draw(st.sampled_from(["drop", "add", "swap", "repeat"]))
        ch = draw(st.sampled_from(list(' \t\n()"x09-.eTr')))
        if op == "repeat":  # a piece written twice (a pin, a value, a reference, ...)
            size = draw(st.integers(1, 24))
            text = text[:at] + text[at : at + size] + text[at:]
        elif op == "drop":
            text = text[:at] + text[at + 1 :]
        elif op == "add":
            text = text[:at] + ch + text[at:]
        else:
            text = text[:at] + ch + text[at + 1 :]
    return text


def _check(text: str, chunk: int, mp) -> tuple[bool, bool]:
    """Kernel against reference on ``text``: (whether the kernel walked the run, whether
    it gave the bulk reader the table)."""
    mp.setattr(tdb_scan, "CHUNK", chunk)
    end, walked, ref_end = _run_ends(text, mp)
    if walked:
        assert end == ref_end
    try:
        got, want, taken = _both(Source("<r>", text, "str"), mp)
    except TdbToolsError:  # a syntax error: the parse fails either way (the hint is no part of it)
        return walked, False
    _assert_same(got, want)
    return walked, taken


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_tables(), chunk=st.sampled_from([tdb_scan.CHUNK, 7, 50, 120]))
def test_random_tables_same_as_the_regex_walk(text, chunk):
    """Random tables (every white space character, 1..10-digit values, refs with wrong
    counts, UiD floats on and off the fast path, junction values without a shape, one
    character changed anywhere or a piece written twice), read in buffers of several sizes: where the kernel
    walks the table, the run end, nodes and sections are the reference's; else the
    reference reads it."""
    with pytest.MonkeyPatch.context() as mp:
        _check(text, chunk, mp)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_tables(clean=True), chunk=st.sampled_from([tdb_scan.CHUNK, 7, 120]))
def test_well_formed_random_tables_are_walked(text, chunk):
    """The kernel is no refusal of everything: well-formed nodes whose values it reads
    (any white space of STF, any value of up to nine digits, any float Python reads)
    are walked by it, with the reference's run end and model."""
    with pytest.MonkeyPatch.context() as mp:
        walked, _taken = _check(text, chunk, mp)
    assert walked


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_tables(clean=True, ws_chars=_WS_PLAIN), chunk=st.sampled_from([tdb_scan.CHUNK, 7, 120]))
def test_well_formed_random_tables_are_read_through_the_scan(text, chunk):
    """... and with the usual white space (the lexer then takes the hinted run: with
    other control characters it may cut its tokens elsewhere, kernel or not), the
    bulk reader gets its table from the kernel's scan."""
    with pytest.MonkeyPatch.context() as mp:
        walked, taken = _check(text, chunk, mp)
    assert walked and taken


# -- the section rows' compiled fill ----------------------------------------------------


_BAD_VALUES = [np.nan, np.inf, -np.inf, 0.5, 2.0**53 + 2, 3e6, 1e5 + 1, 7.0, 7.5, -0.0, 1e-300]


@settings(max_examples=200, deadline=None)
@given(
    counts=st.lists(st.integers(0, 3), min_size=1, max_size=5),
    bad=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(_BAD_VALUES)), max_size=2),
)
def test_fill_rows_is_bulk_columns_add(counts, bad):
    """fill_rows fills and refuses exactly as _BulkColumns.add, the numpy reference, on
    rows with a value of every kind either refuses (or keeps: -0.0, a tiny float)."""
    rng = np.random.default_rng(len(counts) * 7 + len(bad))
    spans, values, offsets = [], [], []
    for n in counts:
        rows = np.zeros((n, 16))
        rows[:, :7] = rng.integers(-1000, 1000, (n, 7))
        rows[:, 8:10] = rng.integers(-20000, 20000, (n, 2))
        rows[:, 10:13] = rng.uniform(-1024, 1024, (n, 3))
        rows[:, 13:] = rng.uniform(-3, 3, (n, 3))
        flat = rows.ravel()
        for where, v in bad:
            if flat.size:
                flat[where % flat.size] = v
        offsets.append(len(values))
        spans.append(flat)
        values.extend([float(n), *flat.tolist(), 99.0])  # (a number after: never read)
    vals = np.array(values)
    offs = np.array(offsets, dtype=np.int64)
    nrows = np.array(counts, dtype=np.int64)
    a = nodes_mod._BulkColumns(100_000)
    b = nodes_mod._BulkColumns(100_000)
    ok_a = a.add([s for s in spans])
    ok_b = b.add_compiled(vals, offs, nrows)
    assert ok_a == ok_b
    if ok_a:
        assert a.rows == b.rows == sum(counts)
        for ca, cb in zip(a.cols, b.cols):
            if ca is not None:
                assert ca[: a.rows].tobytes() == cb[: b.rows].tobytes()
