"""``Engine.step(rows=True)``: the step's events as rows (what the replay takes, making its
own records of them) are the events ``step`` gives without it, field by field and bit for
bit, for the compiled step and the reference alike."""

from __future__ import annotations

import pytest

from tdbtools.physics import engine, kernels
from tdbtools.physics.engine import EVENT_KINDS, event_cars, event_of_row
from tests.engine_scenarios import DT, shunting, train_21
from tests.helpers import needs_kernels


def _bits(e) -> tuple:
    return (
        e.kind,
        e.time.hex(),
        e.cars,
        e.line,
        *(float(x).hex() for x in (e.relative_speed, e.impulse, e.energy_lost)),
    )


@pytest.mark.parametrize(
    "compiled", [False, pytest.param(True, marks=needs_kernels)], ids=["reference", "compiled"]
)
@pytest.mark.parametrize("make", [shunting, train_21])
def test_rows_are_the_steps_events(make, compiled, monkeypatch):
    if compiled:
        pytest.importorskip("numba")
    else:  # (the reference engine: no engine is large enough for the kernel)
        monkeypatch.setattr(engine, "COMPILED_MIN_CARS", 10**9)
    a, forces = make()
    b, _ = make()
    assert a.compiled == b.compiled == (compiled and kernels.compiled_available())
    made = 0
    for k in range(600):
        drive, resist = forces(k, a)
        evs = a.step(DT, drive, resist)
        rows = b.step(DT, drive.copy(), resist.copy(), rows=True)
        assert [_bits(event_of_row(r)) for r in rows] == [_bits(e) for e in evs], k
        for r, e in zip(rows, evs):
            assert EVENT_KINDS[int(r[0])] == e.kind
            assert event_cars(int(r[0]), int(r[2]), int(r[3])) == e.cars
        made += len(evs)
        assert (a.x == b.x).all() and (a.v == b.v).all()
    assert made > 5  # (impacts, snatches, stops and starts were made)
