"""The vectorised interaction times against the scalar ones on the edge cases, bit for
bit (the module promises the same results element by element): exact thresholds, zero
distances and the sign of zero. Written for the mutation run of issue 11
(docs/mutation.md)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from tdbtools.physics.interaction import (
    LINEAR_EPS,
    STOP_EPS,
    clash_time,
    clash_times,
    stopping_time,
    stopping_times,
)


def _same(a: float, b: float) -> bool:
    """Equal including the sign of zero and infinities."""
    if math.isinf(a) or math.isinf(b):
        return a == b
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


# speeds and accelerations on and around the thresholds (2·LINEAR_EPS: |A| = LINEAR_EPS)
SPEEDS = (-1.0, 0.0, LINEAR_EPS, 1.0)
ACCS = (-2.0, 0.0, 2 * LINEAR_EPS, 2.0)
GAPS = (0.0, 1.0, 1000.0)


def test_clash_times_equal_clash_time_on_every_edge_case():
    cases = list(itertools.product(GAPS, SPEEDS, SPEEDS, ACCS, ACCS))
    s, v1, v2, a1, a2 = (np.array(c) for c in zip(*cases))
    got = clash_times(s, v1, v2, a1, a2)
    assert got.dtype == np.float64 and got.shape == (len(cases),)
    bad = [(c, g, clash_time(*c)) for c, g in zip(cases, got.tolist()) if not _same(g, clash_time(*c))]
    assert bad == []


@pytest.mark.parametrize("linear", [True, False])
def test_clash_times_equal_clash_time_when_all_share_a_branch(linear):
    """All linear, or none: the vectorised code takes its no-gather shortcuts."""
    acc = (0.0,) if linear else (-2.0, 2 * LINEAR_EPS, 2.0)
    cases = [c for c in itertools.product(GAPS, SPEEDS, SPEEDS, acc, (0.0,))]
    s, v1, v2, a1, a2 = (np.array(c) for c in zip(*cases))
    got = clash_times(s, v1, v2, a1, a2).tolist()
    assert all(_same(g, clash_time(*c)) for c, g in zip(cases, got))


def test_clash_time_thresholds():
    # |A| exactly LINEAR_EPS is quadratic: 1e-6·t² + t = 1000
    t = (-1.0 + math.sqrt(1.0 + 4e-6 * 1000.0)) / 2e-6
    assert clash_times([1000.0], [1.0], [0.0], [2 * LINEAR_EPS], [0.0])[0] == pytest.approx(t, rel=1e-12)
    assert t < 999.01
    # |B| exactly LINEAR_EPS is a (slow) approach, not "never"
    assert clash_times([1.0], [LINEAR_EPS], [0.0], [0.0], [0.0])[0] == pytest.approx(1e6)
    assert clash_times([0.0], [0.0], [1.0], [-2.0], [0.0])[0] == 0.0  # touching already
    assert math.copysign(1.0, clash_times([0.0], [0.0], [1.0], [-2.0], [0.0])[0]) == 1.0
    assert math.copysign(1.0, clash_times([0.0], [0.0], [1.0], [0.0], [0.0])[0]) == 1.0
    # broadcasting a scalar gap against arrays
    got = clash_times(10.0, np.array([1.0, 2.0]), 0.0, 0.0, 0.0)
    assert got.tolist() == [10.0, 5.0]


def test_stopping_times_equal_stopping_time_on_every_edge_case():
    cases = list(
        itertools.product((0.0, STOP_EPS, 1.0, -1.0), (-1.0, -STOP_EPS, 0.0, STOP_EPS, 1.0), (-1.0, 0.0, 1.0))
    )
    fr, oth, v = (np.array(c) for c in zip(*cases))
    got = stopping_times(fr, oth, v)
    bad = [(c, g, stopping_time(*c)) for c, g in zip(cases, got.tolist()) if not _same(g, stopping_time(*c))]
    assert bad == []
    # |a| exactly STOP_EPS still stops: 1 m/s against 1e-7 m/s² takes 1e7 s
    assert stopping_times([0.0], [STOP_EPS], [-1.0])[0] == pytest.approx(1e7)
    assert stopping_times(0.5, 0.0, 2.0).item() == 4.0  # 0-d in, 0-d out
