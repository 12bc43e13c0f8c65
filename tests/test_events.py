"""Typed replay events: events.json of the bundled scenarios and the sample activity
stays byte-identical to the files in tests/data/events_golden (written by the dict
events before they were typed; regenerate with TDBTOOLS_REGEN_EVENTS=1 only when a
physics or format change is meant to change them, and say so in the commit)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import SAMPLE_INSTALL
from test_activity_replay import services

from tdbtools.formats.route import load_route
from tdbtools.physics.activity import replay_activity
from tdbtools.physics.activity_build import write_activity_files
from tdbtools.physics.replay import replay

GOLDEN = Path(__file__).parent / "data" / "events_golden"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TDBTOOLS_CACHE_DIR", str(tmp_path / "cache"))


def check(written: Path, name: str) -> None:
    want = GOLDEN / f"{name}.json"
    if os.environ.get("TDBTOOLS_REGEN_EVENTS") == "1":
        shutil.copy(written, want)
    assert written.read_bytes() == want.read_bytes()


@pytest.mark.parametrize("name", ["replay", "shunt", "signals_follow", "signals_crossing"])
def test_scenario_events_json_unchanged(tmp_path, name):
    res = replay(SAMPLE_INSTALL / f"{name}.toml")
    res.write(tmp_path / "o")
    check(tmp_path / "o" / "events.json", name)


@pytest.mark.parametrize(("name", "freight_west_start"), [("activity_morning", 60), ("activity_clash", 0)])
def test_activity_events_json_unchanged(tmp_path, name, freight_west_start):
    dst = tmp_path / "sample"
    shutil.copytree(SAMPLE_INSTALL, dst)
    route = load_route(dst / "ROUTES" / "SAMPLE", cache=False)
    act = write_activity_files(route, "Morning", services(freight_west_start=freight_west_start))
    res = replay_activity(act, route=route)
    res.write(tmp_path / "o")
    check(tmp_path / "o" / "events.json", name)


def test_records_are_frozen_and_leave_out_unset_optionals():
    import dataclasses

    from tdbtools.physics.events import Arrived, Deadlock

    a = Arrived(time=1.5, train="a", distance=20.0)
    assert list(a.to_dict().items()) == [
        ("kind", "arrived"),
        ("time", 1.5),
        ("train", "a"),
        ("distance", 20.0),
    ]
    assert list(Arrived(time=2.0, clock="08:00:02", train="b").to_dict()) == [
        "kind",
        "time",
        "clock",
        "train",
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.time = 3.0  # type: ignore[misc]
    d = Deadlock(time=4.0, trains=("x", "y"), sections=("s",), waiting_since=1.0)
    assert d.to_dict() == {
        "kind": "deadlock",
        "time": 4.0,
        "trains": ["x", "y"],
        "sections": ["s"],
        "waiting_since": 1.0,
    }


def test_every_event_class_is_exported():
    import tdbtools.physics as physics
    from tdbtools.physics import events

    classes = {
        n for n, c in vars(events).items() if isinstance(c, type) and issubclass(c, events.ReplayEvent)
    }
    assert classes <= set(physics.__all__)
    assert all(getattr(physics, n) is getattr(events, n) for n in classes)


def test_driver_events_keep_the_key_order_of_the_dicts_they_replaced():
    """events.json keeps its key order now that the driver emits typed events."""
    from tdbtools.physics.events import DepartedPoint, WaitingAtPoint

    w = WaitingAtPoint(time=5.0, at=120.0, wait=30.0, train="p")
    assert list(w.to_dict()) == ["kind", "time", "at", "wait", "train"]
    assert w.to_dict() == {"kind": "waiting", "time": 5.0, "at": 120.0, "wait": 30.0, "train": "p"}
    assert list(DepartedPoint(time=35.0, at=120.0, train="p").to_dict()) == ["kind", "time", "at", "train"]


def test_the_gentle_impact_rule_is_the_librarys():
    """Impacts up to 5 km/h are gentle (slack running in), faster ones serious, as are
    derailments and collisions; other events are neither (the CLI lists the serious ones)."""
    from tdbtools.physics.events import (
        GENTLE_IMPACT_MS,
        Impact,
        SwitchThrow,
        is_gentle_impact,
        serious_events,
    )

    def impact(v: float) -> Impact:
        return Impact(time=1.0, relative_speed=v, cars=(("t", 0), ("t", 1)), impulse=1.0, energy_lost=1.0)

    at, over = impact(GENTLE_IMPACT_MS), impact(float(np.nextafter(GENTLE_IMPACT_MS, 10.0)))
    throw = SwitchThrow(time=2.0, junction=3, route=1)
    assert GENTLE_IMPACT_MS == 5.0 / 3.6
    assert is_gentle_impact(at) and not is_gentle_impact(over) and not is_gentle_impact(throw)
    assert serious_events([at, over, throw, at]) == [over]


def test_a_record_maker_makes_the_record_its_keyword_init_makes():
    """record_maker (the engine's contacts made by the thousand): for every car event and
    the location, the positional maker gives the record the keyword __init__ gives, equal,
    with the same hash, JSON and frozenness; a maker that skipped a field leaves it unset."""
    from dataclasses import FrozenInstanceError, fields

    from tdbtools.physics.events import (
        CAR_EVENT_MAKERS,
        CAR_EVENTS,
        EventLocation,
        make_location,
        record_maker,
    )

    loc_values = (7, -1, 3, 12.5, -0.25, 1e-9)
    loc = make_location(*loc_values)
    ref_loc = EventLocation(**dict(zip([f.name for f in fields(EventLocation)], loc_values)))
    assert loc == ref_loc and hash(loc) == hash(ref_loc) and loc.to_dict() == ref_loc.to_dict()
    for kind, cls in CAR_EVENTS.items():
        values = (12.3, (("a", 4), ("a", 5)), 0.75, 1234.5, -0.0, loc)
        got = CAR_EVENT_MAKERS[kind](*values)
        want = cls(**dict(zip([f.name for f in fields(cls)], values)))
        assert type(got) is cls and got == want and hash(got) == hash(want)
        assert got.to_dict() == want.to_dict()
        assert repr(got) == repr(want)
        with pytest.raises(FrozenInstanceError):
            got.time = 1.0  # type: ignore[misc]
    short = record_maker(EventLocation)(1, 2, 3)  # (values for the first three fields only)
    with pytest.raises(AttributeError):
        _ = short.x
