"""Bad input, fuzzing and safety across every reader and command (issue 6).

* Mutation fuzzing: the fixed-seed part of ``benchmarks/fuzz.py`` (which runs thousands
  of cases): files of the sample route and of DK24 (skipped without it) are mutated and
  read by their reader in strict and lenient mode; only tdbtools errors may escape, no
  read may take 2 s, lenient mode goes on where it can, and what reads without error
  survives the writer. Hypothesis mutates the trees of the sample files and builds
  random trees for every typed reader.
* Resource bounds: counts never allocate, 100,000 nested blocks recurse nowhere,
  inflation is bounded, includes stay in the install root and cycles are caught, a
  lenient read of a big broken file stays linear.
* Links that point nowhere (pins, item references, path nodes, consist stock) are
  reported by the traveller, path resolution and the audit, never followed.
* The command line: exit codes, messages on stderr, no traceback without --debug,
  outputs written atomically even on an error or Ctrl-C.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import shutil
import sys
import time
import tracemalloc
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import (
    CPU_SLACK,
    DK24_ROUTE,
    REPO,
    SAMPLE_INSTALL,
    SAMPLE_ROUTE,
    CpuTimer,
    force_full_grammar,
    needs_dk24,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tdbtools.cli import main as cli_main
from tdbtools.errors import (
    DecodeError,
    Diagnostics,
    FormatError,
    IncludeError,
    RouteError,
    StfSyntaxError,
    TdbToolsError,
)
from tdbtools.formats import load_route, read_consist, read_pat, read_tdb, resolve_stock
from tdbtools.formats.consist import StandInWarning, consist_from_document
from tdbtools.formats.pat import pat_from_document
from tdbtools.formats.route import _section_lengths
from tdbtools.formats.stock import stock_from_document
from tdbtools.formats.tdb import TrackDB, TrPin, VectorNode, tdb_from_document
from tdbtools.formats.trk import trk_from_document
from tdbtools.formats.tsection import _Builder
from tdbtools.stf import Block, dumps_deep, parse_file, parse_text, prescan
from tdbtools.stf import parser as stf_parser
from tdbtools.stf import source as stf_source
from tdbtools.stf.source import Source
from tdbtools.stf.tree import Document, QStr
from tdbtools.stf.writer import format_stf, write_text_atomic
from tdbtools.track import Traveller, audit_paths, audit_route, resolve_path

SIG = "SIMISA@@@@@@@@@@JINX0T0t______"


def _load_fuzz():
    spec = importlib.util.spec_from_file_location("_tdbtools_fuzz", REPO / "benchmarks" / "fuzz.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is made
    spec.loader.exec_module(mod)
    return mod


fuzz = _load_fuzz()


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))


def _cli(*args: str):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()
    return runner.invoke(cli_main, list(args))


# ---------------------------------------------------------------------------------------
# mutation fuzzing (the fixed-seed part of benchmarks/fuzz.py)
# ---------------------------------------------------------------------------------------

FUZZ_SEED = 6
CHUNK = 50
SAMPLE_CHUNKS = 6  # 300 cases on the sample install
DK24_CHUNKS = 4  # 200 cases on DK24's small files, the DK24TEST route and windows of big files


@pytest.fixture(scope="module")
def sample_fuzzer(tmp_path_factory):
    return fuzz.Fuzzer(tmp_path_factory.mktemp("fuzz-sample"), installs=("sample",))


@pytest.fixture(scope="module")
def dk24_fuzzer(tmp_path_factory):
    return fuzz.Fuzzer(tmp_path_factory.mktemp("fuzz-dk24"), installs=("dk24",), dk24_files=60)


def _run_chunk(fuzzer, chunk: int, seed: int) -> list:
    cases = [fuzzer.run(fuzzer.make(i, seed)) for i in range(chunk * CHUNK, (chunk + 1) * CHUNK)]
    failed = [c for c in cases if c.failed]
    assert not failed, "\n\n".join(c.describe() for c in failed)
    slowest = max(cases, key=lambda c: c.seconds)
    assert slowest.seconds < fuzz.SLOW_S, slowest.describe()
    return cases


@pytest.mark.parametrize("chunk", range(SAMPLE_CHUNKS))
def test_fuzz_sample_files(sample_fuzzer, chunk):
    _run_chunk(sample_fuzzer, chunk, FUZZ_SEED)


@needs_dk24
@pytest.mark.dk24
@pytest.mark.parametrize("chunk", range(DK24_CHUNKS))
def test_fuzz_dk24_files(dk24_fuzzer, chunk):
    _run_chunk(dk24_fuzzer, chunk, FUZZ_SEED)


def test_fuzz_cases_cover_every_reader_and_mutation(sample_fuzzer):
    """The fixed-seed set is not degenerate: every reader, every mutation, both modes
    reading files, and each kind of error, occur."""
    cases = [sample_fuzzer.make(i, FUZZ_SEED) for i in range(SAMPLE_CHUNKS * CHUNK)]
    assert {c.reader for c in cases} == set(fuzz.READERS)
    used = {r.split()[0] for c in cases for r in c.recipe}
    ops = {f.__name__[2:] for f, _ in fuzz.TEXT_OPS + fuzz.BYTE_OPS}
    assert ops - used == set()
    assert any(r.startswith("encoded mixed") for c in cases for r in c.recipe)
    assert any(r.startswith("encoded compressed") for c in cases for r in c.recipe)
    outcomes = {r.outcome for c in cases[:120] for r in sample_fuzzer.run(c).runs}
    assert {"ok", "FormatError", "StfSyntaxError", "DecodeError", "ScenarioError"} <= outcomes, outcomes


def test_fuzz_harness_catches_foreign_exceptions_and_hangs(monkeypatch):
    """The harness itself: a bare Python exception, a warning and a slow read fail."""
    run, _ = fuzz.timed("strict", lambda: [][1])
    assert run.failed and run.outcome == "CRASH IndexError"
    run, _ = fuzz.timed("strict", lambda: (_ for _ in ()).throw(RuntimeWarning("overflow")))
    assert run.failed and run.outcome == "CRASH RuntimeWarning"
    run, _ = fuzz.timed("strict", lambda: (_ for _ in ()).throw(FormatError("bad", None)))
    assert not run.failed and run.outcome == "FormatError"
    monkeypatch.setattr(fuzz, "SLOW_S", 0.01)

    def busy() -> None:  # SLOW is CPU time (the machine may be shared)
        t = time.process_time()
        while time.process_time() - t < 0.05:
            pass

    run, _ = fuzz.timed("strict", busy)
    assert run.failed and run.outcome == "SLOW"
    run, _ = fuzz.timed("strict", lambda: time.sleep(0.05))  # waiting is not work: CPU time counts
    assert not run.failed and run.outcome == "ok"
    monkeypatch.setattr(fuzz, "HANG_S", 0.05)
    run, _ = fuzz.timed("strict", lambda: time.sleep(2))  # blocked: the wall-clock guard
    assert run.failed and run.outcome == "HANG" and "wall-clock" in run.detail

    def spin() -> None:  # busy: the CPU guard
        t = time.process_time()
        while time.process_time() - t < 2.0:
            pass

    monkeypatch.setattr(fuzz, "HANG_WALL_FACTOR", 10_000)  # only the CPU guard can fire
    run, _ = fuzz.timed("strict", spin)
    assert run.failed and run.outcome == "HANG" and "CPU" in run.detail


# ---------------------------------------------------------------------------------------
# hypothesis: mutated trees of the sample files, random trees, through every typed reader
# ---------------------------------------------------------------------------------------


def _sample_files() -> list[Path]:
    return sorted(p for p in SAMPLE_INSTALL.rglob("*") if p.is_file() and p.suffix.lower() != ".toml")


SAMPLE_FILES = _sample_files()
SAMPLE_DOCS = {p: parse_file(p).to_json() for p in SAMPLE_FILES}

_values = st.one_of(
    st.sampled_from(
        fuzz.NASTY_NUMBERS[:-1]
        + [
            "0",
            "1",
            "2",
            "-1",
            "00",
            "00000000",
            "4294967295",
            "x",
            "1.5",
            "80t",
            "-5631",
            "15116",
            "TrPin",
            "include",
        ]
    ),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6),
)
_names = st.sampled_from(
    [n for n in fuzz.BLOCK_NAMES if n not in ("include", "comment", "skip", "_x", "#")]
    + [
        "Serial",
        "UiD",
        "TrItemId",
        "TrItemRData",
        "SpeedpostTrItemData",
        "Name",
        "TrPathName",
        "MaxVelocity",
        "EngineData",
        "WagonData",
        "ORTSNumberAxles",
        "ORTSMaxTractiveForceCurves",
        "0",
        "1",
        "A",
    ]
)


def _build(node) -> Block:
    """A Block from a to_json() dict (or a ("name", [items]) spec)."""
    if isinstance(node, tuple):
        name, items = node
        return Block(name, [_build(i) if isinstance(i, tuple) else i for i in items])
    return Block(
        node["name"],
        [
            _build(i)
            if isinstance(i, dict) and "name" in i
            else QStr(i["quoted"])
            if isinstance(i, dict)
            else i
            for i in node["items"]
        ],
    )


def _blocks(root: Block) -> list[Block]:
    out, stack = [], [root]
    while stack:
        b = stack.pop()
        out.append(b)
        stack.extend(i for i in b.items if i.__class__ is Block)
    return out


_subtree = st.recursive(
    st.lists(_values, max_size=5),
    lambda ch: st.lists(st.one_of(_values, st.tuples(_names, ch)), max_size=4),
    max_leaves=12,
)


def _read_everything(path: Path, reader: str) -> list:
    """The reader in strict and lenient mode; the failures (run records) if any."""
    bad = []
    for mode in (True, False):
        run, _ = fuzz.timed(
            "strict" if mode else "lenient",
            lambda mode=mode: fuzz.READERS[reader](path, Diagnostics(strict=mode)),
        )
        if run.failed:
            bad.append(run)
        elif not mode and run.outcome != "ok" and run.outcome not in {c.__name__ for c in fuzz.LENIENT_FATAL}:
            bad.append(run)
    return bad


def _write_msts(path: Path, text: str) -> None:
    """The bytes write_text_atomic writes (UTF-16LE, BOM, CRLF), without its fsync: the
    hypothesis tests write thousands of throw-away files (the fsyncs took a third of
    their time)."""
    path.write_bytes(b"\xff\xfe" + text.replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-16-le"))


@pytest.fixture(scope="module")
def example_dir(tmp_path_factory):
    """One folder for every hypothesis example (each overwrites the files it reads): not
    hundreds of temporary folders, which every later file lookup would list."""
    return tmp_path_factory.mktemp("examples")


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_hypothesis_mutated_sample_trees(example_dir, data):
    """A sample file's tree with values, blocks and counts replaced: written by the
    project's writer, read back by the file's reader (strict and lenient) and by the
    generic parser (equal tree)."""
    src = data.draw(st.sampled_from(SAMPLE_FILES), label="file")
    root = _build(SAMPLE_DOCS[src])
    blocks = _blocks(root)
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        blk = data.draw(st.sampled_from(blocks))
        items = blk.items
        action = data.draw(st.sampled_from(["value", "delete", "duplicate", "subtree", "insert", "count"]))
        if action in ("value", "count") and items:
            i = 0 if action == "count" else data.draw(st.integers(0, len(items) - 1))
            if items[i].__class__ is not Block:
                items[i] = data.draw(_values)
        elif action == "delete" and items:
            del items[data.draw(st.integers(0, len(items) - 1))]
        elif action == "duplicate" and items:
            i = data.draw(st.integers(0, len(items) - 1))
            items.insert(i, items[i])
        elif action == "subtree":
            blk._items = [_build(i) if isinstance(i, tuple) else i for i in data.draw(_subtree)]
        else:
            items.insert(
                data.draw(st.integers(0, len(items))), _build((data.draw(_names), data.draw(_subtree)))
            )
    doc = Document(root.items, Source("<gen>", SIG + "\n", "str"))
    sig = parse_file(src).signature
    text = format_stf(doc, signature=sig)
    assert parse_text(text) == doc  # the writer round trip
    path = example_dir / src.name  # the same name: the readers pick the layout by it
    _write_msts(path, text)
    bad = _read_everything(path, fuzz.reader_for(src.name))
    assert not bad, [(r.step, r.outcome, r.detail) for r in bad] + [text[:2000]]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=st.lists(st.tuples(_names, _subtree), min_size=1, max_size=4))
def test_hypothesis_random_trees_through_every_reader(example_dir, spec):
    doc = Document([_build(s) for s in spec], Source("<gen>", SIG + "\n", "str"))
    text = format_stf(doc)
    assert parse_text(text) == doc
    bad = []
    for name, reader in (
        ("x.tdb", "tdb"),
        ("tsection.dat", "tsection"),
        ("x.trk", "trk"),
        ("x.pat", "pat"),
        ("x.con", "con"),
        ("x.eng", "stock"),
        ("x.wag", "stock"),
    ):
        path = example_dir / name
        _write_msts(path, text)
        bad += _read_everything(path, reader)
    assert not bad, [(r.step, r.outcome, r.detail) for r in bad] + [text[:2000]]


# ---------------------------------------------------------------------------------------
# typed round trips: a file read, written by format_stf, read again gives the same model
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("src", SAMPLE_FILES, ids=lambda p: p.relative_to(SAMPLE_INSTALL).as_posix())
def test_typed_round_trip_through_the_writer(tmp_path, src):
    kind = fuzz.reader_for(src.name)
    # Signal scripts are no STF: their generic tree goes through the writer.
    reader = fuzz.READERS["stf" if kind in fuzz.NO_ROUNDTRIP and kind not in fuzz.TOML_READERS else kind]
    model = reader(src, Diagnostics(strict=True))
    out = tmp_path / src.name
    write_text_atomic(out, format_stf(parse_file(src)))
    assert fuzz._same_model(model, reader(out, Diagnostics(strict=True)))


# ---------------------------------------------------------------------------------------
# counts never allocate; numbers out of range are reported
# ---------------------------------------------------------------------------------------

_NODES = (
    "TrackNodes ( 1 TrackNode ( 1 TrVectorNode ( TrVectorSections ( 1 1 2 -1 1 2 0 1 00 -1 1 0 0 0 0 0 0 ) ) "
    "TrPins ( 1 1 TrPin ( 0 1 ) TrPin ( 0 0 ) ) ) )"
)
HUGE_COUNTS = [
    ("tdb", "x.tdb", "TrackDB ( TrackNodes ( 999999999999 ) )", "out of range"),
    ("tdb", "x.tdb", "TrackDB ( TrackNodes ( 4294967295 ) )", "the count says 4294967295 nodes"),
    (
        "tdb",
        "x.tdb",
        "TrackDB ( " + _NODES.replace("TrVectorSections ( 1 ", "TrVectorSections ( 4000000000 ") + " )",
        "the count says 4000000000 sections",
    ),
    (
        "tdb",
        "x.tdb",
        "TrackDB ( " + _NODES.replace("TrPins ( 1 1", "TrPins ( 4294967295 4294967295") + " )",
        "the counts say 4294967295+4294967295 pins",
    ),
    (
        "tdb",
        "x.tdb",
        "TrackDB ( "
        + _NODES.replace(") TrPins", "TrItemRefs ( 4294967295 TrItemRef ( 0 ) ) ) TrPins")
        + " )",
        "the count says 4294967295 refs",
    ),
    ("tdb", "x.tdb", "TrackDB ( TrItemTable ( 4294967295 ) )", "the count says 4294967295 items"),
    (
        "tdb",
        "x.tdb",
        "TrackDB ( TrItemTable ( 1 SignalItem ( TrSignalDirs ( 4294967295 ) ) ) )",
        "TrSignalDirs: the count says 4294967295",
    ),
    (
        "tsection",
        "tsection.dat",
        "TrackShapes ( 1 TrackShape ( 1 NumPaths ( 1 ) SectionIdx ( 999999999 0 0 0 0 1 ) ) )",
        "the count says 999999999 sections",
    ),
    (
        "tsection",
        "tsection.dat",
        "TrackShapes ( 1 TrackShape ( 1 NumPaths ( 4294967295 ) SectionIdx ( 1 0 0 0 0 1 ) ) )",
        "NumPaths is 4294967295",
    ),
    (
        "tsection",
        "tsection.dat",
        "TrackSections ( 1 TrackSection ( SectionCurve ( 0 ) 1 60 0 ) ) "
        "SectionIdx ( 1 TrackPath ( 1 4000000000 1 ) )",
        "the count says 4000000000 sections",
    ),
    (
        "pat",
        "x.pat",
        "TrackPDPs ( TrackPDP ( 1 2 3 4 5 1 1 ) ) TrackPath ( TrPathName ( p ) "
        "TrPathNodes ( 4294967295 TrPathNode ( 0 4294967295 4294967295 0 ) ) )",
        "the count says 4294967295 nodes",
    ),
]


@pytest.mark.parametrize(
    "reader, name, body, message", HUGE_COUNTS, ids=[f"{c[0]}-{i}" for i, c in enumerate(HUGE_COUNTS)]
)
def test_huge_counts_never_allocate(tmp_path, reader, name, body, message):
    path = tmp_path / name
    path.write_text(SIG + "\n" + body + "\n", encoding="utf-8")
    read = fuzz.READERS[reader]
    tracemalloc.start()
    try:
        with pytest.raises(FormatError) as info:
            read(path, Diagnostics(strict=True))
        diags = Diagnostics(strict=False)
        read(path, diags)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert message in info.value.message, info.value.message
    assert any(message in f.message for f in diags.findings), [f.message for f in diags.findings]
    assert peak < 16 << 20, f"peak {peak / 1e6:.1f} MB: something was allocated by the count"


@pytest.mark.parametrize(
    "value, message",
    [
        ("nan", "found 'nan'"),
        ("-inf", "found '-inf'"),
        ("1e309", "found '1e309'"),
        ("99999999999999999999999999", "out of range"),
        ("4294967296", "out of range"),
        ("-1", "out of range"),
        ("1,5", "found"),
        ("0x10", "found"),
        ("", "expected 2 values (link, direction), found 1"),
    ],
)
def test_bad_numbers_in_a_pin_are_located_errors(tmp_path, value, message):
    body = _NODES.replace("TrPin ( 0 1 )", f"TrPin ( {value or ''} 1 )" if value else "TrPin ( 1 )")
    path = tmp_path / "x.tdb"
    path.write_text(f"{SIG}\nTrackDB ( {body} )\n", encoding="utf-8")
    with pytest.raises(FormatError) as info:
        read_tdb(path)
    assert message in info.value.message and info.value.line == 2, str(info.value)
    diags = Diagnostics(strict=False)
    db = read_tdb(path, diagnostics=diags)
    assert diags.findings and all(0 <= p.link <= 0xFFFFFFFF for p in db.nodes[1].pins)


def test_lenient_read_of_a_big_broken_block_stays_linear(tmp_path):
    """Thousands of defects in one block: each is located without rescanning the block
    or splitting the whole file (was quadratic: seconds for DK24.tdb)."""
    rows = " ".join(f"{i} 2 -1 1 2 0 1 00 -1 1 {i}.5 0 0 0 0.25 0" for i in range(4000))
    body = (
        f"TrackDB ( TrackNodes ( 1 TrackNode ( 1 TrVectorNode ( TrVectorSections ( 4000 1 2 3 4 5 6 7 8 {rows} ) ) "
        f"TrPins ( 1 1 TrPin ( 0 1 ) TrPin ( 0 0 ) ) ) ) )"
    )
    stray = " ".join(str(i) for i in range(20000))
    body2 = (
        f"TrackDB ( TrackNodes ( 1 TrackNode ( 1 TrEndNode ( 0 ) {stray} TrPins ( 1 0 TrPin ( 0 1 ) ) ) ) )"
    )
    for text in (body, body2):
        path = tmp_path / "big.tdb"
        path.write_text(f"{SIG}\n{text}\n", encoding="utf-8")
        with pytest.raises(FormatError):
            read_tdb(path)
        diags = Diagnostics(strict=False)
        with CpuTimer() as cpu:
            read_tdb(path, diagnostics=diags)
        assert sum(f.count for f in diags.findings) > 1000  # repeats are counted, not kept
        assert cpu.seconds < fuzz.SLOW_S, f"{cpu.seconds:.2f} CPU s for {len(diags.findings)} findings"


@needs_dk24
@pytest.mark.dk24
def test_lenient_read_of_dk24_with_shifted_sections(tmp_path):
    text = stf_source.read_source(DK24_ROUTE / "DK24.tdb").text
    big = max(re.finditer(r"TrVectorSections \( (\d+) ", text), key=lambda m: int(m.group(1)))
    path = tmp_path / "DK24.tdb"
    path.write_text(text[: big.end()] + "1 2 3 4 5 6 7 8 " + text[big.end() :], encoding="utf-8")
    diags = Diagnostics(strict=False)
    with CpuTimer() as cpu:
        read_tdb(path, diagnostics=diags)
    assert cpu.seconds < fuzz.SLOW_S and sum(f.count for f in diags.findings) > 1000


# ---------------------------------------------------------------------------------------
# deep nesting: no recursion in the parser, the typed readers, the writer or the CLI
# ---------------------------------------------------------------------------------------

# Twenty times the recursion limit: any recursive step (parser, reader, writer, JSON)
# would raise RecursionError long before this depth. (100,000 checked the same, 5x slower.)
DEEP = 20 * sys.getrecursionlimit()
_CHAIN = [
    "TrackDB",
    "TrackNodes",
    "TrackNode",
    "Wagon",
    "Coupling",
    "Spring",
    "Engine",
    "Train",
    "TrainCfg",
    "TrackPath",
    "TrPathNodes",
    "TrackSections",
    "TrackShapes",
    "TrackShape",
    "SectionIdx",
    "Tr_RouteFile",
]


def _deep(folder: Path, depth: int) -> Path:
    names = [_CHAIN[i % len(_CHAIN)] for i in range(depth)]
    text = SIG + "\n" + "".join(f"{n} ( 1 " for n in names) + '"s"' + " )" * depth + "\n"
    path = folder / "deep.dat"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def deep_file(tmp_path_factory):
    return _deep(tmp_path_factory.mktemp("deep"), DEEP)


def test_deep_nesting_in_every_typed_reader_and_the_writer(deep_file):
    doc = parse_file(deep_file)
    node, depth = doc, 0
    while node.blocks() and (nxt := node.find(_CHAIN[depth % len(_CHAIN)])) is not None:
        node, depth = nxt, depth + 1
    assert depth == DEEP
    readers = [
        tdb_from_document,
        trk_from_document,
        pat_from_document,
        consist_from_document,
        lambda d, g: stock_from_document(d, g, "engine"),
        lambda d, g: stock_from_document(d, g, "wagon"),
        lambda d, g: _Builder(g).add_global(d),
        lambda d, g: _Builder(g).add_local(d),
    ]
    for read in readers:
        for strict in (True, False):
            try:
                read(doc, Diagnostics(strict=strict))
            except TdbToolsError:
                assert strict
    text = format_stf(doc)
    assert len(text) < 100 * DEEP  # indentation stops growing: not ~10 GB
    assert parse_text(text) == doc
    tree = doc.to_json()
    assert json.loads(dumps_deep({"a": [1, {"b": None}]})) == {"a": [1, {"b": None}]}
    assert dumps_deep(tree).count("{") == DEEP + 2  # the root, the blocks, the quoted "s"


def test_deep_nesting_through_the_cli(tmp_path):
    # The command is a shell over parse_file, to_json and dumps_deep (checked DEEP
    # deep above); ten times the recursion limit shows that it adds no recursion.
    depth = 10 * sys.getrecursionlimit()
    r = _cli("parse", str(_deep(tmp_path, depth)), "--json")  # (the text output is format_stf, above)
    assert r.exit_code == 0, (r.exit_code, r.stderr[-500:])
    assert r.stdout.count("{") == depth + 2


@pytest.mark.parametrize("reader", ["tdb", "tsection", "trk", "pat", "con", "stock"])
def test_deep_unclosed_and_deep_valid_files_per_reader(tmp_path, reader):
    name = {"tsection": "tsection.dat", "stock": "x.eng"}.get(reader, f"x.{reader}")
    path = tmp_path / name
    path.write_text(SIG + "\n" + "A ( " * 10000 + "\n", encoding="utf-8")
    with pytest.raises(StfSyntaxError, match="10000 unclosed"):
        fuzz.READERS[reader](path, Diagnostics(strict=False))
    path.write_text(
        SIG + "\nWagon ( x Engine ( y " + "Coupling ( " * 10000 + " )" * 10000 + " ) )\n", encoding="utf-8"
    )
    assert not _read_everything(path, reader)


@pytest.mark.parametrize("run", ["x" * 40_000, "é" * 40_000, "A" * 200_000])
def test_long_words_parse_in_linear_time(run, monkeypatch):
    """Found by fuzzing: a long word before a block nested five deep made the fast
    grammar's regex backtrack quadratically (40 kB: 2.7 s); such text takes the full
    grammar, which gives the same tree."""
    text = f"{SIG}\ny {run} ( ( ( ( ( 1 ) ) ) ) ) B ( {run} C ( D ( E ( F ( G ( 2 ) ) ) ) ) )\n"
    with CpuTimer() as cpu:
        doc = parse_text(text)
    assert cpu.seconds < 0.5 * CPU_SLACK  # quadratic: 2.7 s at 40 kB
    full = force_full_grammar(monkeypatch)
    assert parse_text(text) == doc and full
    assert prescan.has_long_word("a " + "b" * prescan.LONG_WORD) and not prescan.has_long_word(
        ("b" * (prescan.LONG_WORD - 1) + " ") * 100
    )


def test_the_writer_quotes_what_would_change_the_tree():
    """Found by fuzzing: a word before an anonymous ( ... ) became its name; a lone "+"
    joined two strings; a block named by a Unicode space lost its name."""
    for text in ['A ( x"( 1 ) )', 'A ( "a\\n" + "b" )', 'A ( "x" + )', "A ( B\xa0( 1 ) )", "A ( \xa0( 1 ) )"]:
        doc = parse_text(f"{SIG}\n{text}\n")
        assert parse_text(format_stf(doc)) == doc, (text, format_stf(doc))
    doc = Document(
        [Block("A", ["x", Block("", ["1"]), "+", QStr("s"), "+", QStr("t")])], Source("<g>", SIG, "str")
    )
    assert parse_text(format_stf(doc)) == doc


# ---------------------------------------------------------------------------------------
# encodings and compression
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", None),
        (b"\xff\xfe", None),
        (
            b"\xff\xfe" + "SIMISA@@@@@@@@@@JINX0T0t______\nA ( 1 )\n".encode("utf-16-le")[:-1],
            "odd number of bytes",
        ),
        (
            b"\xff\xfe" + (SIG + "\nA ( \ud800 )\n").encode("utf-16-le", "surrogatepass"),
            "invalid UTF-16 text",
        ),
        (
            b"\xff\xfe" + (SIG + "\nA ( \udc00x )\n").encode("utf-16-le", "surrogatepass"),
            "invalid UTF-16 text",
        ),
        ((SIG + "\nA ( 1 )\n").encode() + "B ( 2 )".encode("utf-16-le"), "mixed encodings"),
        (b"\xef\xbb\xbf" + (SIG + "\nA ( caf\xe9 )\n").encode("cp1252"), None),
        (bytes(range(256)) * 4, "NUL character"),
        (b"SIMISA@F", "truncated compressed"),
        (b"SIMISA@F\xff\xff\xff\xff@@@@" + zlib.compress(b"JINX0T0t______\r\nA ( 1 )"), None),
        (
            b"SIMISA@F\x00\x00\x00\x00@@@@" + zlib.compress(b"JINX0T0t______\r\nA ( 1 )")[:-3],
            "truncated compressed",
        ),
        (b"SIMISA@F\x00\x00\x00\x00@@@@" + zlib.compress(b"JINX0T0t______\r\nA ( 1 )") + b"trailing", None),
        (b"SIMISA@F\x00\x00\x00\x00@@@@" + zlib.compress(b"JINX0T0b______\r\n\x00\x01"), "binary"),
        (
            b"SIMISA@F\x00\x00\x00\x00@@@@"
            + zlib.compress(b"\xff\xfe" + "JINX0T0t______\r\nA ( 1 )".encode("utf-16-le")[:-1]),
            "odd number of bytes",
        ),
    ],
)
def test_encodings_and_containers(tmp_path, data, message):
    path = tmp_path / "x.dat"
    path.write_bytes(data)
    for reader in ("stf", "tdb", "pat", "stock"):
        if message is None:
            try:
                fuzz.READERS[reader](path, Diagnostics(strict=False))
            except TdbToolsError as exc:
                assert reader != "stf", exc
        else:
            with pytest.raises(DecodeError, match=message):
                fuzz.READERS[reader](path, Diagnostics(strict=False))


def test_inflation_is_bounded(tmp_path, monkeypatch):
    """A compressed file that inflates past the limit is refused without inflating it
    all: memory stays near the limit, whatever size the header claims."""
    monkeypatch.setattr(stf_source, "MAX_INFLATED_BYTES", 1 << 20)
    bomb = zlib.compress(b"JINX0T0t______\r\n" + b" " * (64 << 20), 9)  # 64 MB of spaces in ~64 kB
    path = tmp_path / "bomb.dat"
    for claimed in (0, 100, 0xFFFFFFFF):
        path.write_bytes(b"SIMISA@F" + claimed.to_bytes(4, "little") + b"@@@@" + bomb)
        tracemalloc.start()
        try:
            with pytest.raises(DecodeError, match="inflates to more than"):
                parse_file(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 8 << 20, f"peak {peak / 1e6:.1f} MB"
    assert 0 < stf_source.MAX_INFLATED_BYTES and stf_source.MAX_FILE_BYTES <= 2 << 30


# ---------------------------------------------------------------------------------------
# include: confined to the install root, cycles and depth caught, no surprises
# ---------------------------------------------------------------------------------------


def _install(tmp_path: Path) -> Path:
    root = tmp_path / "install"
    (root / "ROUTES" / "R").mkdir(parents=True)
    (root / "GLOBAL").mkdir()
    return root


def _write(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{SIG}\n{body}\n", encoding="utf-8")
    return path


def _include_error(path: Path, match: str) -> IncludeError:
    with pytest.raises(IncludeError, match=match) as info:
        parse_file(path)
    diags = Diagnostics(strict=False)
    parse_file(path, diagnostics=diags)  # lenient: goes on without it
    assert any(re.search(match, f.message) for f in diags.findings)
    return info.value


def test_include_cycles_of_every_length(tmp_path):
    r = _install(tmp_path) / "ROUTES" / "R"
    _write(r / "self.dat", "A ( 1 ) include ( self.dat )")
    _include_error(r / "self.dat", "include cycle")
    _write(r / "same.dat", "A ( 1 ) include ( [[samename]] )")
    _include_error(r / "same.dat", "include cycle")
    _write(r / "a.dat", "include ( b.inc )")
    _write(r / "b.inc", "include ( SUB/c.inc )")
    _write(r / "SUB" / "c.inc", "include ( ../A.DAT )")  # other case: the same file
    err = _include_error(r / "a.dat", "include cycle")
    assert err.path.endswith("c.inc") and err.line == 2


def test_include_depth_and_count_are_limited(tmp_path):
    r = _install(tmp_path) / "ROUTES" / "R"
    for i in range(stf_parser.MAX_INCLUDE_DEPTH + 3):
        _write(r / f"d{i}.inc", f"L{i} ( 1 ) include ( d{i + 1}.inc )")
    _include_error(r / "d0.inc", "nested deeper than")
    _write(r / "one.inc", "X ( 1 )")
    path = _write(r / "many.dat", "include ( one.inc )\n" * 20000)
    with CpuTimer() as cpu:
        _include_error(path, "more than 1000 includes")
    assert cpu.seconds < 2 * fuzz.SLOW_S
    diags = Diagnostics(strict=False)
    doc = parse_file(path, diagnostics=diags)
    assert len(list(doc.blocks("X"))) == stf_parser.MAX_INCLUDES


def test_include_cannot_leave_the_install_root(tmp_path):
    root = _install(tmp_path)
    (tmp_path / "secret.inc").write_text(f"{SIG}\nSecret ( 1 )\n")
    r = root / "ROUTES" / "R"
    for target in (
        "../../../secret.inc",
        "..\\\\..\\\\..\\\\secret.inc",
        str(tmp_path / "secret.inc"),
        "../../GLOBAL/../../secret.inc",
    ):
        _include_error(_write(r / "esc.dat", f'include ( "{target}" )'), "outside the install root")
    (r / "link.inc").symlink_to(tmp_path / "secret.inc")  # a link out of the root
    _include_error(_write(r / "sym.dat", "include ( link.inc )"), "outside the install root")
    (root / "GLOBAL" / "g.inc").write_text(f"{SIG}\nG ( 1 )\n")
    doc = parse_file(_write(r / "ok.dat", 'include ( "../../GLOBAL/g.inc" )'))
    assert doc.find("G").values == ["1"]


def test_include_of_odd_targets_is_an_include_error(tmp_path):
    r = _install(tmp_path) / "ROUTES" / "R"
    (r / "folder.inc").mkdir()
    _include_error(_write(r / "dir.dat", "include ( folder.inc )"), "not found")
    _include_error(_write(r / "long.dat", f"include ( {'x' * 5000}.inc )"), "not found")
    _include_error(_write(r / "deep.dat", f"include ( {'a/' * 3000}x.inc )"), "not found")
    _include_error(_write(r / "none.dat", "A ( 1 ) include ( )"), "without a file name")
    _write(r / "bin.inc", "")
    (r / "bin.inc").write_bytes(b"SIMISA@@@@@@@@@@JINX0T0b______\r\n\x00\x01")
    with pytest.raises(DecodeError, match="binary"):
        parse_file(_write(r / "bin.dat", "include ( bin.inc )"))


@pytest.mark.parametrize(
    "text",
    [
        "_c ( include ( missing.inc ) ) B ( 2 )",
        "A ( comment ( x include ( missing.inc ) ) B ( 2 ) )",
        "A ( 1 ) #x include ( missing.inc ) B ( 2 )",
        "skip ( include ( missing.inc ) ) B ( 2 )",
    ],
)
def test_commented_out_includes_are_not_followed(tmp_path, text, monkeypatch):
    path = _write(_install(tmp_path) / "ROUTES" / "R" / "c.dat", text)
    fast = parse_file(path)
    full = force_full_grammar(monkeypatch)
    assert parse_file(path) == fast and full  # both grammars agree
    assert "missing" not in json.dumps(fast.to_json())


def test_include_after_escaped_words_is_resolved(tmp_path):
    r = _install(tmp_path) / "ROUTES" / "R"
    _write(r / "o.inc", "O ( 1 )")
    doc = parse_file(_write(r / "e.dat", "x\\ty include ( o.inc ) B ( 2 )"))
    assert [i if isinstance(i, str) else i.name for i in doc.items] == ["x\ty", "O", "B"]


# ---------------------------------------------------------------------------------------
# links that point nowhere: reported, never followed
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_route():
    return load_route(SAMPLE_ROUTE, cache=False)


def _with_nodes(route, nodes, items=None):
    db = route.tdb
    tdb = TrackDB(
        db.path, db.serial, tuple(nodes), db.sections, tuple(items if items is not None else db.items)
    )
    return dataclasses.replace(
        route, tdb=tdb, section_length=_section_lengths(tdb, route.tsection, Diagnostics(strict=False))
    )


BAD_LINKS = [0, 8, 99, 2**31, 2**32 - 1]


@pytest.mark.parametrize("link", BAD_LINKS)
def test_traveller_stops_at_a_pin_that_links_nowhere(sample_route, link):
    nodes = list(sample_route.tdb.nodes)
    main = nodes[4]  # the main line: pins to the junction (3) and the east end (5)
    nodes[4] = dataclasses.replace(main, pins=(main.pins[0], TrPin(link, 1)))
    nodes[7] = None  # and a node missing altogether
    route = _with_nodes(sample_route, nodes)
    t = Traveller(route, 4, 0.0)
    rest = t.move(1e6)
    assert rest > 0 and t.node_index == 4  # stopped at the end of node 4
    assert not t.next_track_node()
    for i in range(1, len(nodes)):
        for d in (0, 1):
            try:
                t = Traveller(route, i, 0.0, d, align_trailing=True)
            except TdbToolsError:
                assert nodes[i] is None
                continue
            t.move(1e5)
            t.move_collect(-2e5)
    codes = {f.code for f in audit_route(route).findings}
    assert ("PIN_UNCONNECTED" if link == 0 else "PIN_OUT_OF_RANGE") in codes


def test_item_references_out_of_range_are_findings(sample_route):
    nodes = list(sample_route.tdb.nodes)
    v = nodes[2]
    assert isinstance(v, VectorNode)
    nodes[2] = dataclasses.replace(v, item_refs=(*v.item_refs, 999, 2**32 - 1))
    route = _with_nodes(sample_route, nodes)
    report = audit_route(route)
    assert "ITEM_REF_MISSING" in {f.code for f in report.findings}
    t = Traveller(route, 2, 0.0)
    t.move_collect(1e4)


@pytest.mark.parametrize(
    "field, value, problem",
    [
        ("next_main", 99, "out of range"),
        ("next_main", 2**32 - 2, "out of range"),
        ("next_main", 0, "cycle"),
        ("pdp_index", 50, "does not exist"),
        ("pdp_index", 2**32 - 1, "does not exist"),
    ],
)
def test_path_resolution_reports_bad_links(sample_route, field, value, problem):
    pf = read_pat(SAMPLE_ROUTE / "PATHS" / "MainWE.pat")
    nodes = list(pf.nodes)
    nodes[1] = dataclasses.replace(nodes[1], **{field: value})
    broken = dataclasses.replace(pf, nodes=tuple(nodes))
    res = resolve_path(sample_route, broken)
    assert not res.ok and any(problem in p for p in res.problems), res.problems
    res.to_json()


def test_broken_path_files_are_reported_by_the_audit(tmp_path, sample_route):
    paths = tmp_path / "PATHS"
    paths.mkdir()
    text = stf_source.read_source(SAMPLE_ROUTE / "PATHS" / "MainWE.pat").text
    (paths / "link.pat").write_text(
        text.replace("TrPathNode ( 00000000 1 4294967295 0 )", "TrPathNode ( 00000000 77 4294967295 0 )"),
        encoding="utf-8",
    )
    (paths / "syntax.pat").write_text(text[: len(text) // 2], encoding="utf-8")
    (paths / "binary.pat").write_bytes(bytes(range(256)))
    report = audit_paths(sample_route, paths)
    report.to_json()
    assert len(report.paths) == 3


def test_consist_with_missing_stock_is_reported(tmp_path):
    con = tmp_path / "x.con"
    con.write_text(
        f"{SIG}\nTrain ( TrainCfg ( x Engine ( UiD ( 0 ) EngineData ( nothere NOFOLDER ) ) "
        f"Wagon ( UiD ( 1 ) WagonData ( {'w' * 4000} {'f' * 4000} ) ) ) )\n",
        encoding="utf-8",
    )
    consist = read_consist(con)
    with pytest.raises(RouteError) as info:
        resolve_stock(consist, SAMPLE_INSTALL)
    assert len(info.value.missing) == 2
    with pytest.warns(StandInWarning):
        stock = resolve_stock(consist, SAMPLE_INSTALL, stand_in=True)
    assert [s.kind for s in stock] == ["engine", "wagon"]


# ---------------------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------------------


def test_cli_on_fuzzed_files_fails_cleanly(sample_fuzzer):
    for i in range(40):
        case = sample_fuzzer.make(10_000 + i, FUZZ_SEED)
        if case.reader == "scenario":
            continue
        r = _cli("parse", str(case.path))
        assert r.exit_code in (0, 2), (case.describe(), r.exit_code, r.stderr)
        assert "Traceback" not in r.stderr + r.stdout and "internal error" not in r.stderr
        if r.exit_code == 2:
            assert r.stderr.startswith("error: ") and r.stdout == ""


def test_cli_debug_shows_the_exception(tmp_path):
    bad = _write(tmp_path / "bad.dat", "A ( 1")
    r = _cli("parse", str(bad))
    assert r.exit_code == 2 and "not closed" in r.stderr and "Traceback" not in r.stderr
    r = _cli("--debug", "parse", str(bad))
    # The traceback on stderr, and the same exit status as without --debug.
    assert r.exit_code == 2 and "Traceback" in r.stderr and "StfSyntaxError" in r.stderr


def test_cli_exit_codes(tmp_path):
    assert _cli("parse", str(SAMPLE_ROUTE / "SAMPLE.trk")).exit_code == 0
    r = _cli("profile", str(SAMPLE_ROUTE))  # neither --path nor a start point
    assert r.exit_code == 2 and "Usage" in r.stderr
    r = _cli("info", str(tmp_path / "nothere"))
    assert r.exit_code == 2 and r.stderr.startswith("error: ")
    r = _cli("replay", str(_write(tmp_path / "s.toml", "").with_name("s.toml")))
    assert r.exit_code == 2 and r.stderr.startswith("error: ")
    r = _cli(
        "profile",
        str(SAMPLE_ROUTE),
        "--path",
        str(SAMPLE_ROUTE / "PATHS" / "MainWE.pat"),
        "--csv",
        str(tmp_path / "no" / "such" / "folder" / "p.csv"),
    )
    # (refused before any work by the overwrite rule's parent-folder check)
    assert r.exit_code == 2 and "does not exist" in r.stderr and "no/such/folder" in r.stderr
    # A route whose track has a pin to nowhere: the audit finds it (exit 1 with --strict).
    install = tmp_path / "install"
    shutil.copytree(SAMPLE_INSTALL, install)
    tdb = install / "ROUTES" / "SAMPLE" / "SAMPLE.tdb"
    text = stf_source.read_source(tdb).text
    write_text_atomic(tdb, text.replace("TrPin ( 7 1 )", "TrPin ( 77 1 )", 1))
    r = _cli("audit", str(install / "ROUTES" / "SAMPLE"), "--strict", "--no-paths")
    assert r.exit_code == 1 and "PIN_OUT_OF_RANGE" in r.stdout, (r.exit_code, r.stdout, r.stderr)


def _fail_at(monkeypatch, call: int, exc: BaseException) -> None:
    """Make the ``call``-th os.fsync (inside write_bytes_atomic, after the data is in the
    temporary file and before it replaces the target) raise ``exc``."""
    real = os.fsync
    count = [0]

    def fsync(fd):
        count[0] += 1
        if count[0] == call:
            raise exc
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


@pytest.mark.parametrize(
    "exc, code", [(KeyboardInterrupt(), 130), (OSError(28, "No space left on device"), 2)]
)
def test_profile_csv_is_never_half_written(tmp_path, monkeypatch, exc, code):
    out = tmp_path / "out"
    out.mkdir()
    csv = out / "p.csv"
    args = (
        "profile",
        str(SAMPLE_ROUTE),
        "--path",
        str(SAMPLE_ROUTE / "PATHS" / "MainWE.pat"),
        "--csv",
        str(csv),
        "--overwrite",
    )  # (the second run replaces the file)
    _fail_at(monkeypatch, 1, exc)
    r = _cli(*args)
    assert r.exit_code == code, (r.exit_code, r.stderr)
    assert "Traceback" not in r.stderr
    assert list(out.iterdir()) == []  # no file, no temporary file
    monkeypatch.undo()
    csv.write_text("old\n")
    _fail_at(monkeypatch, 1, exc)
    assert _cli(*args).exit_code == code
    assert csv.read_text() == "old\n" and list(out.iterdir()) == [csv]  # the old file, whole
    monkeypatch.undo()
    assert _cli(*args).exit_code == 0 and csv.read_text().startswith("distance")


def test_profile_csv_error_mid_way_writes_nothing(tmp_path, monkeypatch):
    from tdbtools.track.profile import Profile

    def broken(self):
        raise TdbToolsError("profile failed half-way")

    monkeypatch.setattr(Profile, "to_csv", broken)
    csv = tmp_path / "p.csv"
    r = _cli(
        "profile", str(SAMPLE_ROUTE), "--path", str(SAMPLE_ROUTE / "PATHS" / "MainWE.pat"), "--csv", str(csv)
    )
    assert r.exit_code == 2 and "half-way" in r.stderr and not csv.exists()


@pytest.mark.parametrize(
    "call, exc, code",
    [
        (1, KeyboardInterrupt(), 130),
        (2, KeyboardInterrupt(), 130),
        (4, OSError(28, "No space left on device"), 2),
    ],
)
def test_replay_out_files_are_never_half_written(tmp_path, monkeypatch, call, exc, code):
    scenario = SAMPLE_INSTALL / "replay.toml"
    full = tmp_path / "full"
    r = _cli("replay", str(scenario), "--out", str(full), "--duration", "5", "--cars")
    assert r.exit_code == 0, r.stderr
    # passenger.csv, passenger_cars.csv, events.json, summary.json, and manifest.json last
    assert len(list(full.iterdir())) == 5 and (full / "manifest.json").is_file()
    broken = tmp_path / "broken"
    _fail_at(monkeypatch, call, exc)
    r = _cli("replay", str(scenario), "--out", str(broken), "--duration", "5", "--cars")
    assert r.exit_code == code and "Traceback" not in r.stderr
    # A run that wrote nothing leaves no folder (it made the folder and removes it).
    written = sorted(p.name for p in broken.iterdir()) if broken.exists() else []
    assert not [n for n in written if n.endswith(".tmp")], written
    assert "manifest.json" not in written and ".tdbtools-run.lock" not in written  # incomplete, unlocked
    assert len(written) == call - 1  # the files before the interrupted one, complete
    for name in written:
        if name.endswith(".csv"):
            assert (broken / name).read_bytes() == (full / name).read_bytes()
        else:
            json.loads((broken / name).read_text())


# ---------------------------------------------------------------------------------------
# huge but finite coordinates in an in-memory model (readers refuse them): reported, no warning
# ---------------------------------------------------------------------------------------


def test_audit_with_a_huge_section_coordinate(sample_route):
    s = sample_route.tdb.sections
    x = s.x.copy()
    x[3] = 1e308
    sections = dataclasses.replace(s, x=x)
    db = sample_route.tdb
    route = dataclasses.replace(sample_route, tdb=TrackDB(db.path, db.serial, db.nodes, sections, db.items))
    report = audit_route(route)
    report.to_json()
    assert any(f.code in ("GAP_IN_NODE", "GAP_AT_NODE_END") for f in report.findings)


def test_resolve_path_with_a_huge_pdp_coordinate(sample_route):
    pf = read_pat(SAMPLE_ROUTE / "PATHS" / "MainWE.pat")
    pdps = list(pf.pdps)
    pdps[1] = dataclasses.replace(pdps[1], x=1e308)
    res = resolve_path(sample_route, dataclasses.replace(pf, pdps=tuple(pdps)))
    assert not res.ok and "out of range" in res.problems[0]


def test_no_known_bugs_left_in_the_fuzz_table():
    assert not fuzz.KNOWN_BUGS


# -- semantic mutations and hostile settings (issue 15) ----------------------------------


@pytest.mark.parametrize("op", [fuzz.t_geometry, fuzz.t_links, fuzz.t_settings], ids=lambda f: f.__name__)
def test_semantic_mutations_fail_cleanly(sample_fuzzer, op):
    """Well-formed files that say impossible things (geometry, links, settings) give
    clean errors or findings, never a crash, a warning or a slow read."""
    import random

    kinds = {"t_geometry": ("tsection", "tdb"), "t_links": ("tdb",), "t_settings": ("scenario", "sweep")}
    seeds = [s for s in sample_fuzzer.seeds if s.reader in kinds[op.__name__]]
    assert seeds
    failed = []
    changed = 0
    for i in range(40):
        rng = random.Random(f"semantic:{op.__name__}:{i}")
        seed = seeds[i % len(seeds)]
        text = op(rng, seed.text, seed)
        changed += text != seed.text
        path = sample_fuzzer.roots["sample"] / Path(seed.rel).parent / f"sem{i}_{Path(seed.rel).name}"
        data = b"\xff\xfe" + text.encode("utf-16-le") if seed.encoding == "utf-16" else text.encode("utf-8")
        path.write_bytes(data)
        case = sample_fuzzer.run(fuzz.Case(i, f"sample:{seed.rel}", seed.reader, [op.__name__], path, data))
        if case.failed:
            failed.append(case.describe())
    assert changed >= 30
    assert not failed, "\n\n".join(failed)


@pytest.mark.parametrize("key", sorted(fuzz.HOSTILE_SETTINGS))
def test_hostile_settings_are_refused_or_bounded(tmp_path, key):
    from tdbtools.physics.scenario import MAX_STEPS, ScenarioError, scenario_from_text

    base = 'route = "R"\n[[train]]\nname = "a"\nconsist = "c"\npath = "p"\n'
    for value in fuzz.HOSTILE_SETTINGS[key]:
        text = (
            (f"{key} = {value}\n" + base)
            if key in ("step", "duration", "collision_check_interval")
            else base + f"{key} = {value}\n"
        )
        try:
            sc = scenario_from_text(text, "s.toml")
        except ScenarioError as exc:
            assert exc.line is not None and len(str(exc)) < 400
            continue
        assert 0 < sc.step <= 1.0 and 0 < sc.duration and sc.duration / sc.step <= MAX_STEPS


def test_spatial_index_of_absurd_lengths_is_bounded(sample_route):
    from tdbtools.track.spatial import MAX_PIECES, SectionGrid, track_geometry

    geom = track_geometry(sample_route)
    for big in (1e9, 1e15, 1e300):
        length = geom.length.copy()
        length[0] = big
        g = dataclasses.replace(geom, length=length)
        with CpuTimer() as cpu:
            grid = SectionGrid.build(g)
        assert cpu.seconds < 5
        assert len(grid) < 20 * (MAX_PIECES + 65 * len(length))
        assert grid.cell >= 32.0
