"""`tdbtools replay FILE.timetable-or`: the command-line shell over
:func:`tdbtools.physics.timetable.replay_timetable` (docs/timetables.md §5)."""

from __future__ import annotations

from pathlib import Path

import click


def replay_timetable_command(
    path: Path,
    player: str | None,
    stand_in: bool,
    out_dir: Path,
    plot: bool,
    step: float | None,
    duration: float | None,
    strict: bool = False,
    no_signals: bool = False,
) -> int:
    """Replay, write the outputs, report on stdout, and say on stderr what was
    simplified or went wrong; returns the exit status (1: a train did not reach its
    end, or derailed, collided, deadlocked, got stuck)."""
    from .cli import EXIT_FINDINGS, _load
    from .physics.activity import clock
    from .physics.timetable import replay_timetable
    from .physics.timetable_plan import route_of

    route = _load(route_of(path), strict=strict)
    result = replay_timetable(
        path,
        player=player,
        route=route,
        stand_in=stand_in,
        step=step if step is not None else 0.5,
        duration=duration,
        signals=False if no_signals else None,
    )
    files = result.write(out_dir)
    if plot:
        from .render.spacetime import plot_space_time

        files.append(plot_space_time(result.activity, out_dir / "spacetime.png"))
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
