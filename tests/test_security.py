"""Hostile files and settings (issue 15, docs/security.md): every test here failed on
the code before the fix it guards."""
from __future__ import annotations

import os
import stat
import time
import tracemalloc
from pathlib import Path

import pytest

from tdbtools import _fs
from tdbtools.errors import DecodeError, Diagnostics, IncludeError
from tdbtools.stf import parse_file


def _load_hostile():
    import importlib.util

    spec = importlib.util.spec_from_file_location("_tdbtools_hostile", Path(__file__).parent / "data" / "hostile.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


hostile = _load_hostile()

# -- outputs (docs/security.md §5) ------------------------------------------------------


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_new_file_follows_umask(tmp_path):
    old = os.umask(0o022)
    try:
        _fs.write_bytes_atomic(tmp_path / "a.txt", b"x")
        os.umask(0o077)
        _fs.write_bytes_atomic(tmp_path / "b.txt", b"x")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a.txt") == 0o644
    assert _mode(tmp_path / "b.txt") == 0o600


def test_existing_file_keeps_its_mode(tmp_path):
    p = tmp_path / "keep.txt"
    p.write_bytes(b"old")
    p.chmod(0o640)
    _fs.write_bytes_atomic(p, b"new")
    assert p.read_bytes() == b"new" and _mode(p) == 0o640


def test_stale_temporary_files_are_removed_on_next_write(tmp_path):
    stale = tmp_path / ".out.csv.abc123.tmp"
    fresh = tmp_path / ".out.csv.def456.tmp"
    other = tmp_path / ".other.csv.xyz.tmp"
    for p in (stale, fresh, other):
        p.write_bytes(b"half")
    old = time.time() - 2 * _fs.STALE_TEMP_SECONDS
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    _fs.write_bytes_atomic(tmp_path / "out.csv", b"a,b\n")
    assert not stale.exists()
    assert fresh.exists(), "a temporary file of a live writer must survive"
    assert other.exists(), "only temporaries of the target being written are touched"


def test_one_overwrite_rule(tmp_path):
    p = tmp_path / "x.csv"
    assert _fs.check_target(p, False) == p
    p.write_text("1")
    with pytest.raises(_fs.OutputExistsError, match="exists"):
        _fs.check_target(p, False)
    assert _fs.check_target(p, True) == p
    with pytest.raises(_fs.OutputExistsError, match="folder"):
        _fs.check_target(tmp_path, True)
    with pytest.raises(_fs.OutputExistsError, match="does not exist"):
        _fs.check_target(tmp_path / "no" / "x.csv", True)


@pytest.mark.parametrize("name, want", [
    ("DK24", "DK24"), ("../../etc/passwd", "passwd"), ("/abs/x", "x"), ("..", "route"),
    ("C:\\Windows\\evil", "evil"), ("a/..", "route"), ("CON", "_CON"), ("nul.txt", "_nul.txt"),
    ("", "route"), ("a\x00b", "a_b"), ("x" * 500, "x" * 120),
])
def test_safe_basename(name, want):
    assert _fs.safe_basename(name) == want


# -- bounded inflation (docs/security.md §4) --------------------------------------------


def test_default_limits_refuse_a_bomb_fast_and_small(tmp_path):
    # ~200 kB that inflates to 200 MB: the old 1 GiB cap inflated it all (and more).
    path = hostile.write_bomb(tmp_path / "tsection.dat", 200 << 20)
    assert path.stat().st_size < 400_000
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(DecodeError, match="zip bomb"):
            parse_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - t0 < 2.0
    assert peak < 150 << 20, f"peak {peak / 1e6:.0f} MB"


def test_real_ratio_under_the_limit_is_read(tmp_path):
    from tdbtools.stf import source

    text = "".join(f"A ( {i} {i * 7 % 13} )\r\n" for i in range(20000))
    data = hostile.bomb_bytes(0)[:16] + __import__("zlib").compress(
        b"JINX0T0t______\r\n" + text.encode("ascii"))
    p = tmp_path / "ok.dat"
    p.write_bytes(data)
    assert len(text) / (len(data) - 16) < source.MAX_INFLATE_RATIO
    doc = parse_file(p)
    assert len(doc.items) == 20000


# -- include confinement (docs/security.md §3) ------------------------------------------


SIG = "SIMISA@@@@@@@@@@JINX0P0t______\n\n"


def _write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def test_lone_file_cannot_include_above_its_folder(tmp_path):
    # A home folder with a Trains folder: the old rule took it for an install root.
    home = tmp_path / "home"
    (home / "Trains").mkdir(parents=True)
    secret = _write(home / ".ssh" / "id_rsa", SIG + "Key ( SECRET )\n")
    pat = _write(home / "Downloads" / "evil.pat",
                 "SIMISA@@@@@@@@@@JINX0P0t______\n\ninclude ( ../.ssh/id_rsa )\n")
    with pytest.raises(IncludeError, match="outside"):
        parse_file(pat)
    diags = Diagnostics(strict=False)
    doc = parse_file(pat, diagnostics=diags)
    assert "SECRET" not in repr(doc.items)
    # An explicit root allows it.
    assert parse_file(pat, root=home).find("Key").items == ["SECRET"]
    assert secret.exists()


def test_lone_file_may_include_below_its_folder(tmp_path):
    _write(tmp_path / "parts" / "a.inc", SIG + "A ( 1 )\n")
    top = _write(tmp_path / "top.dat", "SIMISA@@@@@@@@@@JINX0P0t______\n\ninclude ( parts/a.inc )\n")
    assert parse_file(top).find("A").items == ["1"]


def test_install_includes_stay_in_the_install(tmp_path):
    inst = tmp_path / "inst"
    (inst / "Global").mkdir(parents=True)
    _write(inst / "GLOBAL" / "common.inc", SIG + "C ( 2 )\n")
    _write(tmp_path / "outside.inc", SIG + "O ( 3 )\n")
    f = _write(inst / "routes" / "R" / "x.dat",
               "SIMISA@@@@@@@@@@JINX0P0t______\n\ninclude ( ../../GLOBAL/common.inc )\n")
    assert parse_file(f).find("C").items == ["2"]
    g = _write(inst / "routes" / "R" / "y.dat",
               "SIMISA@@@@@@@@@@JINX0P0t______\n\ninclude ( ../../../outside.inc )\n")
    with pytest.raises(IncludeError, match="outside"):
        parse_file(g)


def test_cli_parse_root_option(tmp_path):
    from click.testing import CliRunner

    from tdbtools.cli import main

    home = tmp_path / "home"
    (home / "Trains").mkdir(parents=True)
    _write(home / ".ssh" / "id_rsa", SIG + "Key ( SECRET )\n")
    pat = _write(home / "Downloads" / "evil.pat",
                 "SIMISA@@@@@@@@@@JINX0P0t______\n\ninclude ( ../.ssh/id_rsa )\n")
    r = CliRunner().invoke(main, ["parse", str(pat)])
    assert r.exit_code == 2 and "SECRET" not in r.output
    r = CliRunner().invoke(main, ["parse", "--root", str(home), str(pat)])
    assert r.exit_code == 0 and "SECRET" in r.output
