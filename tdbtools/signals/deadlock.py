"""Deadlocks: the look-ahead that keeps trains out of a single line another train holds
the other way (§4.9), and the search for trains waiting on each other in a cycle (§4.8).

Open Rails keeps the first in ``DeadlockInfo`` (Simulation/Signalling) and its AI
trains' deadlock checks; :class:`DeadlockWatch` reads the interlocking's trains and
sections and writes :class:`~tdbtools.signals.events.Deadlock` events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .events import Deadlock

if TYPE_CHECKING:
    from .trains import TrainState

#: The interlocking this part belongs to (:class:`~tdbtools.signals.runtime.Interlocking`;
#: not imported: runtime imports this module).
Interlocking = Any


class DeadlockWatch:
    """Deadlock look-ahead and detection for one interlocking."""

    def __init__(self, ilk: Interlocking, after: float) -> None:
        self.ilk = ilk
        #: Seconds trains must have waited before a cycle among them counts as a deadlock.
        self.after = after
        #: Deadlock look-ahead (§4.9): a train does not enter a stretch of its path that
        #: another train's path runs the other way while that train holds part of it.
        self.avoid = False
        self.runs: dict[int, list[tuple[int, frozenset[int]]]] | None = None
        self.runs_at: dict[int, dict[int, list[int]]] = {}

    # -- look-ahead (§4.9) -----------------------------------------------------------------------
    def build_runs(self) -> None:
        """For every pair of trains, the stretches of the first one's path that the other's
        path runs the other way: maximal runs of consecutive sections both use, traversed in
        opposite directions, with the junctions at their ends that both pass."""
        users: dict[int, dict[int, set[int]]] = {}
        for u in self.ilk.trains:
            for e in u.elements:
                users.setdefault(e.section, {}).setdefault(u.index, set()).add(e.direction)
        self.runs, self.runs_at = {}, {}
        for t in self.ilk.trains:
            self.runs[t.index], self.runs_at[t.index] = self._runs_of(t, users)

    def _runs_of(
        self, t: TrainState, users: dict[int, dict[int, set[int]]]
    ) -> tuple[list[tuple[int, frozenset[int]]], dict[int, list[int]]]:
        """One train's runs (other train, sections) and, per section, the runs through it."""
        runs: list[tuple[int, frozenset[int]]] = []
        at: dict[int, list[int]] = {}
        open_run: dict[int, list[int]] = {}  # other train -> sections of its run so far
        tail: dict[int, list[int]] = {}  # junctions after the run's last plain section
        lead: dict[int, list[int]] = {}  # junctions just before, both pass them
        sections = self.ilk.sections

        def close(u: int) -> None:
            secs = open_run.pop(u) + tail.pop(u, [])
            rid = len(runs)
            runs.append((u, frozenset(secs)))
            for s in secs:
                at.setdefault(s, []).append(rid)

        for e in t.elements:
            us = users.get(e.section, {})
            if sections[e.section].kind == "junction":
                for u in list(open_run):
                    if u in us:
                        tail.setdefault(u, []).append(e.section)
                    else:
                        close(u)
                for u in us:
                    if u != t.index and u not in open_run:
                        lead.setdefault(u, []).append(e.section)
                continue
            opp = {u for u, ds in us.items() if u != t.index and (1 - e.direction) in ds}
            for u in list(open_run):
                if u not in opp:
                    close(u)
            for u in opp:
                if u in open_run:
                    open_run[u] += tail.pop(u, []) + [e.section]
                else:
                    open_run[u] = lead.get(u, []) + [e.section]
            lead = {}
        for u in list(open_run):
            close(u)
        return runs, at

    def opposed(self, t: TrainState, section: int) -> set[int]:
        """Trains in the world whose path runs the other way over a stretch of ``t``'s path
        through ``section``, holding part of it while ``t`` holds none of it: ``t`` must not
        enter, or the two meet head-on where neither can pass (§4.9)."""
        if not self.avoid:
            return set()
        if self.runs is None:
            self.build_runs()
        assert self.runs is not None
        trains, sections = self.ilk.trains, self.ilk.sections
        out: set[int] = set()
        runs = self.runs[t.index]
        for rid in self.runs_at[t.index].get(section, ()):
            u, secs = runs[rid]
            if u in out or not trains[u].on_track or trains[u].done:
                continue
            theirs = mine = False
            for s in secs:
                sec = sections[s]
                if sec.reserved == u or u in sec.occupants:
                    theirs = True
                if sec.reserved == t.index or t.index in sec.occupants:
                    mine = True
                    break
            if theirs and not mine:
                out.add(u)
        return out

    # -- detection (§4.8) ------------------------------------------------------------------------
    def blockers(self, t: TrainState) -> tuple[set[int], list[int]]:
        """The trains ``t`` waits for and the sections where they stand in its way."""
        ilk = self.ilk
        if t.next_signal >= len(t.signals):
            return set(), []
        sig = t.signals[t.next_signal][1]
        elems = ilk.signal_route(sig, t) if ilk.enabled_train[sig] == t.index else []
        others: set[int] = set()
        secs: list[int] = []
        if ilk.enabled_train[sig] not in (-1, t.index):
            others.add(ilk.enabled_train[sig])
        others |= t.opposed | t.stopped_by
        for e in elems:
            sec = ilk.sections[e.section]
            who = set(sec.occupants) - {t.index}
            if sec.reserved >= 0 and sec.reserved != t.index:
                who.add(sec.reserved)
            if who:
                others |= who
                secs.append(e.section)
        return others, secs

    def check(self) -> None:
        """Record a cycle of trains that have waited ``after`` seconds on each other."""
        ilk = self.ilk
        waiting = {
            t.index: t
            for t in ilk.trains
            if t.waiting_since is not None and not t.deadlocked and ilk.time - t.waiting_since >= self.after
        }
        if len(waiting) < 2:
            return
        graph = {k: self.blockers(t) for k, t in waiting.items()}
        for start in graph:
            path = [start]
            seen = {start}
            cur = start
            while True:
                nxt = [o for o in graph.get(cur, (set(), []))[0] if o in graph]
                if not nxt:
                    break
                cur = nxt[0]
                if cur in seen:
                    cycle = path[path.index(cur) :]
                    ilk.events.append(
                        Deadlock(
                            time=ilk.time,
                            trains=tuple(ilk.trains[k].name for k in cycle),
                            sections=tuple(sorted({s for k in cycle for s in graph[k][1]})),
                            waiting_since=min(ilk.trains[k].waiting_since or ilk.time for k in cycle),
                        )
                    )
                    for k in cycle:
                        ilk.trains[k].deadlocked = True
                    return
                seen.add(cur)
                path.append(cur)
