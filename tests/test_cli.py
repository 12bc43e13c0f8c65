"""The click command line: version, help, info, parse, exit codes and messages."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from helpers import DK24_ROUTE, REPO, SAMPLE_ROUTE, needs_dk24

import tdbtools
from tdbtools.cli import main


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_version_and_help():
    r = run("--version")
    assert r.exit_code == 0 and tdbtools.__version__ in r.output
    r = run("--help")
    assert r.exit_code == 0 and "info" in r.output and "parse" in r.output


def test_info_on_the_bundled_sample_route():
    r = run("info")
    assert r.exit_code == 0, r.output
    assert "tdbtools sample route" in r.output and "3 vector, 1 junction, 3 end" in r.output


def test_info_json_keys():
    r = run("info", str(SAMPLE_ROUTE), "--json", "--no-cache")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["nodes"] == {"vector": 3, "junction": 1, "end": 3, "total": 7}
    assert d["sections"] == 17 and d["items"]["signal"] == 3
    assert {"track_km", "tile_extent", "load_seconds", "name"} <= d.keys()


@needs_dk24
def test_info_on_dk24():
    r = run("info", str(DK24_ROUTE), "--json")
    d = json.loads(r.output)
    assert d["nodes"] == {"vector": 1381, "junction": 819, "end": 321, "total": 2521}
    assert d["sections"] == 18562
    assert d["items"] == {"crossover": 124, "platform": 6, "signal": 95, "speedpost": 102}


def test_bad_input_is_a_message_and_exit_2(tmp_path):
    r = run("info", str(tmp_path / "missing"))
    assert r.exit_code == 2 and r.stderr.startswith("error:") and "Traceback" not in r.output
    bad = tmp_path / "bad.dat"
    bad.write_text("SIMISA@@@@@@@@@@JINX0T0t______\nA ( 1\n")
    r = run("parse", str(bad))
    assert r.exit_code == 2
    assert f"{bad}:2:3: unexpected end of file" in r.stderr and "^" in r.stderr


def test_usage_error_is_exit_2():
    assert run("info", "--bogus").exit_code == 2
    assert run("nosuchcommand").exit_code == 2


def test_parse_prints_stf_and_json(tmp_path):
    f = SAMPLE_ROUTE / "SAMPLE.trk"
    r = run("parse", str(f))
    assert r.exit_code == 0 and r.output.startswith("SIMISA@@@@@@@@@@JINX0r1t______")
    out = tmp_path / "again.trk"
    out.write_text(r.output, encoding="utf-8")
    assert tdbtools.stf.parse_file(out) == tdbtools.stf.parse_file(f)
    d = json.loads(run("parse", str(f), "--json").output)
    assert d["items"][0]["name"] == "Tr_RouteFile"


def test_console_script_runs_as_a_module():
    # The installed entry point and `python -m tdbtools.cli` are the same function.
    p = subprocess.run(
        [sys.executable, "-m", "tdbtools.cli", "info", str(SAMPLE_ROUTE), "--no-cache"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "7: 3 vector" in p.stdout
