"""The replay's shortcuts give what the plain computation gives.

The signal scripts run only when something they read changed (a pass that changed
nothing would change nothing again), and a free signal's default walk is kept until a
switch is thrown. Here every cycle is also done the plain way, and the two must agree.
"""

from __future__ import annotations

import pytest
from helpers import SAMPLE_INSTALL

from tdbtools.signals import runtime as rt


def _plain_free_block(ilk: rt.Interlocking, sig: int) -> tuple[int, int]:
    """(block, next NORMAL signal) of an unclaimed signal, walked afresh (docs/signals.md §4.2)."""
    sec = ilk.sig_section[sig]
    if sec < 0:
        return rt.BLOCK_JN_OBSTRUCTED, ilk.next_normal[sig]
    walk = ilk._walk_from(sec, ilk.objects[sig].tc_direction, rt.MAX_WALK)
    worst, nxt = rt.BLOCK_CLEAR, -1
    for s_id, sd in walk:
        s = ilk.sections[s_id]
        if s.occupants:
            opp = any(abs(ilk.trains[x].speed) > rt.STANDING and od != sd for x, od in s.occupants.items())
            worst = max(worst, rt.BLOCK_JN_OBSTRUCTED if opp else rt.BLOCK_OCCUPIED)
        if s.reserved >= 0:
            worst = max(worst, rt.BLOCK_JN_OBSTRUCTED)
        if s.kind == "normal" and s.end_signal[sd] >= 0:
            nxt = s.end_signal[sd]
    return (rt.BLOCK_JN_OBSTRUCTED if not walk else worst), nxt


def _events(res) -> list[dict]:  # noqa: ANN001
    return [e.to_dict() for e in res.events]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["follow", "crossing"])
def test_scripts_on_change_give_the_aspects_of_scripts_every_cycle(monkeypatch, name):
    from tdbtools.physics.replay import replay

    fast = replay(SAMPLE_INSTALL / f"signals_{name}.toml")
    checked = {"blocks": 0, "passes": 0}
    update_blocks, run_scripts = rt.Interlocking.update_blocks, rt.Interlocking.run_scripts

    def blocks_checked(self: rt.Interlocking) -> None:
        update_blocks(self)
        for k in range(len(self.objects)):
            if self.enabled_train[k] < 0:
                assert (self.block[k], self.next_normal[k]) == _plain_free_block(self, k)
                checked["blocks"] += 1

    def every_cycle(self: rt.Interlocking, **kw: bool) -> None:
        self._scripts_at_rest = None  # never skip a pass
        run_scripts(self, **kw)
        checked["passes"] += 1

    monkeypatch.setattr(rt.Interlocking, "update_blocks", blocks_checked)
    monkeypatch.setattr(rt.Interlocking, "run_scripts", every_cycle)
    plain = replay(SAMPLE_INSTALL / f"signals_{name}.toml")
    assert checked["blocks"] > 0 and checked["passes"] > 0
    assert any(e.kind == "signal" for e in fast.events)
    assert _events(fast) == _events(plain)
    assert fast.summary["signalling"] == plain.summary["signalling"]
