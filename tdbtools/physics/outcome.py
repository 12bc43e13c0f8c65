"""What became of each service of an activity replay, told plainly
(docs/activities.md §4.6): how far along its whole path it got, why it stopped, the
stops booked and made; and one short list of what the replay tolerated."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["ServiceOutcome", "service_outcomes", "tolerated"]


@dataclass(frozen=True, slots=True)
class ServiceOutcome:
    """``reason``: "end of path", "duration" (still running when the replay ended),
    "stuck", "derailed", "not started" (never entered the track), "stuck at a reversal"
    (the part after a reversal could not enter)."""

    path_m: float  # metres to run: every part from the front at its start to its stop
    distance_m: float  # metres the front ran, over all parts
    reached_end: bool
    reason: str
    parts: int
    stops: int  # booked stops made
    booked_stops: int  # booked items (made, missed or not on the path)
    lead_cars: tuple[str, ...]  # per part, the car in front
    state: str = "done"  # the service driver's state in the part where it stopped

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["path_m"] = round(self.path_m, 3)
        d["distance_m"] = round(self.distance_m, 3)
        d["lead_cars"] = list(self.lead_cars)
        return d


def _reason(rep, k: int, first: bool) -> str:  # noqa: ANN001
    t, d = rep.trains[k], rep.drivers[k]
    if t.derailed:
        return "derailed"
    if t.spec.name in rep.stuck:
        if d.state == "not_started":
            return "not started" if first else "stuck at a reversal"
        return "stuck"
    if d.state in ("waiting", "ready", "not_started"):
        return "not started" if first else "stuck at a reversal"
    return "duration"


def service_outcomes(rep) -> dict[str, ServiceOutcome]:  # noqa: ANN001  (an ActivityReplay)
    """Per service (the activity's names), in the plan's order."""
    x = rep.engine.x
    out: dict[str, ServiceOutcome] = {}
    for pt in rep.plan.trains:
        ks = [rep.index[sp.spec.name] for sp in rep.parts if sp.service == pt.name]
        if not ks:  # (a planned train the replay does not run)
            continue
        path = dist = 0.0
        reason = "end of path"
        state = "done"
        made = 0
        for n, k in enumerate(ks):
            t, d = rep.trains[k], rep.drivers[k]
            path += max(float(d.path_end) - t.front0, 0.0)
            if d.state not in ("waiting", "ready", "not_started"):
                dist += max(float(x[rep.train_start[k]]) - t.front0, 0.0)
            made += sum(1 for s in d.stops if s.arrival is not None)
            if reason == "end of path" and not d.finished:
                reason, state = _reason(rep, k, n == 0), d.state
        out[pt.name] = ServiceOutcome(
            path,
            dist,
            reason == "end of path",
            reason,
            len(ks),
            made,
            len(pt.stops),
            tuple(str(rep.trains[k].consist.cars[0].file) if rep.trains[k].consist.cars else "" for k in ks),
            state,
        )
    return out


def tolerated(events) -> list[str]:  # noqa: ANN001
    """One line per kind of thing the replay tolerated or substituted: stand-in stock,
    booked stops skipped (with the reason), setup warnings (a missing traffic file or
    entry, ...). Empty when there was nothing."""
    stand_ins: dict[str, int] = {}
    skipped: list[str] = []
    other: list[str] = []
    for e in events:
        if e.kind == "stand_in":
            stand_ins[e.train] = stand_ins.get(e.train, 0) + 1
        elif e.kind == "warning":
            who = getattr(e, "train", None)
            msg = f"{who}: {e.message}" if who else e.message
            (skipped if "platform" in e.message else other).append(msg)
    lines = []
    if stand_ins:
        lines.append(
            "stand-in stock for "
            + ", ".join(f"{n} ({c} substitution{'s' if c > 1 else ''})" for n, c in stand_ins.items())
        )
    if skipped:
        lines.append(f"{len(skipped)} booked stop(s) skipped: " + "; ".join(skipped))
    lines.extend(other)
    return lines
