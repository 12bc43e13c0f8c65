"""A replay's events as the console tells them: serious events one by one, gentle
impacts as a count, failed signal scripts on stderr."""

from __future__ import annotations

import click


def _script_errors(events) -> bool:  # noqa: ANN001
    """Print the signal scripts that failed during a replay (on stderr); True if any did:
    the replay ran on, those heads on the basic rule, but its outcome is not the scripts'."""
    bad = [e for e in events if e.kind == "script_error"]
    for e in bad:
        click.echo(
            f"{e.path}:{e.line}: signal script {e.script} (signal {e.signal}) failed at {e.time:.0f} s: "
            f"{e.message}; the head follows the basic rule from then on",
            err=True,
        )
    return bool(bad)


def _cars_text(cars) -> str:  # noqa: ANN001
    """[['passenger', 0], ['passenger', 1]] → passenger car 0 and car 1; two trains by name."""
    if not cars:
        return ""
    if isinstance(cars[0], (list, tuple)):
        trains = list(dict.fromkeys(c[0] for c in cars))
        if len(trains) == 1:
            return f"{trains[0]} " + " and ".join(f"car {c[1]}" for c in cars)
        return " and ".join(f"{c[0]} car {c[1]}" for c in cars)
    return " and ".join(f"car {c}" for c in cars)


def _event_lines(events, limit: int = 20) -> list[str]:  # noqa: ANN001
    """The events a reader of the console needs: derailments, collisions and hard
    impacts one by one; gentle buffer impacts (slack running in at a stop) as one count."""
    out: list[str] = []
    from ..physics.events import is_gentle_impact, serious_events

    gentle = [e for e in events if is_gentle_impact(e)]
    serious: list = serious_events(events)  # (their fields by kind)
    for e in serious[:limit]:
        what = getattr(e, "message", None) or ""
        if e.kind == "impact":
            what = f"{e.relative_speed * 3.6:.1f} km/h between {_cars_text(e.cars)}"
        elif not what:
            what = _cars_text(e.cars)
        loc = getattr(e, "location", None)
        node = loc.node if loc is not None and loc.node is not None else getattr(e, "node", None)
        out.append(f"  {e.kind} at {e.time:.1f} s: {what}" + (f" (node {node})" if node is not None else ""))
    if len(serious) > limit:
        out.append(f"  … {len(serious) - limit} more events in events.json")
    if gentle:
        top = max(e.relative_speed for e in gentle) * 3.6
        out.append(
            f"  {len(gentle)} gentle buffer impact(s) (slack running in, at most {top:.1f} km/h): normal"
        )
    return out
