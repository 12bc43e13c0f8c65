"""The one-pass pre-scans of ASCII text (stf.prescan._ascii_scans) agree with the three
separate scans they stand in for, also across slice boundaries."""

from __future__ import annotations

import random

import pytest
from helpers import REPO

from tdbtools.errors import TdbToolsError
from tdbtools.stf import parser as stf_parser
from tdbtools.stf import prescan
from tdbtools.stf.source import Source


def _separate(text: str) -> tuple[bool, list[list[int]], bool]:
    return (
        prescan._has_control(text),
        prescan._find_lower(text, prescan._KEYWORDS),
        prescan.has_long_word(text),
    )


def _texts() -> list[str]:
    rng = random.Random(3)
    pieces = [
        "comment",
        "CoMmEnt",
        "skip",
        "SKIP",
        "include",
        "Include",
        "includeskip",
        "x" * 130,
        "y" * 127,
        "#",
        "_",
        "(",
        ")",
        " ",
        "\n",
        "\x01",
        "\x1b",
        "\t",
        "12.5",
        "TrackNode",
    ]
    out = ["", "skip", "a" * 200, "\x05", "comment comment", "includeinclude"]
    for _ in range(60):
        out.append("".join(rng.choice(pieces) for _ in range(rng.randrange(1, 120))))
    for p in sorted((REPO / "tests" / "data" / "valid").iterdir())[:40]:
        if p.is_file():
            t = p.read_bytes().decode("utf-8", "replace")
            if t.isascii():
                out.append(t)
    return out


@pytest.mark.parametrize("step", [7, 64, 129, 1 << 23])
def test_ascii_scans_agree_with_the_separate_scans(step, monkeypatch):
    monkeypatch.setattr(prescan, "_SCAN_SLICE", step)
    for text in _texts():
        assert prescan._ascii_scans(text) == _separate(text), text[:80]


@pytest.mark.parametrize("step", [5, 64, 1 << 23])
def test_keyword_prefilter_hits_that_are_no_keyword(step, monkeypatch):
    # The letters of a slice alone may spell a keyword that the text does not hold:
    # the exact search then finds none.
    monkeypatch.setattr(prescan, "_SCAN_SLICE", step)
    for text in ("com1ment", "co(mm)ent s k i p", "IN-CLUDE x", "sk\nip 1 comment", "a comm 2 ent include"):
        assert prescan._ascii_scans(text) == _separate(text), text


_LINE1 = (
    "SIMISA@@@@ #x _y comment skip include ( \x01 \u00a0" + "w" * 200 + ' TrackNodes ( ) ) " TrItemTable ('
)
_BODY = """
TrackDB (
\tSerial ( 3 )
\tTrackNodes ( 1
\t\tTrackNode ( 1 TrEndNode ( 0 ) UiD ( 1 2 3 0 1 2 10.5 0 -20.25 0 3.1 0 ) TrPins ( 1 0 TrPin ( 1 1 ) ) )
\t)
\tTrItemTable ( 1 PlatformItem ( TrItemId ( 0 ) PlatformName ( "A (1)" ) ) )
)
"""


def _tree_offsets(blk) -> list:
    out, stack = [], [blk]
    while stack:
        b = stack.pop()
        out.append((b.key, b.pos, [i if isinstance(i, str) else None for i in b.items]))
        stack.extend(i for i in b.items if not isinstance(i, str))
    return out


@pytest.mark.parametrize("step", [5, 1 << 23])
def test_line_one_is_not_scanned_nor_parsed(step, monkeypatch):
    # The parse starts past line 1 in place (no blanked copy): whatever line 1 holds,
    # the scans, the grammar chosen, the tree, its offsets and the errors are those of
    # the text with line 1 blanked.
    monkeypatch.setattr(prescan, "_SCAN_SLICE", step)
    ascii_line = _LINE1.encode("ascii", "replace").decode()
    for line1 in (ascii_line, "x" * 300, "", "SIMISA@@@@@@@@@@JINX0T0t______"):
        for body in (_BODY, _BODY.replace("( 3 )", "( 3 ))"), _BODY.replace('"A (1)"', '"A (1)')):
            text = line1 + body
            blank = " " * len(line1) + body
            assert prescan._ascii_scans(text, len(line1)) == prescan._ascii_scans(blank), line1
            results = []
            for t in (text, blank):
                src = Source("<t>", t, "str")
                try:
                    doc = stf_parser.parse_source(src, bulk=True)
                    results.append((_tree_offsets(doc), src.exact_split))
                except TdbToolsError as exc:
                    results.append((type(exc).__name__, str(exc)))
            assert results[0] == results[1], (line1[:20], body[:40])
