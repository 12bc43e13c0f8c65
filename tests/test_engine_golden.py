"""The engine's traces stay what they were before the speed work (issue 16), bit for bit,
on each of its code paths (Python floats for few groups, numpy for many, the compiled kernel)."""

from __future__ import annotations

import numpy as np
import pytest
from engine_scenarios import GOLDEN, SCENARIOS, trace

import tdbtools.physics.engine as engine_mod
import tdbtools.physics.engine_groups as engine_groups
import tdbtools.physics.joints as joints_mod


def _check(name: str) -> None:
    gold = np.load(GOLDEN)
    tr = trace(name)
    for key, arr in tr.items():
        ref = gold[f"{name}/{key}"]
        assert arr.shape == ref.shape, f"{name}/{key}: shape {arr.shape} != {ref.shape}"
        if not np.array_equal(arr, ref):
            bad = np.argwhere(arr != ref)[0]
            raise AssertionError(
                f"{name}/{key} differs first at {tuple(bad)}: {arr[tuple(bad)]!r} != {ref[tuple(bad)]!r}"
            )


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_traces_match_the_golden_engine(name, implementation):
    """On the compiled kernel and on the Python/numpy code (the ``implementation``
    fixture: the TDBTOOLS_PURE_PYTHON switch), the same traces bit for bit."""
    _check(name)


@pytest.mark.parametrize("small", [0, 10**9], ids=["numpy-path", "scalar-path"])
@pytest.mark.parametrize("name", ["train_21", "shunting", "many_trains"])
def test_scalar_and_numpy_paths_give_the_same_traces(name, small, monkeypatch):
    monkeypatch.setattr(engine_mod, "COMPILED_MIN_CARS", 10**9)
    monkeypatch.setattr(engine_groups, "SMALL", small)
    _check(name)


@pytest.mark.parametrize("name", ["train_21", "shunting"])
def test_long_run_check_gives_the_same_traces(name, monkeypatch):
    # every run checked with the cumulative-sum path of _solve_chain, not only long ones
    monkeypatch.setattr(engine_mod, "COMPILED_MIN_CARS", 10**9)
    monkeypatch.setattr(joints_mod, "_CHAIN_NUMPY", 0)
    _check(name)
