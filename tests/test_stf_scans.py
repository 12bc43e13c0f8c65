"""The one-pass pre-scans of ASCII text (stf.parser._ascii_scans) agree with the three
separate scans they stand in for, also across slice boundaries."""

from __future__ import annotations

import random

import pytest
from helpers import REPO

from tdbtools.stf import parser as stf_parser


def _separate(text: str) -> tuple[bool, list[list[int]], bool]:
    return (
        stf_parser._has_control(text),
        stf_parser._find_lower(text, stf_parser._KEYWORDS),
        stf_parser.has_long_word(text),
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
    monkeypatch.setattr(stf_parser, "_SCAN_SLICE", step)
    for text in _texts():
        assert stf_parser._ascii_scans(text) == _separate(text), text[:80]


@pytest.mark.parametrize("step", [5, 64, 1 << 23])
def test_keyword_prefilter_hits_that_are_no_keyword(step, monkeypatch):
    # The letters of a slice alone may spell a keyword that the text does not hold:
    # the exact search then finds none.
    monkeypatch.setattr(stf_parser, "_SCAN_SLICE", step)
    for text in ("com1ment", "co(mm)ent s k i p", "IN-CLUDE x", "sk\nip 1 comment", "a comm 2 ent include"):
        assert stf_parser._ascii_scans(text) == _separate(text), text
