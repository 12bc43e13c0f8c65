"""The table runs the STF lexer takes whole (stf.parser._hook_table_runs) are handed to
Lark as a ``_Run``: a span of the text, never copied, that Lark measures as the run
itself (length, line ends), and that the builder reads where it needs the run's text."""

from __future__ import annotations

import pickle

import pytest
from helpers import SAMPLE_ROUTE
from lark import Token
from lark.exceptions import UnexpectedToken

from tdbtools.errors import Diagnostics
from tdbtools.formats.tdb import read_tdb, tdb_from_document
from tdbtools.stf import parser as stf_parser
from tdbtools.stf.source import Source

pytestmark = pytest.mark.filterwarnings("error")

_Run = stf_parser._Run


def test_a_run_measures_as_its_text():
    text = "ab\ncd ( e\nf ) g\nhi"
    for a, b in ((0, len(text)), (2, 14), (3, 9), (5, 5)):
        run = _Run(text, a, b)
        part = text[a:b]
        assert len(run) == len(part)
        assert run.count("\n") == part.count("\n")
        if "\n" in part:
            assert run.rindex("\n") == part.rindex("\n")
        assert run.value() == part
        assert run.count("\n", 1) == part.count("\n", 1) and run.count("c", 0, 4) == part.count("c", 0, 4)
        if "\n" in part[:3]:
            assert run.rindex("\n", 0, 3) == part.rindex("\n", 0, 3)
        assert run.holds("(") == ("(" in part)
        tok = Token("DATA", run, a)
        assert str(tok) == "" and tok.value is run  # (no copy in the token)


def _sample_tdb():
    found = sorted(SAMPLE_ROUTE.glob("*.tdb"))
    assert found, SAMPLE_ROUTE
    return found[0]


def test_the_hinted_runs_are_never_copied_and_the_model_is_the_same(monkeypatch):
    path = _sample_tdb()
    copies: list[int] = []
    plain_value = _Run.value
    monkeypatch.setattr(_Run, "value", lambda self: copies.append(len(self)) or plain_value(self))
    runs: list[int] = []
    plain_new = _Run.__new__
    monkeypatch.setattr(_Run, "__new__", lambda cls, t, a, b: runs.append(b - a) or plain_new(cls, t, a, b))
    got = read_tdb(path)
    assert len(runs) == 2  # (the TrackNodes and the TrItemTable runs)
    assert copies == []
    monkeypatch.setattr(stf_parser, "TABLE_RUN_ENDS", {})
    monkeypatch.setattr(stf_parser, "ITEM_TABLE_RUN_ENDS", {})
    want = read_tdb(path)  # (Lark's regex takes the runs: plain str tokens)
    assert len(runs) == 2
    assert pickle.dumps(got) == pickle.dumps(want)


def test_a_run_in_a_block_not_kept_raw_is_split_as_its_text():
    text = "x ( 1 2 ) y ( a ( b ) ) c"
    builder = stf_parser._Builder()
    builder.source = Source("<s>", text, "str")
    plain: list = []
    builder._data(Token("DATA", text, 0), plain)
    ran: list = []
    builder._data(Token("DATA", _Run(text, 0, len(text)), 0), ran)
    assert _shape(ran) == _shape(plain) == [("x", ["1", "2"]), ("y", [("a", ["b"])]), "c"]


def _shape(items: list) -> list:
    return [(it.name, _shape(it.items)) if hasattr(it, "items") else it for it in items]


def test_a_syntax_error_at_a_run_quotes_the_run():
    text = "SIMISA@@@@@@@@@@JINX0T0t______\n" + "TrackNodes ( 1 2 3 )"
    src = Source("<s>", text, "str")
    tok = Token("DATA", _Run(text, 44, 49), 44)
    err = stf_parser._syntax_error(src, UnexpectedToken(tok, {"RPAR"}))
    assert "'1 2 3'" in err.message, err.message


def test_a_text_with_line_one_blanked_keeps_its_runs_as_spans_of_the_source(monkeypatch):
    """Non-ASCII text is lexed as a copy with line 1 blanked: the runs are spans of that
    copy, and the raw blocks hold the source's own text (compared, not assumed)."""
    text = _sample_tdb().read_bytes().decode("utf-16")
    text = text.replace('PlatformName ( "Sampleby', 'PlatformName ( "Sampléby', 1)
    assert not text.isascii()
    runs: list[int] = []
    plain_new = _Run.__new__
    monkeypatch.setattr(_Run, "__new__", lambda cls, t, a, b: runs.append(b - a) or plain_new(cls, t, a, b))

    def model() -> bytes:
        doc = stf_parser.parse_source(Source("<s>", text, "utf-16-le"), bulk=True)
        return pickle.dumps(tdb_from_document(doc, Diagnostics(strict=True)))

    got = model()
    assert len(runs) == 2
    monkeypatch.setattr(stf_parser, "TABLE_RUN_ENDS", {})
    monkeypatch.setattr(stf_parser, "ITEM_TABLE_RUN_ENDS", {})
    assert model() == got
    assert len(runs) == 2 and "Sampléby".encode() in got
