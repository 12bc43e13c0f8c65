"""Path files ``.pat`` (docs/formats.md §8): the sample route's paths, defects in strict and
lenient mode, chains, and every path of DK24."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from helpers import DK24_ROUTE

from tdbtools.errors import Diagnostics, FormatError
from tdbtools.formats.pat import NO_NODE, Chain, PathFile, TrackPDP, TrPathNode, read_pat

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_PATHS = ROOT / "sample_routes" / "sample" / "ROUTES" / "SAMPLE" / "PATHS"
DK24_PATHS = DK24_ROUTE / "PATHS"

HEADER = "SIMISA@@@@@@@@@@JINX0P0t______\n\n"


def pat_text(nodes: str, *, count: int | None = None, pdps: str | None = None, extra: str = "") -> str:
    """A small ASCII .pat (3 PDPs unless given); ``nodes`` are TrPathNode lines."""
    lines = [ln for ln in nodes.strip().splitlines() if ln.strip()]
    n = len(lines) if count is None else count
    pdps = (
        pdps
        if pdps is not None
        else (
            "\tTrackPDP ( -5631 15116 10.5 42 -300 1 1 )\n"
            "\tTrackPDP ( -5631 15116 200 42 -310 2 0 )\n"
            "\tTrackPDP ( -5630 15116 -700 43 -5 1 1 )\n"
        )
    )
    body = "".join(f"\t\t{ln.strip()}\n" for ln in lines)
    return (
        HEADER + "Serial ( 1 )\nTrackPDPs (\n" + pdps + ")\nTrackPath (\n"
        '\tTrPathName ( T1 )\n\tName ( "Test path" )\n' + extra + "\tTrPathStart ( A )\n\tTrPathEnd ( B )\n"
        f"\tTrPathNodes ( {n}\n" + body + "\t)\n)\n"
    )


def write(tmp_path: Path, text: str, name: str = "t.pat") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="ascii")
    return p


def line_col(text: str, needle: str, occurrence: int = 0) -> tuple[int, int]:
    """1-based line and column of the ``occurrence``-th ``needle`` in the text
    (the signature line counts as line 1)."""
    pos = -1
    for _ in range(occurrence + 1):
        pos = text.index(needle, pos + 1)
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, col


# -- the sample route ------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_paths() -> dict[str, PathFile]:
    return {p.stem: read_pat(p) for p in sorted(SAMPLE_PATHS.glob("*.pat"))}


def test_sample_has_four_paths(sample_paths):
    # (SidingStore: where the sample timetable's static train stands)
    assert sorted(sample_paths) == ["MainEW", "MainWE", "Siding", "SidingStore"]


def test_main_we(sample_paths):
    p = sample_paths["MainWE"]
    assert p.serial == 1
    assert p.path_id == "MainWE"
    assert p.name == "Main line west - east"
    assert (p.start, p.end) == ("Vestende", "Østende")
    assert p.flags is None and p.is_player_path
    assert p.pdps[0] == TrackPDP(-5631, 15116, -212.95441, 41.321771, -380.181, 1, 1)
    assert p.pdps[1].is_junction and (p.pdps[1].junction_flag, p.pdps[1].invalid_flag) == (2, 0)
    assert not p.pdps[0].is_junction
    assert p.pdps[2].tile_x == -5630
    assert [n.next_main for n in p.nodes] == [1, 2, None]
    assert [n.next_siding for n in p.nodes] == [None, None, None]
    assert [n.pdp_index for n in p.nodes] == [0, 1, 2]
    assert all(n.flags == 0 and n.flags_text == "00000000" for n in p.nodes)
    assert tuple(p.main_chain()) == (0, 1, 2)
    assert p.main_chain().ok and p.main_chain().stop == "end"
    assert p.siding_chains() == []
    assert p.pdp(2) == p.pdps[2]


def test_siding_path(sample_paths):
    p = sample_paths["Siding"]
    assert p.end == "Sidespor"
    assert p.pdps[2].x == pytest.approx(641.450778)
    assert list(p.main_chain()) == [0, 1, 2]


def test_main_ew_waiting_point(sample_paths):
    p = sample_paths["MainEW"]
    assert p.start == "Østende" and p.end == "Vestende"
    assert len(p.nodes) == 4 and len(p.pdps) == 4
    wait = p.nodes[2]
    assert wait.flags_text == "003c0002"
    assert wait.flags == 0x003C0002
    assert wait.is_waiting and not wait.is_reversal
    assert wait.wait_seconds == 60
    assert not (wait.is_intermediate or wait.other_exit or wait.optional)
    others = [n for i, n in enumerate(p.nodes) if i != 2]
    assert all(not n.is_waiting and n.wait_seconds is None for n in others)
    assert tuple(p.main_chain()) == (0, 1, 2, 3)


def test_flag_bits():
    def node(flags: int) -> TrPathNode:
        return TrPathNode(flags, None, None, 0, f"{flags:08x}")

    assert node(0x1).is_reversal and not node(0x1).is_waiting
    assert not node(0x3).is_waiting  # bit 1 counts only when bit 0 is clear
    assert node(0x3).wait_seconds is None
    assert node(0x4).is_intermediate
    assert node(0x8).other_exit
    assert node(0x10).optional
    assert node(0x012C0002).wait_seconds == 300


def test_none_links_and_hex_kept(tmp_path):
    text = pat_text(
        """
        TrPathNode ( 0000000A 1 4294967295 0 )
        TrPathNode ( 00000000 4294967295 4294967295 1 )
    """,
        extra="\tTrPathFlags ( 00000020 )\n",
    )
    p = read_pat(write(tmp_path, text))
    assert NO_NODE == 4294967295
    assert p.nodes[0].next_siding is None and p.nodes[1].next_main is None
    assert p.nodes[0].flags_text == "0000000A" and p.nodes[0].flags == 10
    assert p.flags == 0x20 and not p.is_player_path


def test_passing_siding_chain(tmp_path):
    text = pat_text("""
        TrPathNode ( 00000000 1 4294967295 0 )
        TrPathNode ( 00000000 2 3 1 )
        TrPathNode ( 00000000 4 4294967295 1 )
        TrPathNode ( 00000000 4294967295 4 2 )
        TrPathNode ( 00000000 4294967295 4294967295 2 )
    """)
    diags = Diagnostics(strict=True)
    p = read_pat(write(tmp_path, text), diagnostics=diags)
    assert diags.findings == []
    assert tuple(p.main_chain()) == (0, 1, 2, 4)
    assert p.nodes[1].starts_siding
    (ch,) = p.siding_chains()
    assert ch == Chain((1, 3, 4), "rejoin")


def test_pickle_round_trip(sample_paths):
    p = sample_paths["MainEW"]
    assert pickle.loads(pickle.dumps(p)) == p
    assert pickle.loads(pickle.dumps(p.main_chain())) == p.main_chain()


# -- defects -------------------------------------------------------------------------

BAD_CASES = {
    # name: (TrPathNode lines, the text the error points at, occurrence, message part)
    "main_link_out_of_range": (
        """
        TrPathNode ( 00000000 7 4294967295 0 )
        TrPathNode ( 00000000 4294967295 4294967295 1 )
    """,
        " 7 ",
        0,
        "next main node 7 is out of range",
    ),
    "siding_link_out_of_range": (
        """
        TrPathNode ( 00000000 1 9 0 )
        TrPathNode ( 00000000 4294967295 4294967295 1 )
    """,
        " 9 ",
        0,
        "next siding node 9 is out of range",
    ),
    "pdp_out_of_range": (
        """
        TrPathNode ( 00000000 1 4294967295 0 )
        TrPathNode ( 00000000 4294967295 4294967295 3 )
    """,
        " 3 )",
        0,
        "PDP index 3 is out of range",
    ),
    "main_cycle": (
        """
        TrPathNode ( 00000000 1 4294967295 0 )
        TrPathNode ( 00000000 2 4294967295 1 )
        TrPathNode ( 00000000 1 4294967295 2 )
    """,
        " 1 4294967295 2",
        0,
        "main chain has a cycle",
    ),
    "non_hex_flags": (
        """
        TrPathNode ( 00000000 1 4294967295 0 )
        TrPathNode ( 0000xyz0 4294967295 4294967295 1 )
    """,
        "0000xyz0",
        0,
        "expected a hexadecimal flag",
    ),
    "not_a_number": (
        """
        TrPathNode ( 00000000 one 4294967295 0 )
        TrPathNode ( 00000000 4294967295 4294967295 1 )
    """,
        "one",
        0,
        "expected an unsigned integer",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_file_strict(tmp_path, case):
    nodes, needle, occ, part = BAD_CASES[case]
    text = pat_text(nodes)
    path = write(tmp_path, text)
    with pytest.raises(FormatError) as ei:
        read_pat(path)
    err = ei.value
    want_line, want_col = line_col(text, needle, occ)
    if needle.startswith(" "):
        want_col += 1
    assert part in err.message
    assert (err.line, err.column) == (want_line, want_col), str(err)
    assert err.path == str(path)
    assert "^" in str(err)


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_file_lenient(tmp_path, case):
    nodes, needle, occ, part = BAD_CASES[case]
    text = pat_text(nodes)
    diags = Diagnostics(strict=False)
    p = read_pat(write(tmp_path, text), diagnostics=diags)
    hits = [f for f in diags.findings if part in f.message]
    assert len(hits) == 1, [str(f) for f in diags.findings]
    want_line, want_col = line_col(text, needle, occ)
    if needle.startswith(" "):
        want_col += 1
    assert (hits[0].location.line, hits[0].location.column) == (want_line, want_col)
    # Walking the chains never fails, whatever the links.
    chain = p.main_chain()
    assert len(chain) >= 1
    p.siding_chains()


def test_lenient_keeps_bad_values(tmp_path):
    text = pat_text(BAD_CASES["main_link_out_of_range"][0])
    p = read_pat(write(tmp_path, text), strict=False)
    assert p.nodes[0].next_main == 7
    ch = p.main_chain()
    assert ch.stop == "bad_link" and tuple(ch) == (0,) and ch.at == 0 and not ch.ok
    text = pat_text(BAD_CASES["pdp_out_of_range"][0])
    p = read_pat(write(tmp_path, text), strict=False)
    assert p.nodes[1].pdp_index == 3 and p.pdp(1) is None
    text = pat_text(BAD_CASES["non_hex_flags"][0])
    p = read_pat(write(tmp_path, text), strict=False)
    assert p.nodes[1].flags == 0 and p.nodes[1].flags_text == "0000xyz0"


def test_cycle_is_reported_not_looped(tmp_path):
    text = pat_text(BAD_CASES["main_cycle"][0])
    p = read_pat(write(tmp_path, text), strict=False)
    ch = p.main_chain()
    assert ch.stop == "cycle" and tuple(ch) == (0, 1, 2) and ch.at == 2
    # A self-loop and a siding cycle, built directly.
    p2 = PathFile("x", 1, (), "", "", "", "", None, (TrPathNode(0, 0, None, 0),))
    assert p2.main_chain().stop == "cycle"
    p3 = PathFile(
        "x",
        1,
        (),
        "",
        "",
        "",
        "",
        None,
        (
            TrPathNode(0, 1, 2, 0),
            TrPathNode(0, None, None, 0),
            TrPathNode(0, None, 3, 0),
            TrPathNode(0, None, 2, 0),
        ),
    )
    (sc,) = p3.siding_chains()
    assert sc.stop == "cycle" and tuple(sc) == (0, 2, 3)


def test_siding_cycle_strict(tmp_path):
    text = pat_text("""
        TrPathNode ( 00000000 1 2 0 )
        TrPathNode ( 00000000 4294967295 4294967295 1 )
        TrPathNode ( 00000000 4294967295 3 1 )
        TrPathNode ( 00000000 4294967295 2 1 )
    """)
    with pytest.raises(FormatError, match="siding chain has a cycle") as ei:
        read_pat(write(tmp_path, text))
    assert ei.value.line == line_col(text, "TrPathNode ( 00000000 4294967295 2 1 )")[0]


def test_count_mismatch_and_missing_blocks(tmp_path):
    text = pat_text(
        """
        TrPathNode ( 00000000 4294967295 4294967295 0 )
    """,
        count=2,
    )
    with pytest.raises(FormatError, match="the count says 2 nodes, found 1") as ei:
        read_pat(write(tmp_path, text))
    assert ei.value.line == line_col(text, "TrPathNodes")[0]
    no_pdps = HEADER + "Serial ( 1 )\nTrackPath (\n\tTrPathName ( X )\n\tTrPathNodes ( 0 )\n)\n"
    diags = Diagnostics(strict=False)
    p = read_pat(write(tmp_path, no_pdps, "n.pat"), diagnostics=diags)
    msgs = [f.message for f in diags.findings]
    assert any("no TrackPDPs" in m for m in msgs) and any("no nodes" in m for m in msgs)
    assert p.main_chain().stop == "empty"
    with pytest.raises(FormatError, match="no TrackPDPs"):
        read_pat(write(tmp_path, no_pdps, "n.pat"))


def test_bad_pdp_values(tmp_path):
    text = pat_text(
        "TrPathNode ( 00000000 4294967295 4294967295 0 )", pdps="\tTrackPDP ( -5631 15116 1.5 x 3 1 1 )\n"
    )
    with pytest.raises(FormatError, match="expected a number") as ei:
        read_pat(write(tmp_path, text))
    line, col = line_col(text, " x ")
    assert (ei.value.line, ei.value.column) == (line, col + 1)


def test_unreached_nodes_are_noted(tmp_path):
    text = pat_text("""
        TrPathNode ( 00000000 4294967295 4294967295 0 )
        TrPathNode ( 00000000 4294967295 4294967295 1 )
    """)
    diags = Diagnostics(strict=True)  # a note, never fatal
    read_pat(write(tmp_path, text), diagnostics=diags)
    assert len(diags.findings) == 1 and "not reached" in diags.findings[0].message


# -- DK24 ------------------------------------------------------------------------------


def test_every_dk24_path_parses():
    files = sorted(p for p in DK24_PATHS.iterdir() if p.suffix.lower() == ".pat")
    assert len(files) == len(list(DK24_PATHS.glob("*.pat")))
    parsed = 0
    for f in files:
        diags = Diagnostics(strict=True)
        p = read_pat(f, diagnostics=diags)
        assert diags.findings == [], f
        assert p.path_id == f.stem
        ch = p.main_chain()
        assert ch.ok and ch.stop == "end" and len(ch) == len(p.nodes)
        assert all(p.pdp(n) is not None for n in p.nodes)
        parsed += 1
    assert parsed == len(files) > 0  # 313 files in the DK24 copy this was written against
