"""``tdbtools replay``: its arguments, checked before any work, and the replay of
consists on paths (activities and timetables: :mod:`.schedules`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from .common import EXIT_FINDINGS, _echo_json, _handle_errors, _load, _need, _NullBar, bundled_scenario
from .compile import _kernel_notice
from .events import _event_lines, _script_errors
from .options import _strict_option
from .schedules import _profile_notice, _replay_activity, _replay_timetable, _report_activity


@click.command()
@click.argument("scenario", required=False, type=click.Path(path_type=Path))
@click.option(
    "--route", "route_opt", type=click.Path(path_type=Path), help="Route folder (without a scenario file)."
)
@click.option("--consist", "consist_opt", help="Consist (.con name or file) (without a scenario file).")
@click.option("--path", "path_opt", help="Path (.pat name or file) (without a scenario file).")
@click.option("--stand-in", is_flag=True, help="Use generic stock for missing .eng/.wag files.")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=Path("replay-out"),
    show_default=True,
    help="Folder for traces, events and summary.",
)
@click.option("--plot", is_flag=True, help="Also draw a speed-distance plot per train.")
@click.option("--cars", is_flag=True, help="Also write a per-car trace.")
@click.option("--step", type=float, help="Time step in seconds (overrides the scenario).")
@click.option("--duration", type=float, help="Seconds to simulate at most (overrides the scenario).")
@click.option(
    "--beyond-path",
    type=click.FloatRange(min=0.0, max=1e6),
    metavar="M",
    help="Metres every train runs on past the end of its path (overrides the scenario).",
)
@click.option(
    "--max-speed",
    type=click.FloatRange(min=0.1, max=1000.0),
    metavar="KMH",
    help="Top speed of the automatic driver in km/h (overrides the scenario).",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Write into a non-empty --out folder, replacing the files of the same names.",
)
@click.option("--no-signals", is_flag=True, help="Ignore the route's signals (by default they are obeyed).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary and the files written as JSON.")
@click.option(
    "--skip-missing",
    is_flag=True,
    help="Activity: run without AI services or a traffic file that do not exist (else exit 2).",
)
@click.option(
    "--physics",
    type=click.Choice(["engineering", "openrails"]),
    help="Physics profile (overrides the scenario; docs/physics.md §7).",
)
@click.option("--player", help="A timetable's train to play (it stays at its end); the others run as AI.")
@_strict_option
@_handle_errors
def replay(
    scenario: Path | None,
    route_opt: Path | None,
    consist_opt: str | None,
    path_opt: str | None,
    stand_in: bool,
    out_dir: Path,
    plot: bool,
    cars: bool,
    step: float | None,
    duration: float | None,
    beyond_path: float | None,
    max_speed: float | None,
    overwrite: bool,
    no_signals: bool,
    as_json: bool,
    skip_missing: bool,
    physics: str | None,
    player: str | None,
    strict: bool,
) -> None:
    """Replay consists over a route: physics, derailments and collisions.

    SCENARIO is a TOML file; or give --route, --consist and --path; with neither, the
    bundled sample scenario runs on the sample route. Writes <train>.csv traces,
    events.json and summary.json into --out (a new or empty folder; a folder that holds
    anything only with --overwrite).

    SCENARIO may be an Open Rails timetable (.timetable-or in <route>/ACTIVITIES/OpenRails):
    every train runs from its start time, stops at its stations, forms the next train,
    goes to or comes from its pool and waits for its connections (docs/timetables.md);
    --player picks the train that stays at its end. Exit status 1 when a train did not
    reach its end.

    SCENARIO may be an activity (.act in <route>/ACTIVITIES): the player and every AI
    service run from their start times with station stops; --out also gets
    timetable.csv, and --plot draws the space-time chart. On a signalled route the
    signals keep the trains apart (--no-signals: plain block occupancy). Exit status 1
    when a train derailed, collided, deadlocked or got stuck.
    """
    from .._outputs import claim_output_folder

    # The arguments first, then the extras, then the output folder: a mistake is named
    # as itself, before anything is read or written.
    activity = scenario is not None and scenario.suffix.lower() == ".act"
    timetable = scenario is not None and scenario.suffix.lower() in (
        ".timetable-or",
        ".timetable_or",
        ".timetablelist-or",
        ".timetablelist_or",
    )
    if player is not None and not timetable:
        raise click.UsageError("--player goes with a timetable (.timetable-or)")
    for kind, what in ((timetable, "a timetable"), (activity, "an activity")):
        if kind and (
            route_opt or consist_opt or path_opt or cars or beyond_path is not None or max_speed is not None
        ):
            raise click.UsageError(
                f"{what} replay takes no --route/--consist/--path/--cars/--beyond-path/--max-speed"
            )
    if scenario is not None and (route_opt or consist_opt or path_opt):
        raise click.UsageError("give a scenario file or --route/--consist/--path, not both")
    if (
        scenario is None
        and (route_opt or consist_opt or path_opt)
        and not (route_opt and consist_opt and path_opt)
    ):
        raise click.UsageError("--route, --consist and --path go together")
    if scenario is not None and not scenario.is_file():
        raise click.BadParameter(f"{str(scenario)!r} is not a file", param_hint="SCENARIO")
    from ..physics.scenario import MAX_STEP, run_limits_problem

    for name, problem in (
        ("--step", None if step is None else run_limits_problem(step, step)),
        ("--duration", None if duration is None else run_limits_problem(MAX_STEP, duration)),
    ):
        if problem is not None:
            raise click.BadParameter(problem[1], param_hint=name)
    if plot:
        _need("matplotlib", "--plot")
    # One run per folder (a lock, released when the command ends); manifest.json last.
    run = claim_output_folder(out_dir, overwrite)
    click.get_current_context().call_on_close(run.release)
    if timetable:
        assert scenario is not None
        raise click.exceptions.Exit(
            _replay_timetable(
                scenario, player, stand_in, out_dir, plot, step, duration, strict, no_signals, run, physics
            )
        )
    if activity:
        assert scenario is not None
        raise click.exceptions.Exit(
            _replay_activity(
                scenario,
                stand_in,
                out_dir,
                plot,
                step,
                duration,
                strict,
                no_signals,
                as_json,
                run=run,
                skip_missing=skip_missing,
                physics=physics,
            )
        )
    from ..physics.events import StandIn
    from ..physics.replay import Replay
    from ..physics.scenario import one_train_scenario, read_scenario, with_settings

    rroute = None
    if scenario is None and route_opt and consist_opt and path_opt:
        from ..physics.pathrun import path_reversals, replay_path_whole

        rroute = _load(Path(route_opt).resolve(), strict=strict)
        if path_reversals(rroute, path_opt):
            # A path with reversals runs whole, as an activity's train (docs/activities.md §4.4).
            if physics is not None:
                raise click.UsageError(
                    "--physics is not available for a path with reversals (it runs as an activity)"
                )
            whole = replay_path_whole(
                rroute,
                consist_opt,
                path_opt,
                stand_in=stand_in,
                step=step if step is not None else 0.1,
                duration=duration if duration is not None else 86400.0,
                signals=False if no_signals else None,
            )
            raise click.exceptions.Exit(_report_activity(whole, out_dir, plot, as_json, run))
        sc = one_train_scenario(route_opt, consist_opt, path_opt, stand_in=stand_in)
        if duration is None:
            # It runs until the train reaches its path end (the replay ends when it does),
            # for a day at most and within the work limits.
            from ..physics.scenario import MAX_STEPS

            duration = min(86400.0, MAX_STEPS * (step if step is not None else sc.step))
    else:
        sc = read_scenario(scenario if scenario is not None else bundled_scenario())
    sc = with_settings(
        sc,
        stand_in=True if stand_in else None,
        step=step,
        duration=duration,
        beyond_path=beyond_path,
        max_speed=None if max_speed is None else max_speed / 3.6,
        physics=physics,
    )
    if sc.physics != "openrails":
        _kernel_notice()  # (the profile may still be chosen by the stock: see below)
    built = time.perf_counter()
    rep = Replay(
        sc,
        route=rroute if rroute is not None else _load(Path(sc.route), strict=strict),
        cars_trace=cars,
        signals=False if no_signals else None,
    )
    # the set-up (the route's load, the trains, the compiled kernels' loading) is not in
    # the loop's time that the summary's real-time factor divides by: told beside it
    built = time.perf_counter() - built
    _profile_notice(rep.scenario.physics, given=sc.physics is not None)
    for e in rep.events:
        if isinstance(e, StandIn):
            click.echo(f"warning: train {e.train!r}: {e.message}", err=True)
    total = max(int(sc.duration), 1)
    show = sys.stderr.isatty() and sc.duration >= 60
    with (
        click.progressbar(length=total, label="replaying", file=sys.stderr, show_eta=True)
        if show
        else _NullBar() as bar
    ):
        done = [0]

        def progress(t: float) -> None:
            bar.update(int(t) - done[0])
            done[0] = int(t)

        result = rep.run(progress)
    files = result.write(out_dir)
    if plot:
        from ..render.plots import line_marks, plot_speed_distance

        stems = result.file_stems()
        for name, cols in result.traces.items():
            limit, marks = line_marks(rep, name)
            files.append(
                plot_speed_distance(
                    cols,
                    name,
                    result.events,
                    out_dir / f"{stems[name]}_speed.png",
                    limit=limit,
                    marks=marks,
                )
            )
        if rep.signals is not None:
            from ..physics.signalling import space_time
            from ..render.signal_chart import plot_signal_chart

            files.append(plot_signal_chart(space_time(rep, result), out_dir / "signals_space_time.png"))
    s = result.summary
    # replay --route runs to the path end: stopping short of it is a problem (issue 26)
    short = [name for name, t in s["trains"].items() if not t["finished"]] if route_opt is not None else []
    for name in short:
        t = s["trains"][name]
        click.echo(
            f"problem: {name} did not reach the end of its path ({t['distance_m']:.0f} m run in "
            f"{s['simulated_seconds']:.0f} s)",
            err=True,
        )
    failed = (
        bool(short)
        or any(t["derailed"] for t in s["trains"].values())
        or any(e.kind in ("collision", "side_collision") for e in result.events)
        or bool(_script_errors(result.events))
    )
    files.append(run.finish(files))
    if as_json:
        _echo_json("replay", {"summary": s, "files": [str(f) for f in files], "failed": failed})
        if failed:
            raise click.exceptions.Exit(EXIT_FINDINGS)
        return
    click.echo(
        f"{s['route']}: {s['simulated_seconds']:.1f} s simulated in {s['wall_seconds']:.2f} s "
        f"({s['realtime_factor']}x real time; the loop only, its set-up took {built:.2f} s before it)"
    )
    for name, t in s["trains"].items():
        state = "derailed" if t["derailed"] else "finished" if t["finished"] else "running at the end"
        click.echo(
            f"  {name}: {t['cars']} cars, {t['mass_t']:.0f} t; {t['distance_m']:.0f} m in "
            f"{t['running_time_s']:.0f} s, max {t['max_speed_kmh']:.1f} km/h, traction "
            f"{t['traction_energy_kwh']:.1f} kWh; {state}"
        )
    for line in _event_lines(result.events):
        click.echo(line)
    click.echo(f"wrote {len(files)} files to {out_dir}")
    if failed:
        raise click.exceptions.Exit(EXIT_FINDINGS)
