"""Fast tests for survivors that docs/mutation.md §5 listed as real gaps: each test
here fails with the mutant it names and passes on the code as it is."""

from __future__ import annotations

from helpers import SAMPLE_ROUTE

from tdbtools.physics.events import EndOfLine
from tdbtools.physics.replay import Replay
from tdbtools.physics.scenario import scenario_from_text


def _main_line_location(s: float):  # noqa: ANN202
    rp = Replay(
        scenario_from_text(
            f'route = "{SAMPLE_ROUTE}"\n[[train]]\nname = "x"\nconsist = "sample_freight"\npath = "MainWE.pat"\n',
            "s.toml",
        )
    )
    return rp.trains[0].line.location(s)


def _start(s: float, backward: bool) -> str:
    loc = _main_line_location(s)
    back = "true" if backward else "false"
    return (
        f"start = {{ tile = [{loc.tile_x}, {loc.tile_z}], pos = [{loc.x!r}, {loc.z!r}], backward = {back} }}"
    )


def test_only_the_train_that_runs_off_its_line_reaches_its_end():
    """Kills `Replay.step`'s `over | ~far_end`: two trains on lines that stop short of a
    track end; when one runs off its line the other, still running, is not at its end."""
    sc = scenario_from_text(
        f'route = "{SAMPLE_ROUTE}"\nstep = 0.1\nduration = 20\n'
        # a long freight creeping east on 600 m of track, far from its end
        '[[train]]\nname = "creeping"\nconsist = "sample_freight"\n'
        f'{_start(300.0, True)}\ndistance = 600\ndriver = "auto"\nmax_speed = "10km/h"\n'
        # an engine at full throttle on 150 m of track further east: off its line in 10 s
        '[[train]]\nname = "runner"\nconsist = "sample_double"\n'
        f"{_start(1100.0, False)}\ndistance = 150\n"
        'driver = "schedule"\nschedule = [ { at = 0, throttle = 1.0, brake = 0.0 } ]\n',
        "s.toml",
    )
    rp = Replay(sc)
    assert [t.line.ends_at_track_end for t in rp.trains] == [False, False]
    res = rp.run()
    ends = [e for e in res.events if isinstance(e, EndOfLine)]
    assert [e.train for e in ends] == ["runner"]
    assert 5.0 < ends[0].time < 20.0
    creeping = rp.trains[0]
    assert creeping.done_at is None and not creeping.derailed
