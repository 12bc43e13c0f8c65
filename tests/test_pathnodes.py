"""Path nodes as Open Rails reads them, and the located error for a node a train cannot
follow (issue 26; docs/activities.md §4.5, §4.8; tdbtools/track/pathnodes.py).

Each case edits one path of the reversal fixtures (tests/data/reversals.py: UTF-16LE +
BOM, CRLF, odd folder case) in a copy of the install and replays its activity."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tdbtools.cli import main
from tdbtools.formats.route import load_route
from tdbtools.physics.activity import replay_activity
from tdbtools.track.pathnodes import PathNodeError, check_path, wait_order

H = 8 * 3600


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
    try:
        from reversals import make_install
    finally:
        sys.path.pop(0)
    return make_install(tmp_path_factory.mktemp("nodes") / "install").parents[1]


def _copy(install: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "install"
    shutil.copytree(install, dst)
    return dst / "ROUTES" / "SIGNALS"


def _text(pat: Path) -> str:
    raw = pat.read_bytes()
    assert raw[:2] == b"\xff\xfe"
    return raw[2:].decode("utf-16-le")


def _write(pat: Path, text: str) -> None:
    pat.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))


def _node_lines(text: str) -> list[int]:
    lines = text.split("\n")
    return [k for k, ln in enumerate(lines) if ln.strip().startswith("TrPathNode (")]


def _edit_node(pat: Path, node: int, *, flags: str | None = None, pdp: str | None = None) -> int:
    """Change path node ``node``'s flags or PDP index; returns its 1-based line."""
    text = _text(pat)
    lines = text.split("\n")
    k = _node_lines(text)[node]
    head, body = lines[k].split("TrPathNode (", 1)
    vals = body.split()
    if flags is not None:
        vals[0] = flags
    if pdp is not None:
        vals[3] = pdp
    lines[k] = head + "TrPathNode ( " + " ".join(vals)
    _write(pat, "\n".join(lines))
    return k + 1


def _replay_cli(act: Path, out: Path):  # noqa: ANN202
    return CliRunner().invoke(main, ["replay", str(act), "--out", str(out)])


def _assert_located(output: str, pat: Path, line: int) -> None:
    m = re.search(re.escape(pat.name) + r":(\d+):(\d+): ", output)
    assert m is not None, output
    assert int(m.group(1)) == line
    assert "^" in output and "Traceback" not in output


def test_wait_order_reads_values_as_open_rails() -> None:
    assert wait_order(60) == wait_order(60)
    assert wait_order(60).seconds == 60.0 and wait_order(60).until is None
    w = wait_order(30805)  # 3HHMM: until 08:05
    assert w.until == 8 * 3600 + 5 * 60 and w.seconds == 0.0 and w.unmodelled is None
    u = wait_order(40320)  # 4NNSS: uncouple 3 cars, wait 20 s
    assert u.seconds == 20.0 and u.unmodelled == "uncoupling 3 car(s)"
    assert wait_order(50320).unmodelled == "uncoupling 3 car(s), keeping the rear"
    assert wait_order(60002).seconds == 0.0 and "60002" in (wait_order(60002).unmodelled or "")
    for bad in (32460, 30860):
        with pytest.raises(ValueError, match="no clock time"):
            wait_order(bad)


def test_point_off_the_track_is_a_located_error(install: Path, tmp_path: Path) -> None:
    rdir = _copy(install, tmp_path)
    pat = rdir / "Paths" / "OneRev_Rev1.pat"
    text = _text(pat)
    # move the first via point (a plain PDP, "1 1") 300 m north, off every track
    lines = text.split("\n")
    pdp_lines = [k for k, ln in enumerate(lines) if ln.strip().startswith("TrackPDP (")]
    plain = [i for i, k in enumerate(pdp_lines) if lines[k].split()[-3:-1] == ["1", "1"]]
    pdp_index = plain[1]
    k = pdp_lines[pdp_index]
    vals = lines[k].split()
    vals[6] = str(float(vals[6]) + 300.0)
    lines[k] = lines[k][: len(lines[k]) - len(lines[k].lstrip())] + " ".join(vals)
    _write(pat, "\n".join(lines))
    node = next(
        n for n, j in enumerate(_node_lines(text)) if text.split("\n")[j].split()[-2] == str(pdp_index)
    )
    out = tmp_path / "out"
    r = _replay_cli(rdir / "Activities" / "OneRev.act", out)
    assert r.exit_code == 2, r.output
    _assert_located(r.output, pat, _node_lines(text)[node] + 1)
    assert f"path node {node} (PDP {pdp_index})" in r.output
    assert not out.exists() or not any(out.iterdir())  # nothing half-written
    with pytest.raises(PathNodeError) as ei:
        check_path(load_route(rdir), pat)
    assert ei.value.line == _node_lines(text)[node] + 1 and ei.value.column > 1


def test_unknown_flag_is_a_located_error(install: Path, tmp_path: Path) -> None:
    rdir = _copy(install, tmp_path)
    pat = rdir / "Paths" / "OneRev_Rev1.pat"
    line = _edit_node(pat, 1, flags="00000040")
    out = tmp_path / "out"
    r = _replay_cli(rdir / "Activities" / "OneRev.act", out)
    assert r.exit_code == 2, r.output
    _assert_located(r.output, pat, line)
    assert "path node 1: flags 00000040: bit(s) 0x40 are unknown" in r.output
    assert not out.exists() or not any(out.iterdir())


def test_known_flags_change_nothing(install: Path, tmp_path: Path) -> None:
    """Intermediate (4), other exit (8) and optional route (10) are written by the MSTS
    editor and ignored by Open Rails: the replay is the same with them set."""
    rdir = _copy(install, tmp_path)
    pat = rdir / "Paths" / "Wait_Waiter.pat"
    base = replay_activity(rdir / "Activities" / "Wait.act").replay.summary["services"]["Waiter"]
    n = len(_node_lines(_text(pat)))
    for node in range(1, n - 1):
        vals = _text(pat).split("\n")[_node_lines(_text(pat))[node]].split()
        flags = int(vals[2], 16)
        _edit_node(pat, node, flags=f"{flags | 0x1C:08x}")
    again = replay_activity(rdir / "Activities" / "Wait.act").replay.summary["services"]["Waiter"]
    assert again == base


def test_wait_point_on_a_missing_node_is_a_located_error(install: Path, tmp_path: Path) -> None:
    rdir = _copy(install, tmp_path)
    pat = rdir / "Paths" / "Wait_Waiter.pat"
    node = _waiting_node(pat)
    line = _edit_node(pat, node, pdp="99")
    out = tmp_path / "out"
    r = _replay_cli(rdir / "Activities" / "Wait.act", out)
    assert r.exit_code == 2, r.output
    _assert_located(r.output, pat, line)
    assert f"path node {node}: PDP index 99" in r.output
    assert not out.exists() or not any(out.iterdir())


def _waiting_node(pat: Path) -> int:
    """The one waiting point (flags bit 1 without bit 0) of ``pat``."""
    text = _text(pat)
    (node,) = [
        n for n, j in enumerate(_node_lines(text)) if int(text.split("\n")[j].split()[2], 16) & 0x3 == 0x2
    ]
    return node


def _wait_run(rdir: Path, value: int):  # noqa: ANN202
    """Set the waiting point of the ``Wait`` activity's path to ``value`` and replay it:
    (node, result, the waiting event, the departed event)."""
    pat = rdir / "Paths" / "Wait_Waiter.pat"
    node = _waiting_node(pat)
    _edit_node(pat, node, flags=f"{(value << 16) | 0x2:08x}")
    res = replay_activity(rdir / "Activities" / "Wait.act")
    (w,) = [e for e in res.replay.events if e.kind == "waiting"]
    (d,) = [e for e in res.replay.events if e.kind == "departed"]
    return node, res, w, d


def test_wait_until_a_clock_time(install: Path, tmp_path: Path) -> None:
    """3HHMM: the train stands until that clock time (08:05 here, 300 s after the start)."""
    _node, res, w, d = _wait_run(_copy(install, tmp_path), 30805)
    assert w.time < 300.0 - 30.0  # it arrived well before 08:05
    assert res.t0 == H and d.time == pytest.approx(300.0, abs=0.51)
    tr = res.replay.traces["Waiter"]
    t, v = np.asarray(tr["time"]), np.asarray(tr["speed"])
    assert np.all(v[(t > w.time + 1) & (t < d.time - 1)] < 0.01)
    assert res.replay.summary["services"]["Waiter"]["reached_end"] and not res.failed


def test_uncouple_order_waits_and_is_tolerated(install: Path, tmp_path: Path) -> None:
    """4NNSS: waits SS seconds; the uncoupling is not modelled, and the console says so."""
    rdir = _copy(install, tmp_path)
    pat = rdir / "Paths" / "Wait_Waiter.pat"
    node, res, w, d = _wait_run(rdir, 40245)
    assert w.wait == 45.0 and d.time - w.time == pytest.approx(45.0, abs=0.51)
    r = _replay_cli(rdir / "Activities" / "Wait.act", tmp_path / "o")
    assert r.exit_code == 0, r.output
    assert (
        f"tolerated: Waiter: waiting point at path node {node} of Wait_Waiter.pat: uncoupling 2 car(s) not modelled"
        in r.output
    )
    # a clock time that is none is bad input, located
    line = _edit_node(pat, node, flags=f"{(32460 << 16) | 0x2:08x}")
    r = _replay_cli(rdir / "Activities" / "Wait.act", tmp_path / "p")
    assert r.exit_code == 2 and "is no clock time" in r.output
    _assert_located(r.output, pat, line)


def test_reversal_the_train_cannot_make_is_a_located_error(install: Path, tmp_path: Path) -> None:
    """A reversal 20 m ahead of the rear of the train (on Midtby's main track, heading
    west): the train starts past its turning place."""
    rdir = _copy(install, tmp_path)
    pat = rdir / "Paths" / "OneRev_Rev1.pat"
    text = "\n".join(
        [
            "SIMISA@@@@@@@@@@JINX0P0t______",
            "",
            "Serial ( 1 )",
            "TrackPDPs (",
            "\tTrackPDP ( -5631 15118 798.705739 42 100 1 1 )",
            "\tTrackPDP ( -5631 15118 778.705739 42 100 1 1 )",
            "\tTrackPDP ( -5631 15118 898.705739 42 100 1 1 )",
            ")",
            "TrackPath (",
            "\tTrPathName ( OneRev_Rev1 )",
            '\tName ( "Rev1" )',
            '\tTrPathStart ( "a" )',
            '\tTrPathEnd ( "b" )',
            "\tTrPathNodes ( 3",
            "\t\tTrPathNode ( 00000000 1 4294967295 0 )",
            "\t\tTrPathNode ( 00000001 2 4294967295 1 )",
            "\t\tTrPathNode ( 00000000 4294967295 4294967295 2 )",
            "\t)",
            ")",
            "",
        ]
    ).replace("\n", "\r\n")
    _write(pat, text)
    out = tmp_path / "out"
    r = _replay_cli(rdir / "Activities" / "OneRev.act", out)
    assert r.exit_code == 2, r.output
    _assert_located(r.output, pat, 16)
    assert "starts past its reversal at path point 1" in r.output
    assert not out.exists() or not any(out.iterdir())
