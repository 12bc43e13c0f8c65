"""The replay's shortcuts give what the plain computation gives.

The signal scripts run only when something they read changed (a pass that changed
nothing would change nothing again), and a free signal's default walk is kept until a
switch is thrown. Here every cycle is also done the plain way, and the two must agree.
"""

from __future__ import annotations

import pytest
from helpers import DK24_ROUTE, SAMPLE_INSTALL, needs_dk24

from tdbtools.signals import runtime as rt
from tdbtools.signals.aspects import SignalAspects


def _plain_free_block(ilk: rt.Interlocking, sig: int) -> tuple[int, int]:
    """(block, next NORMAL signal) of an unclaimed signal, walked afresh (docs/signals.md §4.2)."""
    o = ilk.objects[sig]
    if not o.is_normal:  # its own section on, any train ahead of it (§4.2, issue 27)
        own = ilk.aspects._section_at(o.node, o.offset)
        if own < 0:
            return rt.BLOCK_JN_OBSTRUCTED, -1
        d = o.tc_direction
        walk = [(own, d)] + (
            [] if ilk.sections[own].end_signal[d] >= 0 else ilk.circuits.walk(own, d, rt.MAX_WALK)
        )
        last, ld = walk[-1]
        nxt = ilk.sections[last].end_signal[ld] if ilk.sections[last].kind == "normal" else -1
        for i, (s_id, _sd) in enumerate(walk):
            occ = ilk.sections[s_id].occupants
            if occ and (i > 0 or any(ilk._ahead_of(x, s_id, o.offset, d) for x in occ)):
                return rt.BLOCK_OCCUPIED, nxt
        return rt.BLOCK_CLEAR, nxt
    sec = ilk.sig_section[sig]
    if sec < 0:
        return rt.BLOCK_JN_OBSTRUCTED, ilk.next_normal[sig]
    walk = ilk.circuits.walk(sec, ilk.objects[sig].tc_direction, rt.MAX_WALK)
    # the first section that is not clear decides, its occupants before its reservation
    worst, nxt, decided = rt.BLOCK_CLEAR, -1, False
    for s_id, sd in walk:
        s = ilk.sections[s_id]
        if not decided and s.occupants:
            only_opp = all(
                abs(ilk.trains[x].speed) > rt.STANDING and od != sd for x, od in s.occupants.items()
            )
            worst, decided = (rt.BLOCK_JN_OBSTRUCTED if only_opp else rt.BLOCK_OCCUPIED), True
        elif not decided and s.reserved >= 0:
            worst, decided = rt.BLOCK_JN_OBSTRUCTED, True
        if s.kind == "normal" and s.end_signal[sd] >= 0:
            nxt = s.end_signal[sd]
    return (rt.BLOCK_JN_OBSTRUCTED if not walk else worst), nxt


def _events(res) -> list[dict]:  # noqa: ANN001
    return [e.to_dict() for e in res.events]


def _both_ways(monkeypatch, run):  # noqa: ANN001, ANN202
    """``run()`` as it is, then with the scripts run every cycle and every free block
    checked against a fresh walk."""
    fast = run()
    checked = {"blocks": 0, "passes": 0}
    update_blocks, run_scripts = rt.Interlocking.update_blocks, SignalAspects.run_scripts

    def blocks_checked(self: rt.Interlocking) -> None:
        update_blocks(self)
        for k in range(len(self.objects)):
            if self.enabled_train[k] < 0:
                assert (self.block[k], self.next_normal[k]) == _plain_free_block(self, k)
                checked["blocks"] += 1

    def every_cycle(self: SignalAspects, **kw: bool) -> None:
        self.schedule.dirty.update(range(len(self.order)))  # every head runs: a full pass
        run_scripts(self, **kw)
        checked["passes"] += 1

    with monkeypatch.context() as m:
        m.setattr(rt.Interlocking, "update_blocks", blocks_checked)
        m.setattr(SignalAspects, "run_scripts", every_cycle)
        plain = run()
    assert checked["blocks"] > 0 and checked["passes"] > 0
    assert any(e.kind == "signal" for e in fast.events)
    assert _events(fast) == _events(plain)
    assert fast.summary["signalling"] == plain.summary["signalling"]
    return fast


@pytest.mark.slow
@pytest.mark.parametrize("name", ["follow", "crossing"])
def test_scripts_on_change_give_the_aspects_of_scripts_every_cycle(monkeypatch, name):
    from tdbtools.physics.replay import replay

    _both_ways(monkeypatch, lambda: replay(SAMPLE_INSTALL / f"signals_{name}.toml"))


@pytest.mark.slow
@needs_dk24
def test_dk24_scripts_on_change_give_the_aspects_of_scripts_every_cycle(monkeypatch, tmp_path):
    """DK24's own scripts (lvars, next-signal look-ups, junction-linked heads) with a
    follower held at reds behind a leader."""
    import dataclasses

    from test_signals import FOLLOW

    from tdbtools.formats.route import load_route
    from tdbtools.physics.replay import Replay
    from tdbtools.physics.scenario import read_scenario

    p = tmp_path / "follow.toml"
    consist = SAMPLE_INSTALL / "TRAINS" / "CONSISTS" / "sample_freight.con"
    p.write_text(FOLLOW.format(route=DK24_ROUTE.as_posix(), consist=consist.as_posix()), encoding="utf-8")
    sc = dataclasses.replace(read_scenario(p), duration=400.0)
    route = load_route(DK24_ROUTE)
    res = _both_ways(monkeypatch, lambda: Replay(sc, route=route).run())
    assert any(e.kind == "aspect" and e.aspect == "STOP" for e in res.events)


def test_prepared_traction_and_gravity_are_bit_identical_to_the_module_functions():
    """The replay's forces for engines only (no division by a standing engine's 0 m/s)
    give exactly what forces.traction(taper=False) and forces.gravity give."""
    import dataclasses

    import numpy as np

    from tdbtools.formats.stock import Stock, TractiveForceCurve
    from tdbtools.physics import forces

    curve = TractiveForceCurve((0.0, 1.0), (0.0, 10.0, 20.0), ((0.0, 0.0, 0.0), (200e3, 200e3, 100e3)))
    curved = dataclasses.replace(Stock.generic("engine", "diesel"), tractive_force_curve=curve)
    stocks = [
        Stock.generic("engine", "electric"),
        Stock.generic("wagon", "freight"),
        curved,
        Stock.generic("wagon", "passenger"),
        Stock.generic("engine", "diesel"),
    ]
    rng = np.random.default_rng(11)
    # three engines take the scalar path, six the array path
    for reps in (1, 2):
        m = forces.CarModel.from_stock(stocks * reps, [False, True, False, False, True] * reps)
        pre = forces.Prepared(m)
        e = pre.engines
        assert e.tolist() == [0, 2, 4, 5, 7, 9][: 3 * reps]
        adh = rng.uniform(1e5, 9e5, len(e))
        for _ in range(50):
            thr = rng.choice([0.0, 0.3, 1.0, 1.2, -0.1], len(m.mass))
            v = rng.choice([0.0, -0.0, 3.0, -12.5, 40.0, 1e-9], len(m.mass))
            full = forces.traction(m, thr, v, taper=False)
            assert pre.traction(thr[e], v[e]).tobytes() == full[e].tobytes()
            assert np.all(full[~m.is_engine] == 0.0)
            mu = 0.161 + 7.5 / (3.6 * np.abs(v[e]) + 44.0)
            limited = np.minimum(full[e], mu * adh)
            assert pre.traction(thr[e], v[e], adh).tobytes() == limited.tobytes()
            yf, yr = rng.normal(10, 2, len(m.mass)), rng.normal(10, 2, len(m.mass))
            assert pre.gravity(yf, yr).tobytes() == forces.gravity(m, yf, yr).tobytes()


def _occupancy_on_arrays(line, s_from: float, s_to: float) -> list[tuple[int, float, float]]:  # noqa: ANN001
    """TrackLine.occupancy as worked out on the numpy columns (before its list cache)."""
    import numpy as np

    a, b = sorted((float(s_from), float(s_to)))
    a, b = max(a, 0.0), min(b, line.length)
    if a > b:
        return []
    i0 = int(np.clip(np.searchsorted(line.seg_s1, a, side="right"), 0, len(line.seg_s1) - 1))
    i1 = int(line.segment_index(np.float64(b)))
    if b - a <= 1e-9 or i1 < i0:
        node, off, _d = line.node_offset(np.array([a]))
        return [(int(node[0]), float(off[0]), float(off[0]))]
    out = []
    for i in range(i0, i1 + 1):
        lo, hi = max(a, float(line.seg_s0[i])), min(b, float(line.seg_s1[i]))
        if hi < lo:
            continue
        sg = 1.0 if line.seg_dir[i] == 1 else -1.0
        o0 = float(line.seg_off0[i])
        out.append((int(line.seg_node[i]), o0 + sg * (lo - line.seg_s0[i]), o0 + sg * (hi - line.seg_s0[i])))
    return out


@pytest.mark.parametrize("pat", ["MainWE.pat", "MainEW.pat"])
def test_occupancy_from_its_list_cache_equals_the_array_computation(pat):
    import numpy as np
    from helpers import SAMPLE_ROUTE

    from tdbtools.formats.route import load_route
    from tdbtools.physics.trackline import TrackLine

    line = TrackLine.from_path(load_route(SAMPLE_ROUTE, cache=False), SAMPLE_ROUTE / "PATHS" / pat)
    assert len(line.seg_node) >= 2
    bounds = np.concatenate([line.seg_s0, line.seg_s1])
    rng = np.random.default_rng(3)
    probes = np.concatenate([bounds, rng.uniform(-50.0, line.length + 50.0, 200)])
    for a in probes:
        for b in (a, a + 0.5, a + 60.0, a + 400.0, a - 30.0, bounds[rng.integers(len(bounds))]):
            got, want = line.occupancy(a, b), _occupancy_on_arrays(line, a, b)
            assert got == want, (a, b)
