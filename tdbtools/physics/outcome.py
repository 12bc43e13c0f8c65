"""What became of each service of an activity replay, told plainly
(docs/activities.md §4.6): how far along its whole path it got, why it stopped, the
stops booked and made; and one short list of what the replay tolerated."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["ServiceOutcome", "service_outcomes", "tolerated", "unscripted_signals"]


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


def _listed(values: list[int], most: int = 8) -> str:
    vals = sorted(set(values))
    head = ", ".join(map(str, vals[:most]))
    return head + (f" … ({len(vals)} in all)" if len(vals) > most else "")


def unscripted_signals(heads) -> list[str]:  # noqa: ANN001  (the interlocking's HeadRuntime list)
    """What the signalling tolerates before it runs: heads whose type has no script (they
    follow the basic rule: their most restrictive aspect while the block ahead is not
    clear, else their least; docs/signals.md §4.5) and heads whose type is not in the
    sigcfg (they stay at STOP). One line per kind, naming the types and the signals."""
    no_script: dict[str, list[int]] = {}
    no_type: dict[str, list[int]] = {}
    for h in heads:
        if h.type is None:
            no_type.setdefault(str(h.head.type_name), []).append(int(h.sig))
        elif h.head.script is None:
            no_script.setdefault(str(h.head.type_name), []).append(int(h.sig))
    out = []
    if no_script:
        n = sum(len(v) for v in no_script.values())
        out.append(
            f"{n} signal head(s) without a script follow the basic rule: "
            + "; ".join(f"type {t!r} (signals {_listed(v)})" for t, v in sorted(no_script.items()))
        )
    if no_type:
        n = sum(len(v) for v in no_type.values())
        out.append(
            f"{n} signal head(s) of a type the sigcfg does not have stay at STOP: "
            + "; ".join(f"type {t!r} (signals {_listed(v)})" for t, v in sorted(no_type.items()))
        )
    return out


def tolerated(events) -> list[str]:  # noqa: ANN001
    """One line per kind of thing the replay tolerated or substituted: stand-in stock,
    booked stops skipped (with the reason), setup warnings (a missing traffic file or
    entry, unscripted signals, waiting-point orders not carried out, ...), signal scripts
    disabled after an error. Empty when there was nothing."""
    stand_ins: dict[str, int] = {}
    skipped: list[str] = []
    other: list[str] = []
    failed: list[str] = []
    for e in events:
        if e.kind == "stand_in":
            stand_ins[e.train] = stand_ins.get(e.train, 0) + 1
        elif e.kind == "script_error":
            failed.append(f"signal {e.signal} head {e.head} ({e.script}, {e.path}:{e.line})")
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
    if failed:
        lines.append(
            f"{len(failed)} signal script(s) disabled after an error, basic rule from then on: "
            + "; ".join(failed)
        )
    return lines
