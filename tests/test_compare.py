"""tdbtools compare: reading traces (ours and Open Rails' locale-quirked CSV) and the
per-phase speed errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from tdbtools.cli import main
from tdbtools.physics.compare import TraceError, compare_traces, read_trace


def _ours(path, t, v, throttle=None, brake=None):
    lines = ["time,distance,speed,acceleration,throttle,brake"]
    d = np.concatenate([[0.0], np.cumsum(0.5 * (v[1:] + v[:-1]) * np.diff(t))])
    thr = throttle if throttle is not None else np.zeros_like(t)
    brk = brake if brake is not None else np.zeros_like(t)
    for row in zip(t, d, v, np.zeros_like(t), thr, brk):
        lines.append(",".join(f"{x:.6g}" for x in row))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_semicolon_decimal_comma_kmh(tmp_path):
    p = tmp_path / "dump.csv"
    p.write_text("Time (s);Speed (km/h);Distance (km)\n0;0,0;0,000\n1,5;36,0;0,0125\n3;72;1.234,5\n")
    tr = read_trace(p)
    assert tr.time.tolist() == [0.0, 1.5, 3.0]
    assert tr.speed.tolist() == pytest.approx([0.0, 10.0, 20.0])
    assert tr.distance.tolist() == pytest.approx([0.0, 12.5, 1234500.0])


def test_comma_separated_with_decimal_commas(tmp_path):
    """Open Rails on a decimal-comma locale with a ',' separator: every number is split in
    two; the pairs are joined back."""
    p = tmp_path / "dump.csv"
    p.write_text("Time,Speed [mph]\n0,0,0,0\n1,5,10,0\n")
    tr = read_trace(p)
    assert tr.time.tolist() == [0.0, 1.5]
    assert tr.speed.tolist() == pytest.approx([0.0, 4.4704])


def test_clock_times_and_utf16(tmp_path):
    p = tmp_path / "eval.csv"
    p.write_bytes("\ufeffclock;spd_kmh\r\n10:00:00;0\r\n10:00:10;36\r\n".encode("utf-16-le"))
    tr = read_trace(p)
    assert tr.time[1] - tr.time[0] == 10.0 and tr.speed[1] == pytest.approx(10.0)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("a,b\n1,2\n", "no time column"),
        ("time,speed\n0,x\n1,2\n", "not a number"),
        ("time,speed\n1,0\n0,2\n", "backwards"),
        ("time,speed (furlong/s)\n0,0\n", "unknown unit"),
        ("", "empty"),
    ],
)
def test_bad_traces(tmp_path, text, match):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(TraceError, match=match):
        read_trace(p)


def test_phase_errors(tmp_path):
    t = np.arange(0.0, 60.0, 0.5)
    v = np.minimum(t, 20.0) + 1.0
    thr = (t < 20).astype(float)
    a = read_trace(_ours(tmp_path / "a.csv", t, v, throttle=thr))
    b = read_trace(_ours(tmp_path / "b.csv", t, v - 0.5 * thr))  # 0.5 m/s slower while pulling
    cmp = compare_traces(a, b)
    by = {s.phase: s for s in cmp.phases}
    assert by["traction"].rms == pytest.approx(0.5) and by["traction"].bias == pytest.approx(0.5)
    assert by["coasting"].rms == pytest.approx(0.0)
    assert cmp.overall.max_abs == pytest.approx(0.5)
    dist = compare_traces(a, a, axis="distance")
    assert dist.overall.rms == 0.0


def test_phases_from_acceleration(tmp_path):
    t = np.arange(0.0, 40.0, 0.5)
    v = np.where(t < 20, 0.5 * t, np.maximum(10.0 - 0.5 * (t - 20), 0.0))
    p = tmp_path / "or.csv"
    p.write_text("time;speed\n" + "".join(f"{x:g};{y:g}\n".replace(".", ",") for x, y in zip(t, v)))
    b = read_trace(p)
    q = tmp_path / "ours.csv"
    q.write_text("time,speed\n" + "".join(f"{x:g},{y:g}\n" for x, y in zip(t, v)))
    cmp = compare_traces(read_trace(q), b)
    names = {s.phase for s in cmp.phases}
    assert {"traction", "braking"} <= names and cmp.overall.rms == 0.0


def test_cli(tmp_path):
    t = np.arange(0.0, 10.0, 0.5)
    a = _ours(tmp_path / "a.csv", t, t)
    b = _ours(tmp_path / "b.csv", t, t + 0.1)
    out = tmp_path / "cmp.png"
    r = CliRunner().invoke(main, ["compare", str(a), str(b), "--plot", str(out)])
    assert r.exit_code == 0, r.output
    assert "all" in r.output and "-0.100" in r.output and out.stat().st_size > 0
    bad = tmp_path / "bad.csv"
    bad.write_text("nothing\n")
    r = CliRunner().invoke(main, ["compare", str(a), str(bad)])
    assert r.exit_code != 0 and "no time column" in r.output and "Traceback" not in r.output


def test_cli_grammar_plot_flag_out_overwrite_and_json(tmp_path):
    t = np.arange(0.0, 10.0, 0.5)
    a = _ours(tmp_path / "a.csv", t, t)
    b = _ours(tmp_path / "b.csv", t, t + 0.1)
    out = tmp_path / "speeds.png"
    r = CliRunner().invoke(main, ["compare", str(a), str(b), "--plot", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 0 and "deprecated" not in r.output
    # an existing picture is refused before any work, as by every writer
    r = CliRunner().invoke(main, ["compare", str(a), str(b), "--plot", "--out", str(out)])
    assert r.exit_code == 2 and "--overwrite" in r.output
    r = CliRunner().invoke(main, ["compare", str(a), str(b), "--plot", "--out", str(out), "--overwrite"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["compare", str(a), str(b), "--out", str(out)])
    assert r.exit_code == 2 and "--plot" in r.output
    r = CliRunner().invoke(main, ["compare", str(a), str(b), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["schema"] == "tdbtools.compare/1" and d["axis"] == "time" and d["files"] == []
    assert d["overall"]["bias_mps"] == pytest.approx(-0.1) and d["overall"]["rms_mps"] == pytest.approx(0.1)


def test_run_traces_compare(tmp_path):
    """A run of the Open Rails profile written as CSV reads back and compares: the same
    DMU with its engines' run-up against one whose force came at once differs in the
    start phase only."""
    from dataclasses import replace
    from pathlib import Path

    from tdbtools.formats.stock import read_stock
    from tdbtools.physics.orts.run import Command, run_train

    dmu = read_stock(Path(__file__).parent / "data" / "orts_stock" / "dmu" / "DMU_A.eng")
    instant = replace(dmu, orts=replace(dmu.orts, diesel_engines=()))
    cmds = [Command(0.0, throttle=1.0)]
    a = tmp_path / "a.csv"
    b = tmp_path / "b.csv"
    a.write_text(run_train([dmu, dmu], cmds, seconds=60.0).to_csv())
    b.write_text(run_train([instant, instant], cmds, seconds=60.0).to_csv())
    cmp = compare_traces(read_trace(a), read_trace(b))
    assert cmp.overall.bias < 0 < cmp.overall.rms  # the engines' run-up makes it slower
    assert read_trace(a).force is not None
