"""The replays of many trains on a clock: an activity (.act) or an Open Rails timetable,
run and reported on the console (for ``replay``)."""

from __future__ import annotations

from pathlib import Path

import click

from .common import EXIT_FINDINGS, _echo_json, _load
from .compile import _kernel_notice
from .events import _script_errors


def _replay_activity(
    act: Path,
    stand_in: bool,
    out_dir: Path,
    plot: bool,
    step: float | None,
    duration: float | None,
    strict: bool = False,
    no_signals: bool = False,
    as_json: bool = False,
    run=None,  # noqa: ANN001  (an OutputRun: finished when every file is written)
    skip_missing: bool = False,
    physics: str | None = None,
) -> int:
    from ..physics.activity import replay_activity

    folder = act.resolve().parent
    # An activity lives in <route>/ACTIVITIES: its route is read as every command reads one.
    route = _load(folder.parent, strict=strict) if folder.name.lower() == "activities" else None
    _kernel_notice()
    result = replay_activity(
        act,
        route=route,
        stand_in=stand_in,
        step=step if step is not None else 0.5,
        duration=duration,
        signals=False if no_signals else None,
        skip_missing=skip_missing,
        physics=physics,
    )
    _profile_notice(result.replay.summary.get("physics"), given=physics is not None)
    return _report_activity(result, out_dir, plot, as_json, run)


def _profile_notice(physics: str | None, given: bool) -> None:
    """Say on stderr when a replay runs the Open Rails profile, and why (docs/physics.md §7)."""
    why = (
        ""
        if given
        else " (the default for stock read from .eng/.wag files; --physics engineering for the engineers' laws)"
    )
    if physics == "openrails":
        click.echo(
            f"note: Open Rails physics profile{why} (docs/physics.md §7), simplified: no engine brake, "
            "the automatic driver does not use the dynamic brake, manual gearboxes run as automatic, "
            "steam without its boiler's limits, vacuum brakes without leakage or ejector speeds, "
            "no wheel-slip model",
            err=True,
        )


def _report_activity(result, out_dir: Path, plot: bool, as_json: bool = False, run=None) -> int:  # noqa: ANN001
    """Write an activity replay's files and tell how every service did (exit status)."""
    from ..physics.activity import clock
    from ..physics.outcome import tolerated

    files = result.write(out_dir)
    if plot:
        from ..render.spacetime import plot_space_time

        files.append(plot_space_time(result, out_dir / "spacetime.png"))
    if run is not None:
        files.append(run.finish(files))
    s = result.replay.summary
    if as_json:
        _echo_json(
            "replay",
            {
                "summary": s,
                "timetable": list(result.timetable),
                "files": [str(f) for f in files],
                "failed": result.failed,
            },
        )
        return EXIT_FINDINGS if result.failed else 0
    click.echo(
        f"{s['activity']} ({s['route']}): {s['clock_start']}-{s['clock_end']}, {s['simulated_seconds']:.0f} s "
        f"simulated in {s['wall_seconds']:.2f} s ({s['realtime_factor']}x real time)"
    )
    starts = {t["service"]: t["start"] for t in reversed(list(s["trains"].values()))}
    for name, o in s["services"].items():
        turns = f", {o['parts'] - 1} reversal(s)" if o["parts"] > 1 else ""
        click.echo(
            f"  {name}: start {starts.get(name, '')}, {o['distance_m'] / 1000.0:.2f} of "
            f"{o['path_m'] / 1000.0:.2f} km{turns}, {o['stops']}/{o['booked_stops']} booked stops made; "
            + ("reached its end" if o["reached_end"] else f"stopped short: {o['reason']}")
        )
    for name, o in s["services"].items():
        if not o["reached_end"]:
            click.echo(
                f"problem: {name} stopped {(o['path_m'] - o['distance_m']) / 1000.0:.2f} km short of its "
                f"path end ({o['reason']})",
                err=True,
            )
        if o["stops"] < o["booked_stops"]:
            click.echo(f"problem: {name} made {o['stops']} of its {o['booked_stops']} booked stops", err=True)
    tol = tolerated(result.replay.events)
    if tol:
        click.echo("tolerated: " + "\n           ".join(tol), err=True)
    for r in result.timetable:
        click.echo(
            f"  {r['train']} at {r['platform']}: booked {clock(r['sched_arr'])}-{clock(r['sched_dep'])}, "
            f"actual {clock(r['actual_arr'])}-{clock(r['actual_dep'])}"
        )
    for e in result.replay.events:
        if e.kind in ("deadlock", "stuck", "derailment", "collision", "side_collision", "not_at_end"):
            train = getattr(e, "train", None)
            who = f"{train}: " if train is not None else ""
            click.echo(
                f"  event {getattr(e, 'clock', None) or ''} {e.kind}: {who}{getattr(e, 'message', None) or ''}"
            )
    click.echo(f"wrote {len(files)} files to {out_dir}")
    script_failed = _script_errors(result.replay.events)
    return EXIT_FINDINGS if result.failed or script_failed else 0


def _replay_timetable(
    path: Path,
    player: str | None,
    stand_in: bool,
    out_dir: Path,
    plot: bool,
    step: float | None,
    duration: float | None,
    strict: bool = False,
    no_signals: bool = False,
    run=None,  # noqa: ANN001  (an OutputRun: finished when every file is written)
    physics: str | None = None,
) -> int:
    """Replay, write the outputs, report on stdout, and say on stderr what was
    simplified or went wrong; returns the exit status (1: a train did not reach its
    end, or derailed, collided, deadlocked, got stuck)."""
    from ..physics.activity import clock
    from ..physics.timetable import replay_timetable
    from ..physics.timetable_plan import route_of

    route = _load(route_of(path), strict=strict)
    result = replay_timetable(
        path,
        player=player,
        route=route,
        stand_in=stand_in,
        step=step if step is not None else 0.5,
        duration=duration,
        signals=False if no_signals else None,
        physics=physics,
    )
    _profile_notice(result.activity.replay.summary.get("physics"), given=physics is not None)
    files = result.write(out_dir)
    if plot:
        from ..render.spacetime import plot_space_time

        files.append(plot_space_time(result.activity, out_dir / "spacetime.png"))
    if run is not None:
        files.append(run.finish(files))
    s = result.replay.summary
    tt = s["timetable"]
    click.echo(
        f"{s['activity']} ({s['route']}): {s['clock_start']}-{s['clock_end']}, {s['simulated_seconds']:.0f} s "
        f"simulated in {s['wall_seconds']:.2f} s ({s['realtime_factor']}x real time)"
    )
    for name, t in s["trains"].items():
        click.echo(
            f"  {name}: start {t['start']}, {t['distance_m'] / 1000.0:.2f} km, "
            f"{t['stops']}/{t['booked_stops']} stops; {tt['outcomes'].get(name, '')}"
        )
    for name, o in tt["outcomes"].items():
        if name not in s["trains"]:
            click.echo(f"  {name}: {o}")
    for r in result.timetable:
        click.echo(
            f"  {r['train']} at {r['station']}: booked {clock(r['sched_arr'])}-{clock(r['sched_dep'])}, "
            f"actual {clock(r['actual_arr'])}-{clock(r['actual_dep'])}"
        )
    for simp in result.simplifications:
        click.echo(f"simplified: {simp}", err=True)
    for e in result.replay.events:
        if e.kind == "formed" and getattr(e, "how", "") in ("attach", "detach", "pickup", "transfer"):
            # joins and splits change the trains' cars: said with the run (docs/timetables.md §5.6)
            click.echo(
                f"  {e.clock} {e.how}: {e.train} -> {e.new_train}: {tt['outcomes'].get(e.train, '')}",
                err=True,
            )
    for e in result.replay.events:
        if e.kind in ("deadlock", "stuck", "derailment", "collision", "side_collision", "not_at_end") or (
            e.kind == "warning" and "simplified" not in (getattr(e, "message", "") or "")
        ):
            train = getattr(e, "train", None)
            who = f"{train}: " if train is not None else ""
            click.echo(
                f"  event {getattr(e, 'clock', None) or ''} {e.kind}: {who}{getattr(e, 'message', None) or ''}",
                err=True,
            )
    if s["not_at_end"]:
        click.echo(f"not at their end: {', '.join(s['not_at_end'])}", err=True)
    click.echo(f"wrote {len(files)} files to {out_dir}")
    return EXIT_FINDINGS if result.failed else 0
