"""Where a replay runs the compiled kernels (kernels.replay_compiled, issue 31): from its
work on, cars × steps of its duration, and never when numba is missing or the
TDBTOOLS_PURE_PYTHON switch is on; the outputs are the same either way, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import SAMPLE_INSTALL

from tdbtools.physics import kernels
from tdbtools.physics.replay import Replay
from tdbtools.physics.scenario import read_scenario


def test_the_choice_is_the_replays_work(package_threshold, monkeypatch):
    monkeypatch.setattr(kernels, "compiled_available", lambda: True)
    assert not kernels.replay_compiled(1, package_threshold - 1)
    assert kernels.replay_compiled(1, package_threshold)
    assert kernels.replay_compiled(package_threshold, 1.0)
    # the sample replay (7 cars, 600 s at 0.1 s) below; the shunt (23 cars, 240 s at 0.05 s) above
    assert not kernels.replay_compiled(7, 6000)
    assert kernels.replay_compiled(23, 4800)
    monkeypatch.setattr(kernels, "compiled_available", lambda: False)
    assert not kernels.replay_compiled(23, 4800)  # (no numba, or the switch: never)


def test_the_choice_is_made_once_for_every_stage(package_threshold):
    small = Replay(read_scenario(SAMPLE_INSTALL / "replay.toml"))
    assert small.layout.compiled is False
    assert not small.engine.compiled and small.forces.ck is None and small.layout.lines.boxes_near is None
    big = Replay(read_scenario(SAMPLE_INSTALL / "shunt.toml"))
    assert big.layout.compiled is kernels.compiled_available()
    assert big.engine.compiled is big.layout.compiled
    assert (big.layout.lines.boxes_near is not None) is big.layout.compiled


def _outputs(name: str):
    res = Replay(read_scenario(SAMPLE_INSTALL / name)).run()
    summary = {k: v for k, v in res.summary.items() if k not in ("wall_seconds", "realtime_factor")}
    traces = {t: {c: np.asarray(v).tobytes() for c, v in cols.items()} for t, cols in res.traces.items()}
    return summary, traces, [repr(e) for e in res.events]


def test_the_choice_changes_no_output(package_threshold, monkeypatch):
    """The sample replay on its own choice (the reference code) and on the kernels (a
    threshold of 0): the same summary, traces and events, bit for bit."""
    pytest.importorskip("numba", reason="compares the kernels with the reference code")
    if kernels.pure_python_requested():
        pytest.skip("the whole run is on the reference code (TDBTOOLS_PURE_PYTHON)")
    own = _outputs("replay.toml")
    monkeypatch.setattr(kernels, "COMPILED_MIN_WORK", 0)
    forced = _outputs("replay.toml")
    assert own == forced
