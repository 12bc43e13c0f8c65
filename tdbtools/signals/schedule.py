"""When a head's script runs again (docs/signals.md §4.4): what each script read at its last
run, and which of those inputs changed since.

A script is a pure function of what it reads (block states, enabled trains, next signals,
routes, switches, head states, lvars; timers read 0): run again on the same inputs it gives
the same state and stores the same lvars. So a pass runs only the heads one of whose inputs
changed since their last run, in the order of the full pass (NORMAL heads first); a head
whose output changes makes its readers further on in the order run in this pass, and those
before it (and itself) in the next, exactly as a full pass every cycle would see them.
Each run records the *cells* it read (a kind and a signal, junction or section index); the
reverse index (cell -> heads reading it) turns a change into the heads to run. The cost of a
cycle follows what changed, not the number of signals. Open Rails has no such schedule (it
updates every signal in turn); this is an optimisation with the same results
(``tests/test_signal_cycle.py`` compares it with full passes cycle by cycle).
"""

from __future__ import annotations

from itertools import compress, count
from operator import ne
from typing import Any

_CELL = 1 << 32
#: Kinds of cells (a cell is kind + index): a signal's block state, enabled train, next
#: NORMAL signal, route; its heads' states; its lvars; a junction's switch.
BLK, EN, NN, RO, ST, LV, SW = (k * _CELL for k in range(7))


def changed_at(now: list, before: list) -> list[int]:
    """Indexes where two lists of the same length differ (found in C when they do not)."""
    if now == before:
        return []
    return list(compress(count(), map(ne, now, before)))


class ScriptSchedule:
    """The heads' last reads and the heads due to run (positions in the pass order)."""

    def __init__(self, n: int) -> None:
        self.deps: list[set[int]] = [set() for _ in range(n)]
        self.readers: dict[int, set[int]] = {}
        #: Positions to run at the next pass (all: never run yet).
        self.dirty: set[int] = set(range(n))
        #: Positions whose last run read something that moves with the trains (approach
        #: control for a train not yet close): they run at every pass.
        self.volatile: set[int] = set()
        self._shadow: tuple[list, ...] | None = None
        self._thrown = 0
        self._force: bool | None = None

    def due(self, ilk: Any, force_enabled: bool) -> set[int]:
        """The positions to run now: those left from the last pass, the volatile ones and the
        readers of every input changed since (the runtime's lists compared with copies)."""
        due = self.dirty
        due |= self.volatile
        # (a signal without a NORMAL head is enabled from enabled_other: the same EN cell)
        now = (ilk.block, ilk.enabled_train, ilk.aspects.enabled_other, ilk.next_normal, ilk.route_of)
        thrown = ilk.circuits.thrown
        if self._shadow is None or force_enabled != self._force:
            due.update(range(len(self.deps)))
            self._shadow = tuple(list(x) for x in now)
        else:
            readers = self.readers
            # (a copy only of the lists that changed: most cycles none did)
            shadow = []
            for kind, cur, old in zip((BLK, EN, EN, NN, RO), now, self._shadow):
                diff = changed_at(cur, old)
                for k in diff:
                    due.update(readers.get(kind + k, ()))
                shadow.append(list(cur) if diff or len(cur) != len(old) else old)
            self._shadow = tuple(shadow)
            for j in thrown[self._thrown :]:
                due.update(readers.get(SW + j, ()))
        self._thrown = len(thrown)
        self._force = force_enabled
        self.dirty = set()
        return due

    def forget(self) -> None:
        """Everything runs at the next pass (after full passes, which keep no inputs)."""
        self._shadow = None

    def record(self, p: int, reads: set[int], volatile: bool) -> None:
        """Position ``p`` ran and read ``reads``."""
        old = self.deps[p]
        if old != reads:
            readers = self.readers
            for c in old - reads:
                readers[c].discard(p)
            for c in reads - old:
                got = readers.get(c)
                if got is None:
                    readers[c] = {p}
                else:
                    got.add(p)
            self.deps[p] = reads
        if volatile:
            self.volatile.add(p)
        else:
            self.volatile.discard(p)
