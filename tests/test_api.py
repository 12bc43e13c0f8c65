"""The library functions behind the commands give what the commands print."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from helpers import SAMPLE_ROUTE

from tdbtools.cli import main
from tdbtools.formats import load_route
from tdbtools.physics import one_train_scenario, read_scenario, with_settings
from tdbtools.stf import dumps_deep
from tdbtools.track import audit_route, locate_point


def _json(*args: str) -> object:
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_audit_route_is_what_audit_json_prints():
    report = audit_route(load_route(SAMPLE_ROUTE), paths=True)
    assert report.path_resolution is not None and len(report.path_resolution) == 4
    assert _json("audit", str(SAMPLE_ROUTE), "--json") == json.loads(json.dumps(report.to_json()))
    bare = audit_route(load_route(SAMPLE_ROUTE))
    assert bare.paths is None and "path_resolution" not in bare.to_json()
    assert _json("audit", str(SAMPLE_ROUTE), "--json", "--no-paths") == json.loads(json.dumps(bare.to_json()))


def test_locate_point_is_what_locate_json_prints():
    loc = locate_point(load_route(SAMPLE_ROUTE), -5631, 15116, -43.0, -364.7)
    assert loc.node == 2 and abs(loc.lateral) < 2.5 and loc.radius is None
    printed = _json(
        "locate", str(SAMPLE_ROUTE), "--tile", "-5631", "15116", "--pos", "-43", "-364.7", "--json"
    )
    assert printed == loc.to_json()


def test_scenario_without_a_file_and_overrides():
    sc = one_train_scenario(SAMPLE_ROUTE, "sample_passenger", "MainWE.pat", stand_in=True)
    assert sc.route == SAMPLE_ROUTE.resolve() and sc.stand_in
    (train,) = sc.trains
    assert (train.name, train.consist, train.path, train.driver) == (
        "sample_passenger",
        Path("sample_passenger"),
        Path("MainWE.pat"),
        "auto",
    )
    base = read_scenario(SAMPLE_ROUTE.parent.parent / "replay.toml")
    assert with_settings(base) is base
    changed = with_settings(base, step=0.05, duration=12.0)
    assert (changed.step, changed.duration, changed.stand_in) == (0.05, 12.0, base.stand_in)


def test_dumps_deep_matches_json_dumps():
    obj = {"a": [1, {"b": None, "c": "ü"}], "d": [], "e": {}}
    assert dumps_deep(obj, indent=1) == json.dumps(obj, indent=1, ensure_ascii=False)
