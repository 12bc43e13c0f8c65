"""Typed replay events: events.json of the bundled scenarios and the sample activity
stays byte-identical to the files in tests/data/events_golden (written by the dict
events before they were typed; regenerate with TDBTOOLS_REGEN_EVENTS=1 only when a
physics change is meant to change them)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

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
