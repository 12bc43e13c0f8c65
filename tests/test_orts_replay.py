"""The Open Rails profile inside the route replay (physics = "openrails"; docs/physics.md §7.9)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from tdbtools.cli import bundled_scenario, main
from tdbtools.physics.replay import Replay
from tdbtools.physics.scenario import ScenarioError, read_scenario, scenario_from_text, with_settings


def test_scenario_key():
    text = 'route = "x"\nphysics = "openrails"\n[[train]]\nconsist = "c"\npath = "p"\n'
    sc = scenario_from_text(text)
    assert sc.physics == "openrails" and sc.rotating_mass is False  # Open Rails has no factor
    sc = scenario_from_text(text.replace('"openrails"', '"openrails"\nrotating_mass = true'))
    assert sc.rotating_mass is True
    assert scenario_from_text(text.replace('physics = "openrails"\n', "")).physics == "engineering"
    with pytest.raises(ScenarioError, match="physics must be"):
        scenario_from_text(text.replace('"openrails"', '"msts"'))
    base = scenario_from_text(text.replace('physics = "openrails"\n', ""))
    assert with_settings(base, physics="openrails").rotating_mass is False


def test_sample_replay_runs_with_open_rails_laws():
    sc = with_settings(read_scenario(bundled_scenario()), physics="openrails", duration=400)
    rep = Replay(sc)
    assert rep.forces.orts is not None and rep.forces.ck is None
    result = rep.run()
    (cols,) = result.traces.values()
    assert np.nanmax(cols["speed"]) > 15.0  # it got going
    assert np.nanmax(cols["brake"]) > 0.3  # and braked through its cylinders
    (t,) = result.summary["trains"].values()
    assert t["finished"]


def test_cli_says_which_profile(tmp_path):
    r = CliRunner().invoke(
        main, ["replay", "--physics", "openrails", "--duration", "60", "--out", str(tmp_path / "o")]
    )
    assert r.exit_code == 0, r.output
    assert "Open Rails physics profile" in r.output
