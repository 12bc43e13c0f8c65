"""Aspects and scripts: the heads as the scripts see them, the signal look-ups the
scripts call, and the passes of the scripts (docs/signals.md §2.6, §2.7, §4.5).

Open Rails keeps the same concept in ``SignalHead`` / ``SignalObject`` and its script
interpreter (Simulation/Signalling); here :class:`SignalAspects` owns the heads of one
interlocking and reads the interlocking's block states, claims and routes.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from heapq import heappop, heappush
from typing import TYPE_CHECKING, Any

from ..formats.sigcfg import ASPECTS, CLEAR_2, STOP, SUBTYPES
from .circuits import BLOCK_CLEAR
from .events import ScriptFailed
from .objects import Head
from .schedule import BLK, EN, LV, NN, RO, ST, SW, ScriptSchedule

#: How far (sections, along the switches as set) a look-up for the next signal of a function
#: goes; Open Rails goes on to the end of the set track.
SEARCH_SECTIONS = 256
#: How far (sections) ``route_set`` follows the switches as set from a signal; Open Rails
#: goes on to the end of the track or the first section met twice.
ROUTE_SET_SECTIONS = 4096

if TYPE_CHECKING:
    from .trains import TrainState

#: The interlocking this part belongs to (:class:`~tdbtools.signals.runtime.Interlocking`;
#: not imported: runtime imports this module).
Interlocking = Any


class HeadRuntime:
    """A head while the runtime runs it: what its script reads (docs/signals.md §2.6).

    Every built-in that reads something that can change (a block, an enabled train, a
    head's state, an lvar, a switch, a route) records it in ``self.asp.reads`` as a cell of
    :mod:`.schedule`: a head runs again only when a cell it read changed (§4.4). A new
    built-in must do the same (``tests/test_signal_schedule.py`` lists them)."""

    __slots__ = (
        "ilk",
        "asp",
        "sig",
        "head",
        "hid",
        "state",
        "draw_state",
        "enabled",
        "approach_position",
        "approach_speed",
        "type",
        "failed",
        "_dds",
        "_feat",
    )

    def __init__(self, ilk: Interlocking, asp: SignalAspects, sig: int, head: Head, hid: int) -> None:
        self.ilk, self.asp, self.sig, self.head, self.hid = ilk, asp, sig, head, hid
        self.type = head.type
        self.state = STOP
        self.draw_state = 0
        self.enabled = 0
        #: Its script failed once (ScriptFailed): it follows the basic rule from then on.
        self.failed = False
        t = head.type
        self.approach_position = int(t.approach_position) if t and t.approach_position is not None else -1
        self.approach_speed = int(t.approach_speed) if t and t.approach_speed is not None else -1
        # What the scripts ask every pass of data that never changes (types and world
        # flags are frozen): worked out once.
        self._dds = {a: t.def_draw_state(a) for a in range(len(ASPECTS))} if t is not None else {}
        o = ilk.objects[sig]
        self._feat = tuple(o.sig_feature(f) for f in range(len(SUBTYPES)))

    # MSTS set ---------------------------------------------------------------------------------
    def block_state(self) -> int:
        self.asp.reads.add(BLK + self.sig)
        return self.ilk.block[self.sig]

    def route_set(self) -> int:
        return self.asp.route_set(self.sig, self.head)

    def next_sig_lr(self, fn: int) -> int:
        nxt = self.asp.next_signal(self.sig, fn)
        if nxt < 0:
            return STOP
        a = self.asp.sig_lr(nxt, fn)
        return CLEAR_2 if a < 0 and fn == 0 else (STOP if a < 0 else a)

    def next_sig_mr(self, fn: int) -> int:
        nxt = self.asp.next_signal(self.sig, fn)
        if nxt < 0:
            return STOP
        a = self.asp.sig_mr(nxt, fn)
        return STOP if a < 0 else a

    def this_sig_lr(self, fn: int) -> int:
        return self.asp.sig_lr(self.sig, fn)

    def this_sig_mr(self, fn: int) -> int:
        return self.asp.sig_mr(self.sig, fn)

    def opp_sig_lr(self, fn: int) -> int:
        return STOP

    opp_sig_mr = opp_sig_lr

    def dist_multi_sig_mr(self, fn1: int, fn2: int) -> int:
        return self.asp.dist_multi(self.sig, fn1, fn2, use_route_set=True)

    def dist_multi_sig_mr_of_lr(self, fn1: int, fn2: int) -> int:
        return self.asp.dist_multi(self.sig, fn1, fn2, use_route_set=False)

    def sig_feature(self, feature: int) -> int:
        if 0 <= feature < len(self._feat):
            return self._feat[feature]
        return self.ilk.objects[self.sig].sig_feature(feature)

    def hashead(self, n: int) -> int:
        return self.ilk.objects[self.sig].hashead(n)

    def def_draw_state(self, aspect: int) -> int:
        d = self._dds.get(aspect)
        if d is not None:
            return d
        return self.type.def_draw_state(aspect) if self.type is not None else -1

    # OR additions (the common ones; the rest read 0) ------------------------------------------
    def next_nsig_lr(self, fn: int, n: int) -> int:
        sig = self.sig
        a = STOP
        for _ in range(max(n, 1)):
            sig = self.asp.next_signal(sig, fn)
            if sig < 0:
                return STOP
            a = self.asp.sig_lr(sig, fn)
            if a <= STOP:
                return STOP
        return a

    def next_sig_id(self, fn: int) -> int:
        return self.asp.next_signal(self.sig, fn)

    def next_nsig_id(self, fn: int, n: int) -> int:
        sig = self.sig
        for _ in range(max(n, 1)):
            sig = self.asp.next_signal(sig, fn)
            if sig < 0:
                return -1
        return sig

    def opp_sig_id(self, fn: int) -> int:
        return -1

    def id_sig_enabled(self, sid: int) -> int:
        if not 0 <= sid < len(self.ilk.objects):
            return 0
        self.asp.reads.add(EN + sid)
        return int(self.asp.enabled_for(sid) >= 0)

    def id_sig_lr(self, sid: int, fn: int) -> int:
        if not 0 <= sid < len(self.ilk.objects):
            return STOP
        a = self.asp.sig_lr(sid, fn)
        return STOP if a < 0 else a

    def store_lvar(self, i: int, v: int) -> int:
        lv = self.asp.lvars[self.sig]
        if lv.get(i) != v or i not in lv:
            self.asp.lvar_changed = True
            self.asp.written.append(LV + self.sig)
        lv[i] = v
        return 0

    def this_sig_lvar(self, i: int) -> int:
        self.asp.reads.add(LV + self.sig)
        return self.asp.lvars[self.sig].get(i, 0)

    def next_sig_lvar(self, fn: int, i: int) -> int:
        nxt = self.asp.next_signal(self.sig, fn)
        if nxt < 0:
            return 0
        self.asp.reads.add(LV + nxt)
        return self.asp.lvars[nxt].get(i, 0)

    def id_sig_lvar(self, sid: int, i: int) -> int:
        if not 0 <= sid < len(self.ilk.objects):
            return 0
        self.asp.reads.add(LV + sid)
        return self.asp.lvars[sid].get(i, 0)

    def approach_control_position(self, d: int) -> int:
        return self.asp.approach(self.sig, d, None, forced=False)

    def approach_control_position_forced(self, d: int) -> int:
        return self.asp.approach(self.sig, d, None, forced=True)

    def approach_control_speed(self, d: int, v: int) -> int:
        return self.asp.approach(self.sig, d, v, forced=False)

    approach_control_next_stop = approach_control_speed

    def this_sig_noupdate(self) -> int:
        return 0

    def switchstand(self, a0: int, a1: int) -> int:
        return a0

    def __getattr__(self, name: str) -> Callable[..., int]:
        # Built-ins the runtime does not model (call-on, timing triggers, debug output) read 0.
        if name.startswith("_"):
            raise AttributeError(name)
        return _zero


def _zero(*_args: Any) -> int:
    return 0


class SignalAspects:
    """The heads of one interlocking, the look-ups their scripts make, the script passes."""

    def __init__(self, ilk: Interlocking) -> None:
        self.ilk = ilk
        objects = ilk.objects
        n = len(objects)
        self.lvars: list[dict[int, int]] = [{} for _ in range(n)]
        self.heads: list[HeadRuntime] = []
        self.heads_of: list[list[HeadRuntime]] = [[] for _ in range(n)]
        for k, o in enumerate(objects):
            for h in o.heads:
                hr = HeadRuntime(ilk, self, k, h, len(self.heads))
                self.heads.append(hr)
                self.heads_of[k].append(hr)
        # NORMAL heads first, then the others (§4.5).
        self.order = [h for h in self.heads if h.head.function == "NORMAL"] + [
            h for h in self.heads if h.head.function != "NORMAL"
        ]
        self.normal_typed = [
            [h for h in hs if h.head.function == "NORMAL" and h.type is not None] for hs in self.heads_of
        ]
        #: When each head runs again (docs/signals.md §4.4); see run_scripts.
        self.schedule = ScriptSchedule(len(self.order))
        #: The cells the script running now read, and those it wrote (lvars).
        self.reads: set[int] = set()
        self.written: list[int] = []
        self.head_volatile = False
        #: Signals a head of which changed state (drained by :meth:`take_changed`).
        self.changed: set[int] = set()
        self.lvar_changed = False
        #: Passes of the scripts that ran (not skipped): aspects change only then.
        self.passes = 0
        #: A script of the last pass read something that moves with the trains (approach
        #: control): it runs again at the next pass.
        self.volatile = False
        #: Signal -> the train its approach control cleared for (until the signal is reset).
        self.approach_cleared: dict[int, int] = {}
        self._sig_in: dict[tuple[int, int], list[int]] = {}
        self._all_sig: dict[int, list[tuple[float, int]]] = {}
        # (signal, function) -> ((switch epoch, enabled train), next signal found)
        self._next: dict[tuple[int, int], tuple[tuple[int, int], int, set[int]]] = {}
        #: Signal -> the train a signal without a NORMAL head is enabled for (-1: none):
        #: the last train that reserved the section holding it, in its direction (§4.5).
        self.enabled_other = [-1] * n

    def enabled_for(self, sig: int) -> int:
        """The train ``sig`` is enabled for (-1: none): a NORMAL signal's is the train it
        was requested by; any other signal's is the last train that reserved its section."""
        if self.ilk.objects[sig].is_normal:
            return self.ilk.enabled_train[sig]
        return self.enabled_other[sig]

    def note_reserved(self, sec: int, direction: int, train: int) -> None:
        """A section reserved for ``train`` running ``direction``: every signal in it facing
        that way with no NORMAL head becomes enabled for the train, as Open Rails'
        ``TrackCircuitSection.Reserve`` sets ``enabledTrain`` of the non-NORMAL signals of
        the section (Simulation/Signalling/TrackCircuitSection.cs, read for facts). It stays
        so until another train reserves the section (Open Rails does not reset it either)."""
        objects = self.ilk.objects
        for x in self.signals_in(sec, direction):
            if not objects[x].is_normal:
                self.enabled_other[x] = train

    def forget_train(self, train: int) -> None:
        """A train left the world: the signals enabled for it are free."""
        self.enabled_other = [-1 if k == train else k for k in self.enabled_other]

    # -- signal look-ups for the scripts (§2.6, §2.7) -------------------------------------------
    def sig_lr(self, sig: int, fn: int) -> int:
        self.reads.add(ST + sig)
        best = -1
        for h in self.heads_of[sig]:
            if h.head.function_index == fn and h.state > best:
                best = h.state
        return best

    def sig_mr(self, sig: int, fn: int) -> int:
        self.reads.add(ST + sig)
        worst = 99
        for h in self.heads_of[sig]:
            if h.head.function_index == fn and h.state < worst:
                worst = h.state
        return -1 if worst == 99 else worst

    def next_signal(self, sig: int, fn: int) -> int:
        """The next signal with a head of function ``fn`` ahead of ``sig`` (§2.7), as Open
        Rails' ``SONextSignal``: for a NORMAL signal asking for NORMAL, the end signal of its
        route; else along the sections as set (the switches as they lie, those of a cleared
        route set for its train), past NORMAL signals, up to SEARCH_SECTIONS sections or the
        end of the track; not found that way, along the enabled train's path up to the next
        NORMAL signal (the signal's route)."""
        ilk = self.ilk
        reads = self.reads
        if fn == 0 and ilk.objects[sig].is_normal:
            reads.add(NN + sig)
            return ilk.next_normal[sig]
        reads.add(EN + sig)
        t_idx = self.enabled_for(sig)
        key = (sig, fn)
        stamp = (ilk.circuits.switch_epoch, t_idx)
        hit = self._next.get(key)
        if hit is not None and hit[0] == stamp:
            reads.update(hit[2])
            return hit[1]
        found = -1
        switches: set[int] = set()  # the switches the search went through (what it read)
        for x in self._ahead(sig, switches):
            if any(h.head.function_index == fn for h in self.heads_of[x]):
                found = x
                break
        if found < 0 and t_idx >= 0:
            # not found along the set sections: the signal's own route for its train (up to
            # the next NORMAL signal), as Open Rails falls back on the signal's route
            lst = self.all_signals(ilk.trains[t_idx])
            pos = next((i for i, (_s, x) in enumerate(lst) if x == sig), -1)
            for _s, x in lst[pos + 1 :] if pos >= 0 else ():
                if any(h.head.function_index == fn for h in self.heads_of[x]):
                    found = x
                    break
                if ilk.objects[x].is_normal:
                    break
        self._next[key] = (stamp, found, switches)
        reads.update(switches)
        return found

    def _walk_switches(self, start: int, walk: list[tuple[int, int]], out: set[int]) -> None:
        """The switches a walk from section ``start`` depended on, as cells (any junction in it)."""
        sections = self.ilk.sections
        for s_id in (start, *(w for w, _d in walk)):
            sec = sections[s_id]
            if sec.kind == "junction":
                out.add(SW + sec.node)

    def _ahead(self, sig: int, switches: set[int]) -> Iterator[int]:
        """The signals facing the same way beyond ``sig``, in order, along the sections as
        set (each once; ``sig`` itself not), up to SEARCH_SECTIONS sections; the switches
        of the walks it made go to ``switches``."""
        ilk = self.ilk
        o = ilk.objects[sig]
        d = o.tc_direction
        sec = ilk.sig_section[sig] if o.is_normal else self._section_at(o.node, o.offset)
        if sec < 0:
            return
        seen = {sig}
        if not o.is_normal:  # the rest of its own section first
            for x in self.signals_in(sec, d):
                off = ilk.objects[x].offset
                if x not in seen and (off > o.offset + 1e-6 if d == 1 else off < o.offset - 1e-6):
                    seen.add(x)
                    yield x
        walked = 0
        cur = sec
        while walked < SEARCH_SECTIONS:
            walk = ilk.circuits.walk_from(cur, d)
            self._walk_switches(cur, walk, switches)
            if not walk:
                return
            for s_id, sd in walk:
                walked += 1
                for x in self.signals_in(s_id, sd):
                    if x not in seen:
                        seen.add(x)
                        yield x
            cur, d = walk[-1]

    def _section_at(self, node: int, offset: float) -> int:
        """The section of a vector node holding ``offset`` (-1: not a track node)."""
        ilk = self.ilk
        ids = ilk.node_secs.get(node)
        if not ids:
            return -1
        bounds = ilk.circuits.node_cuts[node]
        i = min(max(bisect.bisect_right(bounds, offset) - 1, 0), len(ids) - 1)
        return ids[i]

    def signals_in(self, sec: int, d: int) -> list[int]:
        """The signals facing direction ``d`` in section ``sec``, in the order met."""
        key = (sec, d)
        hit = self._sig_in.get(key)
        if hit is None:
            s = self.ilk.sections[sec]
            found = [
                (o.offset, i)
                for i, o in enumerate(self.ilk.objects)
                if o.node == s.node and o.tc_direction == d and s.start - 1e-6 <= o.offset <= s.end + 1e-6
            ]
            found.sort(reverse=(d == 0))
            hit = self._sig_in[key] = [i for _o, i in found]
        return hit

    def all_signals(self, t: TrainState) -> list[tuple[float, int]]:
        """(line distance, signal) of every signal along a train's path in its direction."""
        hit = self._all_sig.get(t.index)
        if hit is None:
            out = []
            sections, objects = self.ilk.sections, self.ilk.objects
            for e in t.elements:
                for x in self.signals_in(e.section, e.direction):
                    o = objects[x]
                    s = (
                        e.s0 + (o.offset - sections[e.section].start)
                        if e.direction == 1
                        else e.s0 + (sections[e.section].end - o.offset)
                    )
                    out.append((s, x))
            # each signal once: one standing where a section is cut is in both sections
            first: dict[int, float] = {}
            for d_s, x in sorted(out):
                first.setdefault(x, d_s)
            hit = self._all_sig[t.index] = sorted((d_s, x) for x, d_s in first.items())
        return hit

    def dist_multi(self, sig: int, fn1: int, fn2: int, *, use_route_set: bool) -> int:
        result = CLEAR_2
        found = False
        cur = sig
        for _ in range(32):
            cur = self.next_signal(cur, fn1)
            if cur < 0:
                break
            self.reads.add(ST + cur)
            heads = [
                h
                for h in self.heads_of[cur]
                if h.head.function_index == fn1 and (not use_route_set or self.route_set(cur, h.head))
            ]
            if heads:
                found = True
                result = min(
                    result, min(h.state for h in heads) if use_route_set else max(h.state for h in heads)
                )
            if any(h.head.function_index == fn2 for h in self.heads_of[cur]):
                break
        return result if found else STOP

    def route_set(self, sig: int, head: Head) -> int:
        """Is the node past the head's linked junction set (docs/signals.md §4.5), as Open
        Rails' ``SignalObject.route_set``: for a signal enabled for a train, on that train's
        path, else on the signal's route; not found there (or for a signal without a NORMAL
        head), along the sections as set from the signal on, *past* NORMAL signals, to the
        end of the track. A NORMAL signal no train enabled: not set."""
        if head.junction is None:
            return 1
        ilk = self.ilk
        main = head.junction[2]
        sections = ilk.sections
        self.reads.add(EN + sig)
        t_idx = self.enabled_for(sig)
        normal = ilk.objects[sig].is_normal
        if t_idx >= 0:
            elems = ilk.trains[t_idx].elements
            if any(sections[e.section].node == main and sections[e.section].kind == "normal" for e in elems):
                return 1
            self.reads.add(RO + sig)
            if any(sections[e.section].node == main for e in ilk.route_of[sig] or ()):
                return 1
        elif normal:
            return 0
        o = ilk.objects[sig]
        sec = ilk.sig_section[sig] if normal else self._section_at(o.node, o.offset)
        if sec < 0:
            return 0
        if sections[sec].node == main:
            return 1
        walk = ilk.circuits.walk_from(sec, o.tc_direction, limit=ROUTE_SET_SECTIONS, past_signals=True)
        self._walk_switches(sec, walk, self.reads)
        for s_id, _d in walk:
            if sections[s_id].node == main and sections[s_id].kind == "normal":
                return 1
        return 0

    # -- the passes (§4.5) -----------------------------------------------------------------------
    def run_scripts(self, *, force_enabled: bool = False) -> None:
        """One pass of the heads' scripts, NORMAL heads first (§4.5). ``force_enabled``
        makes every signal read ENABLED = 1 (for testing the scripts alone).

        The scripts are pure functions of what they read (docs/signals.md §4.4: timers and
        call-on read 0): with the interlocking ``incremental``, a pass runs only the heads
        an input of which changed since their last run (:class:`ScriptSchedule`), in the
        full pass's order, and none when none did; else every head runs."""
        ilk = self.ilk
        sched = self.schedule
        order = self.order
        if ilk.incremental:
            due = sched.due(ilk, force_enabled)
        else:
            sched.forget()
            due = set(range(len(order)))
        if not due:
            return
        self.passes += 1
        self.lvar_changed = False
        self.volatile = False
        block = ilk.block
        heap = sorted(due)
        readers, later = sched.readers, sched.dirty
        changed = self.changed
        while heap:
            p = heappop(heap)
            h = order[p]
            if h.type is None:
                continue
            sig = h.sig
            # (every head reads its own state, and ENABLED)
            reads = self.reads = {EN + sig, ST + sig}
            written = self.written = []
            self.head_volatile = False
            h.enabled = 1 if force_enabled else int(self.enabled_for(sig) >= 0)
            sc = h.head.script
            before = (h.state, h.draw_state)
            if sc is not None and not h.failed:
                try:
                    h.state, h.draw_state = sc.function(h)
                except Exception as exc:  # noqa: BLE001 - any failure of one route's script
                    self._fail(h, exc)
            if sc is None or h.failed:
                reads.add(BLK + sig)
                h.state = (
                    h.type.least_restrictive() if block[sig] == BLOCK_CLEAR else h.type.most_restrictive()
                )
                h.draw_state = h.type.def_draw_state(h.state)
            sched.record(p, reads, self.head_volatile)
            if (h.state, h.draw_state) != before:
                written.append(ST + sig)
                changed.add(sig)
            # Its readers further on run in this pass, those before it (and itself) in the next.
            for cell in written:
                for q in readers.get(cell, ()):
                    if q > p:
                        if q not in due:
                            due.add(q)
                            heappush(heap, q)
                    else:
                        later.add(q)
        self.reads = set()  # (reads outside the scripts go nowhere)

    def take_changed(self) -> list[int]:
        """The signals a head of which changed state since the last call, in order."""
        out = sorted(self.changed)
        self.changed.clear()
        return out

    def _fail(self, h: HeadRuntime, exc: Exception) -> None:
        """Disable a head's script that raised (a division by zero, ...): recorded as a
        :class:`ScriptFailed` event at the script's location; the replay goes on with the
        head on the basic rule (as a head without a script)."""
        h.failed = True
        sc = h.head.script
        assert sc is not None
        self.ilk.events.append(
            ScriptFailed(
                time=self.ilk.time,
                signal=h.sig,
                head=h.hid,
                script=sc.name,
                path=sc.path,
                line=sc.line,
                message=f"{type(exc).__name__}: {exc}",
            )
        )

    def approach(self, sig: int, distance: int, speed: int | None, *, forced: bool) -> int:
        """Approach control (Open Rails ``ApproachControlPosition`` / ``ApproachControlSpeed``,
        docs/signals.md §4.5): 1 once the train the signal is cleared for is closer than
        ``distance`` m (and, with ``speed``, slower than ``speed`` m/s); it stays 1 for that
        train until the signal is reset. Not ``forced``: only for the train's next signal."""
        ilk = self.ilk
        self.reads.add(EN + sig)
        t_idx = ilk.enabled_train[sig]
        if t_idx < 0:
            return 0
        if self.approach_cleared.get(sig) == t_idx:
            return 1  # (and stays 1 while the signal is enabled for that train)
        # The answer moves with the train: the head runs again at every pass.
        self.volatile = self.head_volatile = True
        t = ilk.trains[t_idx]
        if not forced:
            if t.next_signal >= len(t.signals) or t.signals[t.next_signal][1] != sig:
                return 0
        at = next((s for s, x in self.all_signals(t) if x == sig), None)
        if at is None or at - t.front >= distance:
            return 0
        if speed is not None and abs(t.speed) >= speed:
            return 0
        self.approach_cleared[sig] = t_idx
        return 1

    def aspect(self, sig: int) -> int:
        """The aspect a train reads: the least restrictive of the NORMAL heads; a state
        outside the aspect table (a script may set any int, as in Open Rails) reads STOP."""
        a = self.sig_lr(sig, 0)
        return STOP if a < 0 or a >= len(ASPECTS) else a
