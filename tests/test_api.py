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


def _json(*args: str, schema: str) -> object:
    """What the command prints with --json, less its ``schema`` key (checked)."""
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data.pop("schema") == f"tdbtools.{schema}/1"
    return data


def test_audit_route_is_what_audit_json_prints():
    report = audit_route(load_route(SAMPLE_ROUTE), paths=True)
    assert report.path_resolution is not None and len(report.path_resolution) == 4
    assert _json("audit", str(SAMPLE_ROUTE), "--json", schema="audit") == json.loads(
        json.dumps(report.to_json())
    )
    bare = audit_route(load_route(SAMPLE_ROUTE))
    assert bare.paths is None and "path_resolution" not in bare.to_json()
    assert _json("audit", str(SAMPLE_ROUTE), "--json", "--no-paths", schema="audit") == json.loads(
        json.dumps(bare.to_json())
    )


def test_locate_point_is_what_locate_json_prints():
    loc = locate_point(load_route(SAMPLE_ROUTE), -5631, 15116, -43.0, -364.7)
    assert loc.node == 2 and abs(loc.lateral) < 2.5 and loc.radius is None
    printed = _json("locate", str(SAMPLE_ROUTE), "--at", "-5631,15116,-43,-364.7", "--json", schema="locate")
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


def test_every_command_option_has_its_keyword():
    """replay --beyond-path/--max-speed: one_train_scenario and with_settings take them
    (the fix a replay error asks for must be reachable from Python)."""
    sc = one_train_scenario(SAMPLE_ROUTE, "sample_passenger", "MainWE.pat", beyond_path=300.0, max_speed=20.0)
    (train,) = sc.trains
    assert (train.beyond_path, train.max_speed) == (300.0, 20.0)
    base = read_scenario(SAMPLE_ROUTE.parent.parent / "replay.toml")
    changed = with_settings(base, beyond_path=12.5, max_speed=10.0)
    assert all((t.beyond_path, t.max_speed) == (12.5, 10.0) for t in changed.trains)
    assert [t.name for t in changed.trains] == [t.name for t in base.trains]
    import pytest

    from tdbtools.physics import ScenarioError

    with pytest.raises(ScenarioError, match="beyond_path"):
        with_settings(base, beyond_path=-1.0)


def test_an_activity_is_not_a_scenario_and_replay_takes_both():
    import pytest

    from tdbtools.physics import ScenarioError, replay

    act = SAMPLE_ROUTE / "ACTIVITIES" / "Morning.act"
    with pytest.raises(ScenarioError, match="activity") as exc:
        read_scenario(act)
    assert "UTF-8" not in str(exc.value) and "\\x" not in str(exc.value)
    with pytest.raises(Exception, match="cars_trace"):
        replay(act, cars_trace=True)


def test_paths_by_name_as_the_commands_take_them():
    import pytest

    from tdbtools.track import PathError, find_path_file, profile_path, resolve_path

    route = load_route(SAMPLE_ROUTE)
    want = SAMPLE_ROUTE / "PATHS" / "MainWE.pat"
    for name in ("MainWE.pat", "mainwe.PAT", "MainWE", str(want)):
        assert find_path_file(route, name) == want
    assert resolve_path(route, "MainWE").ok
    assert len(profile_path(route, "MainWE.pat")) == len(profile_path(route, want))
    with pytest.raises(PathError, match="neither a file nor a path") as exc:
        find_path_file(route, "nope.pat")
    assert isinstance(exc.value, ValueError)


def test_errors_are_also_the_builtins_a_caller_catches(tmp_path):
    import pytest

    from tdbtools import TdbToolsError
    from tdbtools._fs import OutputExistsError, check_target
    from tdbtools.errors import FormatError, RouteError, SourceError
    from tdbtools.stf import parse_text

    assert issubclass(SourceError, ValueError) and issubclass(FormatError, ValueError)
    assert issubclass(RouteError, FileNotFoundError) and issubclass(OutputExistsError, FileExistsError)
    with pytest.raises(FileNotFoundError):
        load_route(tmp_path / "none")
    with pytest.raises(ValueError):
        parse_text("SIMISA@@@@@@@@@@JINX0T0t______\nA ( (")
    (tmp_path / "x").write_text("x")
    with pytest.raises(FileExistsError) as exc:
        check_target(tmp_path / "x", False)
    assert isinstance(exc.value, TdbToolsError) and "not overwritten" in str(exc.value)
