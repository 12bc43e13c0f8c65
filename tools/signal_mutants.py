"""Planted mutants of the signal rules (docs/signals.md §4): each is applied, the signal
family tests run, and the file restored. Every mutant must be KILLED.

Run from anywhere: ``python tools/signal_mutants.py [N ...]`` (only mutants N ...).
"""

import sys

from _mutants import run, selected

S = "tdbtools/signals/"
M = [
    # the creep speed past (before) a STOP_AND_PROCEED / RESTRICTING signal
    (S + "runtime.py", "CREEP = 2.5", "CREEP = 5.0"),
    # the aspect speed limits: ahead of the train, and the one it takes past a signal
    (S + "runtime.py", "if head_speed > 0:", "if head_speed > 1e9:"),
    (S + "runtime.py", "if self.keep_aspect_limit and t.passed is not None", "if t.passed is not None"),
    (S + "runtime.py", "if self.keep_aspect_limit and t.passed is not None and", "if False and"),
    (S + "aspect_speed.py", "return (s_sig, s_next, v) if v > 0 else None", "return None"),
    (S + "runtime.py", "and not no_speed_reduction(self.aspects, sig)", ""),
    # the section-state order: occupied before reserved
    (
        S + "routes.py",
        "        elif occ:\n            state = OCC_OPPOSITE",
        "        elif occ and sec.reserved < 0:\n            state = OCC_OPPOSITE",
    ),
    (
        S + "routes.py",
        "if abs(self.trains[other].speed) <= STANDING or odir == direction:",
        "if odir == direction:",
    ),
    # the search bound for the next signal of a function (past NORMAL signals)
    (S + "aspects.py", "SEARCH_SECTIONS = 256", "SEARCH_SECTIONS = 1"),
    # each head listed once along a train's path
    (
        S + "aspects.py",
        "hit = self._all_sig[t.index] = sorted((d_s, x) for x, d_s in first.items())",
        "hit = self._all_sig[t.index] = sorted(out)",
    ),
    # signals without a NORMAL head: enabled by the reserving train, their own block
    (S + "routes.py", "self.aspects.note_reserved(sec.index, direction, train)", "pass"),
    (S + "routes.py", "if i == 0 and not any(", "if False and not any("),
    (S + "routes.py", "if secs and secs[0][0].occupants:", "if False:"),
    (
        S + "routes.py",
        "            worst = BLOCK_OCCUPIED\n            break\n        self.block[sig] = worst",
        "            worst = BLOCK_JN_OBSTRUCTED\n            break\n        self.block[sig] = worst",
    ),
    # route_set (issue 27, h27b): the enabled train's whole path, the walk past NORMAL
    # signals, a NORMAL signal no train enabled
    (
        S + "aspects.py",
        'if any(sections[e.section].node == main and sections[e.section].kind == "normal" for e in elems):',
        "if False:",
    ),
    (S + "aspects.py", "limit=ROUTE_SET_SECTIONS, past_signals=True)", "limit=ROUTE_SET_SECTIONS)"),
    (
        S + "aspects.py",
        "        elif normal:\n            return 0",
        "        elif normal:\n            pass",
    ),
]
TESTS = [
    "tests/test_signal_family.py",
    "tests/test_signal_family_guard.py",
    "tests/test_signal_family_routeset.py",
    "tests/test_signal_aspect_speed.py",
]

sys.exit(run(M, TESTS, selected(__doc__)))
