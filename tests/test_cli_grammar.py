"""One grammar for the command line (README, "One grammar"): world points, --plot,
--spacing/--step, --fail-on/--strict, --overwrite, --json only on stdout, checks before
any work or output, and the old spellings as warned aliases."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import SAMPLE_INSTALL, SAMPLE_ROUTE

from tdbtools.cli import main

POINT = "-5631,15116,-43,-364.7"  # on node 2 of the sample route


def run(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_locate_takes_one_world_point_and_the_old_pair_with_a_warning():
    new = run("locate", SAMPLE_ROUTE, "--at", POINT, "--json")
    assert new.exit_code == 0 and new.stderr == "", new.output
    old = run("locate", SAMPLE_ROUTE, "--tile", "-5631", "15116", "--pos", "-43", "-364.7", "--json")
    assert old.exit_code == 0, old.output
    assert "deprecated" in old.stderr and "--at TX,TZ,X,Z" in old.stderr
    assert json.loads(old.stdout) == json.loads(new.stdout)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--at", "1 2 3 4"], "not a world point TX,TZ,X,Z"),
        (["--at", "1,2,3"], "not a world point"),
        (["--at", "1.5,2,3,4"], "not a world point"),
        (["--at", "1,2,nan,4"], "out of range"),
        ([], "--at TX,TZ,X,Z"),
        (["--at", POINT, "--tile", "1", "2", "--pos", "3", "4"], "not both"),
        (["--tile", "1", "2"], "go together"),
    ],
)
def test_bad_world_points_are_usage_errors(args, message):
    r = run("locate", SAMPLE_ROUTE, *args)
    assert r.exit_code == 2 and message in r.output, r.output


def test_profile_from_a_point_with_spacing_and_the_old_spellings(tmp_path):
    new = run("profile", SAMPLE_ROUTE, "--from", POINT, "--distance", "100", "--spacing", "5", "--json")
    assert new.exit_code == 0 and new.stderr == "", new.output
    d = json.loads(new.stdout)
    assert d["schema"] == "tdbtools.profile/1" and d["spacing_m"] == 5.0 and d["samples"] == 21
    old = run(
        "profile", SAMPLE_ROUTE, "--from-tile", "-5631", "15116", "--from-pos", "-43", "-364.7",
        "--distance", "100", "--step", "5", "--json",
    )  # fmt: skip
    assert old.exit_code == 0, old.output
    assert old.stderr.count("deprecated") == 2 and "--spacing" in old.stderr
    assert json.loads(old.stdout) == d


def test_profile_plot_is_a_flag_beside_out_and_a_file_for_one_release(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "p.csv"
    r = run("profile", SAMPLE_ROUTE, "--path", "MainWE.pat", "--out", out, "--plot")
    assert r.exit_code == 0 and r.stderr == "", r.output
    assert out.is_file() and (tmp_path / "p.png").is_file()
    again = run("profile", SAMPLE_ROUTE, "--path", "MainWE.pat", "--out", out, "--plot")
    assert again.exit_code == 2 and "not overwritten" in again.stderr
    old = run(
        "profile",
        SAMPLE_ROUTE,
        "--path",
        "MainWE.pat",
        "--csv",
        tmp_path / "o.csv",
        "--plot",
        tmp_path / "o.png",
    )
    assert old.exit_code == 0 and old.stderr.count("deprecated") == 2, old.output
    assert (tmp_path / "o.png").is_file()


def test_export_spacing_and_the_old_step(tmp_path):
    a = run("export", SAMPLE_ROUTE, "--format", "csv", "--spacing", "50")
    b = run("export", SAMPLE_ROUTE, "--format", "csv", "--step", "50")
    assert a.exit_code == b.exit_code == 0
    assert a.stdout == b.stdout and "deprecated" in b.stderr and a.stderr == ""


def test_audit_fail_on_and_the_old_strict(monkeypatch):
    from tdbtools.track.audit import AuditReport

    asked: list[str] = []
    real = AuditReport.problems

    def problems(self, min_severity="warning"):  # noqa: ANN001, ANN202
        asked.append(min_severity)
        return real(self, min_severity)

    monkeypatch.setattr(AuditReport, "problems", problems)
    default = run("audit", SAMPLE_ROUTE, "--no-paths")
    warning = run("audit", SAMPLE_ROUTE, "--no-paths", "--fail-on", "warning")
    old = run("audit", SAMPLE_ROUTE, "--no-paths", "--strict")
    assert default.exit_code == warning.exit_code == old.exit_code == 0
    assert asked == ["error", "warning", "warning"]
    assert "deprecated" in old.stderr and "--fail-on warning" in old.stderr and default.stderr == ""


def test_path_refuses_to_overwrite_and_warns_on_a_spaced_point(tmp_path):
    out = tmp_path / "x.pat"
    first = run("path", SAMPLE_ROUTE, "--from", "Sampleby", "--to", "1", "--out", out)
    assert first.exit_code == 0, first.output
    before = out.read_bytes()
    again = run("path", SAMPLE_ROUTE, "--from", "Sampleby", "--to", "5", "--out", out)
    assert again.exit_code == 2 and "not overwritten" in again.stderr
    assert out.read_bytes() == before
    forced = run("path", SAMPLE_ROUTE, "--from", "Sampleby", "--to", "5", "--out", out, "--overwrite")
    assert forced.exit_code == 0 and out.read_bytes() != before
    spaced = run(
        "path", SAMPLE_ROUTE, "--from", "-5631 15116 -43 -364.7", "--to", "1", "--out", tmp_path / "y.pat"
    )
    assert spaced.exit_code == 0, spaced.output
    assert "deprecated" in spaced.stderr and POINT in spaced.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--route", "R"], "go together"),
        (["x.toml", "--route", "R", "--consist", "C", "--path", "P"], "not both"),
        (["nothing.toml"], "is not a file"),
        (["a.act", "--cars"], "activity replay takes no"),
        (["a.act", "--beyond-path", "10"], "activity replay takes no"),
        (["--step", "0"], "step"),
    ],
)
def test_replay_names_the_mistake_before_the_output_folder(tmp_path, monkeypatch, args, message):
    """After the quick start, replay-out holds files: a mistake must still be named as
    itself, not as 'output folder is not empty' (and nothing is written)."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "replay-out"
    out.mkdir()
    (out / "summary.json").write_text("{}", encoding="utf-8")
    r = run("replay", *args)
    assert r.exit_code == 2, r.output
    assert message in r.output and "not empty" not in r.output
    assert [p.name for p in out.iterdir()] == ["summary.json"]


def test_missing_extras_are_found_before_any_work(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a)
    )
    out = tmp_path / "o"
    r = run("replay", "--plot", "--out", out)
    assert r.exit_code == 2 and "tdbtools[plot]" in r.output and "matplotlib" in r.output
    assert not out.exists()  # nothing written
    r = run("profile", SAMPLE_ROUTE, "--path", "MainWE.pat", "--out", tmp_path / "p.csv", "--plot")
    assert r.exit_code == 2 and not (tmp_path / "p.csv").exists()


def test_replay_json_is_only_json(tmp_path):
    r = run("replay", "--out", tmp_path / "o", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["schema"] == "tdbtools.replay/1" and d["failed"] is False
    assert set(d["summary"]["trains"]) == {"passenger"} and len(d["files"]) == 4
    assert Path(d["files"][-1]).name == "manifest.json"  # written last (docs/security.md)


def test_sweep_json_is_only_json(tmp_path):
    pytest.importorskip("distributed")
    inst = tmp_path / "sample"
    shutil.copytree(SAMPLE_INSTALL, inst)
    spec = inst / "s.toml"
    spec.write_text(
        'route = "ROUTES/SAMPLE"\npaths = ["MainWE.pat"]\nconsists = ["sample_passenger"]\nduration = 120\n',
        encoding="utf-8",
    )
    r = run("sweep", spec, "--workers", "1", "--out", tmp_path / "out", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)  # nothing but the object
    assert (
        d["schema"] == "tdbtools.sweep/1"
        and d["ok"] == 1
        and Path(d["table"]).is_file()
        and d["plot"] is None
    )


def test_every_reporting_command_prints_a_versioned_schema(tmp_path):
    for args in (
        ["info", SAMPLE_ROUTE],
        ["parse", SAMPLE_ROUTE / "SAMPLE.trk"],
        ["audit", SAMPLE_ROUTE],
        ["locate", SAMPLE_ROUTE, "--at", POINT],
        ["path", SAMPLE_ROUTE, "--from", "Sampleby", "--to", "1", "--out", tmp_path / "p.pat"],
        ["profile", SAMPLE_ROUTE, "--path", "MainWE.pat"],
        ["signals", SAMPLE_ROUTE],
        ["compile"],
    ):
        r = run(*args, "--json")
        assert r.exit_code in (0, 1), r.output
        d = json.loads(r.stdout)
        assert next(iter(d)) == "schema" and d["schema"] == f"tdbtools.{args[0]}/1", args


def test_compile_and_the_first_time_notice(monkeypatch, tmp_path):
    from tdbtools.physics import compiled

    r = run("compile")
    assert r.exit_code == 0, r.output
    if not compiled.compiled_available():
        assert "nothing to compile" in r.output
        return
    assert "engine" in r.stdout and "step" in r.stdout
    # A replay that will compile the kernels says so on stderr, in one line, group by group.
    monkeypatch.setattr(compiled, "kernels_cached", lambda: False)
    r = run("replay", "--out", tmp_path / "o", "--duration", "5")
    assert r.exit_code == 0, r.output
    (line,) = [x for x in r.stderr.splitlines() if "numba" in x]
    assert "tdbtools compile" in line and all(g in line for g in compiled.KERNEL_GROUPS) and "done in" in line
    monkeypatch.setattr(compiled, "kernels_cached", lambda: True)
    r = run("replay", "--out", tmp_path / "o2", "--duration", "5")
    assert "numba" not in r.stderr


def test_kernels_cached_reads_numbas_index_files(tmp_path, monkeypatch):
    import os
    import sys

    from tdbtools.physics import compiled

    if not compiled.compiled_available():
        assert compiled.kernels_cached(tmp_path)  # nothing to compile
        return
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    tag = f"py{sys.version_info[0]}{sys.version_info[1]}"
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    for mod in compiled._KERNEL_MODULES:
        (tmp_path / f"{mod}.py").write_text("# kernel\n")
    assert not compiled.kernels_cached(tmp_path)  # nothing compiled yet
    for mod in compiled._KERNEL_MODULES:
        (cache / f"{mod}.f-1.{tag}.nbi").write_bytes(b"")
    assert compiled.kernels_cached(tmp_path)
    # A module edited after its machine code was cached: numba compiles it again.
    src = tmp_path / f"{compiled._KERNEL_MODULES[0]}.py"
    later = src.stat().st_mtime + 100
    os.utime(src, (later, later))
    assert not compiled.kernels_cached(tmp_path)
    # Another Python's cache does not count.
    for f in cache.iterdir():
        f.rename(cache / f.name.replace(tag, "py27"))
    os.utime(src, (later - 200, later - 200))
    assert not compiled.kernels_cached(tmp_path)
