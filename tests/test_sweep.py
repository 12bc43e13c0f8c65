"""Parameter sweeps on Dask (tdbtools.sweep).

The cluster tests use ``processes=False`` (two single-threaded workers as threads of
the test process) for speed; one slow test runs the same sweep on worker processes.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import SAMPLE_INSTALL

pytest.importorskip("distributed")

from tdbtools.physics.replay import replay  # noqa: E402
from tdbtools.physics.scenario import ScenarioError, read_scenario  # noqa: E402
from tdbtools.sweep import (  # noqa: E402
    SweepResult,
    plot_sweep,
    read_sweep,
    read_sweep_spec,
    run_sweep,
    sweep_spec_from_text,
)

# step 0.5 s, not the default 0.1: these tests check the sweep (workers, resuming, the
# table), comparing runs of one spec with each other, and its ~50 replays are most of
# the file's time.
SPEC = """\
route = "ROUTES/SAMPLE"
paths = ["Main*.pat", "Siding.pat", "broken.pat"]
consists = ["sample_passenger", "sample_freight", "no_such_consist"]
step = 0.5
duration = 300

[grid]
beyond_path = [0, 100]
"""
N = 3 * 3 * 2


def _make_install(folder: Path) -> Path:
    """A copy of the sample install with a broken path and a sweep spec."""
    inst = folder / "sample"
    shutil.copytree(SAMPLE_INSTALL, inst)
    (inst / "ROUTES" / "SAMPLE" / "PATHS" / "Broken.pat").write_text(
        "SIMISA@@@@@@@@@@JINX0P0t______\r\nnonsense (\r\n", encoding="utf-8"
    )
    (inst / "sweep.toml").write_text(SPEC, encoding="utf-8")
    return inst


@pytest.fixture
def install(tmp_path: Path) -> Path:
    return _make_install(tmp_path)


@dataclass
class FullSweep:
    install: Path
    out: Path
    result: SweepResult
    progress: list[tuple[int, int]]
    log: list[str]


@pytest.fixture(scope="module")
def full_sweep(tmp_path_factory) -> FullSweep:
    """The whole spec swept once on two threaded workers, for the tests that compare
    other runs (resumed, on processes) with it."""
    base = tmp_path_factory.mktemp("full-sweep")
    inst = _make_install(base)
    seen: list[tuple[int, int]] = []
    messages: list[str] = []
    res = run_sweep(
        inst / "sweep.toml",
        out=base / "out",
        workers=2,
        processes=False,
        dashboard=False,
        progress=lambda done, total, rec: seen.append((done, total)),
        log=messages.append,
    )
    return FullSweep(inst, base / "out", res, seen, messages)


def _records(out: Path) -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((out / "results").glob("*.json"))]


# -- the spec -------------------------------------------------------------------------------


def test_spec_expands_in_order(install):
    spec = read_sweep_spec(install / "sweep.toml")
    assert spec.paths == ("Broken.pat", "MainEW.pat", "MainWE.pat", "Siding.pat")  # globs ignore case
    assert len(spec.combinations) == 4 * 3 * 2
    c = spec.combinations[0]
    assert (c.path, c.consist, c.params) == ("Broken.pat", "sample_passenger", {"beyond_path": 0})
    assert c.scenario.trains[0].beyond_path == 0.0 and c.scenario.duration == 300.0
    again = read_sweep_spec(install / "sweep.toml")
    assert [x.key for x in again.combinations] == [x.key for x in spec.combinations]
    assert len({x.key for x in spec.combinations}) == len(spec.combinations)


def test_spec_units_fixed_options_and_schedules(install):
    text = (
        'route = "ROUTES/SAMPLE"\npaths = ["Siding.pat"]\nconsists = ["sample_passenger"]\n'
        '[train]\ndeceleration = 0.4\n[grid]\nmax_speed = ["60km/h", 30]\n'
        "schedule = [ [ {at = 0, throttle = 0.5} ], [ {at = 0, throttle = 1.0}, {at = 30, brake = 0.3} ] ]\n"
    )
    spec = sweep_spec_from_text(text, str(install / "x.toml"), base=install)
    assert len(spec.combinations) == 4
    t = spec.combinations[0].scenario.trains[0]
    assert t.max_speed == pytest.approx(60 / 3.6) and t.deceleration == 0.4 and t.driver == "schedule"
    assert spec.combinations[3].scenario.trains[0].schedule[1].brake == 0.3


@pytest.mark.parametrize(
    "text, message, line",
    [
        (
            'route = "ROUTES/SAMPLE"\npaths = ["*.pat"]\nconsists = ["a"]\n[grid]\nspeed = [1]\n',
            "unknown key 'speed'",
            5,
        ),
        (
            'route = "ROUTES/SAMPLE"\npaths = ["*.pat"]\nconsists = ["a"]\n[grid]\nmax_speed = ["fast"]\n',
            "max_speed",
            5,
        ),
        (
            'route = "ROUTES/SAMPLE"\npaths = ["*.pat"]\nconsists = ["a"]\n[grid]\nbrake_mode = ["soft"]\n',
            "brake_mode",
            5,
        ),
        ('route = "ROUTES/SAMPLE"\npaths = ["x*.pat"]\nconsists = ["a"]\n', "matches no file", 2),
        ('route = "ROUTES/NOPE"\npaths = ["*.pat"]\nconsists = ["a"]\n', "no PATHS folder", 1),
        ('route = "ROUTES/SAMPLE"\npaths = ["*.pat"]\nconsists = []\n', "consists", 3),
        (
            'route = "ROUTES/SAMPLE"\npaths = ["*.pat"]\nconsists = ["a"]\n[train]\nmax_speed = 10\n[grid]\n'
            "max_speed = [1]\n",
            "also fixed",
            5,
        ),
        ('route = "ROUTES/SAMPLE"\npaths = ["*.pat"]\nconsists = ["a"]\nstep = \n', "invalid TOML", 4),
    ],
)
def test_spec_errors_are_located(install, text, message, line):
    with pytest.raises(ScenarioError) as info:
        sweep_spec_from_text(text, "spec.toml", base=install)
    assert message in str(info.value)
    assert info.value.location.line == line


# -- running --------------------------------------------------------------------------------


def test_sweep_on_two_workers_matches_single_replays(full_sweep, tmp_path):
    install, out, res, seen = full_sweep.install, full_sweep.out, full_sweep.result, full_sweep.progress
    assert seen[0] == (0, N + 6) and seen[-1] == (N + 6, N + 6)
    assert res.ran == N + 6 and res.skipped == 0 and res.workers == 2
    rows = res.rows
    assert len(rows) == N + 6
    ok = [r for r in rows if r["status"] == "ok"]
    bad = [r for r in rows if r["status"] == "error"]
    # Broken.pat fails with every consist, no_such_consist on every path: 2*3 + 3*2 = 12.
    assert len(bad) == 12 and len(ok) == 12
    assert all(r["path"] == "Broken.pat" or r["consist"] == "no_such_consist" for r in bad)
    assert any("no_such_consist" in r["error"] and "not found" in r["error"] for r in bad)
    # The route was loaded once per worker, not once per replay.
    loads = sum(r["route_loaded"] for r in _records(out))
    assert 1 <= loads <= 2
    # The same replays one at a time give the same summaries.
    spec = read_sweep_spec(install / "sweep.toml")
    for c, row in zip(spec.combinations, rows):
        assert (row["path"], row["consist"], row["beyond_path"]) == (
            c.path,
            c.consist,
            c.params["beyond_path"],
        )
        if row["status"] != "ok":
            continue
        s = replay(c.scenario).summary["trains"]["train"]
        for k in (
            "running_time_s",
            "distance_m",
            "max_speed_kmh",
            "traction_energy_kwh",
            "braking_energy_kwh",
            "finished",
            "derailed",
            "events",
        ):
            assert row[k] == s[k], (c.path, c.consist, k)
    # ... and one of them written as a plain scenario file gives the same too.
    (install / "one.toml").write_text(
        'route = "ROUTES/SAMPLE"\nstep = 0.5\nduration = 300\n[[train]]\nname = "train"\n'
        'consist = "sample_freight"\npath = "MainWE.pat"\nbeyond_path = 100\n',
        encoding="utf-8",
    )
    s = replay(read_scenario(install / "one.toml")).summary["trains"]["train"]
    row = next(
        r
        for r in rows
        if (r["path"], r["consist"], r["beyond_path"]) == ("MainWE.pat", "sample_freight", 100)
    )
    assert row["running_time_s"] == s["running_time_s"] and row["distance_m"] == s["distance_m"]
    # The table reads back with its types; the summary and the plot.
    back = read_sweep(out)
    assert back.columns == res.columns and back.rows == rows
    text = res.summary_text()
    assert "12 ok, 12 failed" in text and "MainWE.pat" in text
    png = plot_sweep(res, tmp_path / "sweep.png")
    assert png.stat().st_size > 1000


def test_resume_after_interruption(full_sweep, tmp_path):
    spec = read_sweep_spec(full_sweep.install / "sweep.toml")
    total = len(spec.combinations)
    full = full_sweep.result

    out = tmp_path / "resumed"

    def interrupt(done: int, total: int, rec) -> None:
        if done >= total // 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, out=out, workers=2, processes=False, dashboard=False, progress=interrupt)
    first = {r["key"] for r in _records(out)}
    assert len(first) == total // 2
    assert not (out / "sweep.csv").exists()
    ran = []
    res = run_sweep(
        spec,
        out=out,
        workers=2,
        processes=False,
        dashboard=False,
        progress=lambda d, t, rec: rec and ran.append(rec["key"]),
    )
    assert res.skipped == total // 2 and res.ran == total - total // 2
    assert set(ran) == {c.key for c in spec.combinations} - first
    assert (out / "sweep.csv").read_bytes() == (full_sweep.out / "sweep.csv").read_bytes()
    assert res.rows == full.rows
    # Nothing left to do: no cluster is started at all.
    again = run_sweep(spec, out=out, workers=2, processes=False, dashboard=False)
    assert again.ran == 0 and again.skipped == total and again.workers == 0


def test_a_smaller_sweep_reuses_the_results_of_a_larger_one(full_sweep, tmp_path):
    # Results are keyed by combination, not by spec: a smaller spec over the folder of
    # the full sweep finds all its 6 combinations done and starts no cluster.
    out = tmp_path / "out"
    shutil.copytree(full_sweep.out / "results", out / "results")
    small = full_sweep.install / "small.toml"
    small.write_text(
        SPEC.replace('["Main*.pat", "Siding.pat", "broken.pat"]', '["Siding.pat"]'), encoding="utf-8"
    )
    a = run_sweep(small, out=out, workers=1, processes=False, dashboard=False)
    assert a.ran == 0 and a.skipped == 6 and a.workers == 0
    want = [r for r in full_sweep.result.rows if r["path"] == "Siding.pat"]
    assert a.rows == want


def test_traces_on_request(install, tmp_path):
    spec = sweep_spec_from_text(
        'route = "ROUTES/SAMPLE"\npaths = ["Siding.pat"]\nconsists = ["sample_passenger"]\n'
        "duration = 120\ntraces = true\n",
        str(install / "t.toml"),
        base=install,
    )
    res = run_sweep(spec, out=tmp_path / "out", workers=1, processes=False, dashboard=False)
    key = res.rows[0]["key"]
    folder = tmp_path / "out" / "traces" / key
    assert (folder / "train.csv").read_text().startswith("time,distance,speed")
    assert (
        json.loads((folder / "summary.json").read_text())["trains"]["train"]["distance_m"]
        == res.rows[0]["distance_m"]
    )


@pytest.mark.slow
def test_worker_processes_give_the_same_table(full_sweep, tmp_path):
    spec = read_sweep_spec(full_sweep.install / "sweep.toml")
    threads = full_sweep.result
    procs = run_sweep(spec, out=tmp_path / "procs", workers=2, processes=True, dashboard=False)
    assert procs.workers == 2
    assert (tmp_path / "procs" / "sweep.csv").read_bytes() == (full_sweep.out / "sweep.csv").read_bytes()
    assert threads.rows == procs.rows
    loads = sum(r["route_loaded"] for r in _records(tmp_path / "procs"))
    assert 1 <= loads <= 2
    assert all(r["worker"].startswith("tcp://") for r in _records(tmp_path / "procs"))


def test_an_existing_scheduler_gets_the_same_work(install, tmp_path):
    """--scheduler: the sweep goes to a scheduler that is already running (here one this
    test starts, with its own workers) and gives the table a local cluster gives."""
    from dask.distributed import LocalCluster

    spec = sweep_spec_from_text(
        'route = "ROUTES/SAMPLE"\npaths = ["Siding.pat", "MainWE.pat"]\n'
        'consists = ["sample_passenger"]\nduration = 300\n',
        str(install / "s.toml"),
        base=install,
    )
    local = run_sweep(spec, out=tmp_path / "local", workers=1, processes=False, dashboard=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster:
        remote = run_sweep(
            spec, out=tmp_path / "remote", scheduler=cluster.scheduler_address, workers=2, dashboard=False
        )
    assert remote.ran == local.ran == 2
    assert (tmp_path / "remote" / "sweep.csv").read_text() == (tmp_path / "local" / "sweep.csv").read_text()


def test_a_replay_cut_off_by_duration_is_not_ok(install, tmp_path):
    spec = sweep_spec_from_text(
        'route = "ROUTES/SAMPLE"\npaths = ["MainWE.pat"]\nconsists = ["sample_passenger"]\nduration = 20\n',
        str(install / "s.toml"),
        base=install,
    )
    res = run_sweep(spec, out=tmp_path / "out", workers=1, processes=False, dashboard=True)
    (row,) = res.rows
    assert row["status"] == "incomplete" and "duration" in row["error"]
    s = res.summary()
    assert (s["ok"], s["incomplete"]) == (0, 1)
    assert "1 cut off by duration" in res.summary_text() and "running time per path" not in res.summary_text()
