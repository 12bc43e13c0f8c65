"""The line table's one-go lookups (``LineTable.on_lines``, numpy, and its compiled
``_lookup_kernel.on_lines``) where the global distances round: with lines placed far
along the global distance (a gap of 2⁵³ m between them), the global table cannot tell
the samples of a line apart, and only the settling onto each line's own distances gives
the line's own answer. Both paths against each line's own lookups, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import SAMPLE_PATHS, SAMPLE_ROUTE

from tdbtools.formats import load_route
from tdbtools.physics.kernels import compiled_available
from tdbtools.physics.stages.linetable import LineTable
from tdbtools.physics.trackline import TrackLine


class _FarApart(LineTable):
    GAP = 2.0**53  # (the doubles there are 2 m apart: the global table rounds every sample)


@pytest.fixture(scope="module")
def lines():
    route = load_route(SAMPLE_ROUTE, cache=False)
    return [TrackLine.from_path(route, SAMPLE_PATHS / f"{p}.pat") for p in ("MainWE", "Siding", "MainEW")]


@pytest.mark.parametrize(
    "compiled",
    [False, pytest.param(True, marks=pytest.mark.skipif(not compiled_available(), reason="numba"))],
)
def test_on_lines_settles_onto_each_lines_own(lines, compiled):
    table = _FarApart(lines, compiled=compiled)
    assert table._base[1] > 2.0**52  # (the global distances of lines 1 and 2 round)
    rng = np.random.default_rng(53)
    idx, ss = [], []
    for k, ln in enumerate(lines):
        pts = np.concatenate(
            [
                rng.uniform(0.0, ln.length, 300),
                ln.s,
                ln.seg_s1,
                ln.seg_s0,
                np.nextafter(ln.s, np.inf),
                [0.0, ln.length],
            ]
        )
        pts = np.clip(pts, 0.0, ln.length)
        idx.append(np.full(len(pts), k))
        ss.append(pts)
    line, s = np.concatenate(idx), np.concatenate(ss)
    node, X, Z, Y = table.on_lines(line, s)
    for k, ln in enumerate(lines):
        m = line == k
        want_x, want_z = ln.world_xz(s[m])
        assert np.array_equal(node[m], ln.node_offset(s[m])[0]), k
        for got, want in ((X[m], want_x), (Z[m], want_z), (Y[m], ln.elevation(s[m]))):
            assert np.array_equal(got.view(np.int64), want.view(np.int64)), k
