"""The watching stage of a replay: what happened to the cars, as replay events. The
engine's contacts (impacts, coupler snatches, cars starting and stopping) located on the
track; bogies run off a track end (derailments) or off the end of the line built for a
train; and every ``collision_check_interval`` seconds the trains' track occupancy and the
cars near a car of another line (collisions, side collisions; docs/physics.md §5).
"""

from __future__ import annotations

import functools

import numpy as np

from ...track.geometry import normalize_tile, tile_of
from ..collisions import Occupancy, TrainPosition
from ..engine import EVENT_KINDS, event_cars
from ..events import CAR_EVENT_MAKERS, SAFETY_EVENTS, EndOfLine, EventLocation, EventLog, make_location
from ..proximity import box_pairs, chords_within
from ..safety import DEFAULT_CLEARANCE_M, SafetyEvent
from .forces import pmax, pmin
from .setup import Layout

MIN_EVENT_SPEED = 0.05


class WatchStage:
    """The replay's watch over its cars and trains (module docstring)."""

    #: Pad (m) around the trains' boxes: trains closer than that are watched (the
    #: side-collision clearance and then some; docs/physics.md §5.4).
    CHECK_PAD = 10.0
    #: Above the rounding of a global-table lookup against a line's own (m).
    CHECK_SLOP = 0.01
    #: Up to this many events of a step are located in Python floats (_locate_few),
    #: more in numpy calls over all of them (_locate_many); the same numbers.
    FEW_EVENTS = 16

    def __init__(self, layout: Layout, log: EventLog) -> None:
        self.L = layout
        self.trains = layout.trains
        self.engine = layout.engine
        self.lines = layout.lines
        self.log = log
        self.occupancy = Occupancy()
        # What the collision checks need per train and car (docs/physics.md §5.4): the
        # positions at the last check and, per train, a function making its
        # TrainPosition from them.
        self._name_set = set(layout.names)
        self._checked = (np.asarray(self.engine.x).copy(), np.asarray(self.engine.v).copy())
        self._position_of = [functools.partial(self.position, k) for k in range(len(self.trains))]
        self._car_names: list[tuple[str, int]] | None = None  # (engine_events)
        self._car_tables: tuple[list, list, list] | None = None  # (_locate_few)
        #: (engine_events, _made_events) the kept events handed in and their first cars' positions
        self._handed: tuple[list, list[float]] = ([], [])
        # the contacts engine_events drops are not even made into records (compiled engine)
        self.engine.quiet_contact_speed = MIN_EVENT_SPEED
        self._shared: tuple | None = None  # (shared_rows)

    def track_ends(self, time: float) -> None:
        """After a step whose bogies went past a line end: the cars off a track end derail
        (the exact event comes from their BogieSet); a train past the end of the line
        built for it is done there."""
        L = self.L
        over = L.fb > L.line_len_tol
        off = (over & L.car_far_end) | ((L.rb < -1e-9) & L.car_near_end)
        for k in np.unique(L.car_train[off]).tolist():
            for ev in self.trains[k].bogies.check(time):
                self.safety(ev)
        for k in np.unique(L.car_train[over & ~L.car_far_end]).tolist():
            t = self.trains[k]
            if not t.derailed and t.done_at is None:
                t.finish(time)
                self.log.add(
                    EndOfLine(
                        time=time,
                        train=t.spec.name,
                        message=f"reached the end of the {t.line.length:.0f} m of track built for it",
                    )
                )

    def engine_events(self, rows: list) -> None:
        """The engine's events of one step, as its rows (``Engine.step(rows=True)``: kind
        code, time, first car, last car, line, relative speed, impulse, energy lost), to
        be made into replay events with those of the next steps (EventLog.defer): before
        anything else is logged or the events are read, :meth:`_made_events` makes them
        all in one go. Only what they need is kept, the rows and their first cars'
        positions now (not the step's positions of every car: many steps may pass before
        the events are made)."""
        # A slack closing at a walking pace (brakes or traction changing by a few per cent
        # per step) is a contact change, not a snatch or an impact (codes 0, 1); their
        # number would only follow the step (docs/running-time.md §7).
        kept = [r for r in rows if not (r[0] < 2 and abs(float(r[5])) < MIN_EVENT_SPEED)]
        if not kept:
            return
        handed, xs = self._handed
        if not handed:
            self.log.defer(self._made_events)
        # (every engine event names a car: its first is where it is located)
        x = self.engine.x
        if len(kept) == 1:
            xs.append(x.item(int(kept[0][2])))
        else:
            xs += x[[int(r[2]) for r in kept]].tolist()
        handed += kept

    def _made_events(self) -> list:
        """The replay events of the engine's events handed in since the last call: their
        locations looked up for every step and line at once (many trains' slack runs out
        in the same step), and the per-event Python only the records' own making (a
        burst is thousands)."""
        (rows, xs), self._handed = self._handed, ([], [])
        # per car: its train's name and its index in the train, as the events name it
        # (made at the first event: the cars do not change trains)
        pairs = self._car_names
        if pairs is None:
            first = np.asarray(self.L.train_start)[self.L.car_train]
            idx = (np.arange(len(self.L.car_train)) - first).tolist()
            names_of = self.L.names
            pairs = self._car_names = [(names_of[k], i) for k, i in zip(self.L.car_train.tolist(), idx)]
        # the events are frozen: their locations are looked up first (every line at once),
        # then they are made
        cars = [int(r[2]) for r in rows]
        located = list(range(len(rows)))
        where: list[EventLocation | None] = [None] * len(rows)
        if rows:
            if len(cars) > self.FEW_EVENTS or not self._locate_few(cars, xs, located, where):
                self._locate_many(cars, xs, located, where)
        # (the records made positionally, time, cars, relative_speed, impulse,
        # energy_lost, location: the same records as their keyword __init__)
        makers = CAR_EVENT_MAKERS
        kinds = EVENT_KINDS
        out = []
        for (k, t, _, b, _, rel, imp, lost), a, loc in zip(rows, cars, where):
            k, b = int(k), int(b)
            out.append(
                makers[kinds[k]](
                    float(t),
                    tuple(map(pairs.__getitem__, event_cars(k, a, b))),
                    float(rel),
                    float(imp),
                    float(lost),
                    loc,
                )
            )
        return out

    def _locate_many(self, cars: list[int], xs: list[float], located: list[int], where: list) -> None:
        """The locations of the events ``located`` (at their first car, ``cars``, whose
        engine positions were ``xs``) into ``where``, in numpy calls over all of them."""
        car = np.array(cars, dtype=np.int64)
        k = self.L.car_train[car]
        # min(max(x, 0.0), length) as Python's builtins (the same zeros and NaN)
        s = pmin(pmax(np.array(xs, dtype=np.float64), 0.0), self.L.train_line_len[k])
        node, X, Z, y = self.lines.on_lines(self.L.train_line[k], s)
        tx, tz, lx, lz = normalize_tile(0, 0, X, Z)
        for i, n_, tx_, tz_, x_, y_, z_ in zip(
            located,
            map(int, node.tolist()),
            map(int, tx.tolist()),
            map(int, tz.tolist()),
            map(float, lx.tolist()),
            map(float, y.tolist()),
            map(float, lz.tolist()),
        ):
            where[i] = make_location(n_, tx_, tz_, x_, y_, z_)

    def _locate_few(self, cars: list[int], xs: list[float], located: list[int], where: list) -> bool:
        """:meth:`_locate_many` for a few events (most steps that have any have two or
        three), with the per-event arithmetic in Python floats: the same operations and
        numbers, without a dozen numpy calls on arrays of three (docs/running-time.md
        §2.1). False (nothing written) when a location is not a plain number; the caller
        then takes the arrays."""
        tables = self._car_tables
        if tables is None:
            tables = self._car_tables = (
                self.L.car_train.tolist(),
                self.L.train_line.tolist(),
                np.asarray(self.L.train_line_len, dtype=np.float64).tolist(),
            )
        car_train, train_line, line_len = tables
        ks = [car_train[c] for c in cars]
        # min(max(x, 0.0), length): the builtins pmin(pmax(...)) stands in for above
        s = [min(max(xc, 0.0), line_len[k]) for xc, k in zip(xs, ks)]
        node, X, Z, y = self.lines.on_lines(
            np.array([train_line[k] for k in ks], dtype=np.int64), np.array(s, dtype=np.float64)
        )
        found = []
        for n_, X_, Z_, y_ in zip(node.tolist(), X.tolist(), Z.tolist(), y.tolist()):
            tx, tz = tile_of(X_), tile_of(Z_)
            if tx is None or tz is None:
                return False
            found.append(make_location(int(n_), tx[0], tz[0], tx[1], float(y_), tz[1]))
        for i, loc in zip(located, found):
            where[i] = loc
        return True

    def safety(self, ev: SafetyEvent) -> None:
        loc = ev.location
        self.log.add(
            SAFETY_EVENTS[ev.kind](
                time=float(ev.time),
                train=str(ev.train),
                cars=tuple(ev.cars),
                node=int(ev.node),
                message=ev.cause,
                location=EventLocation(tile_x=loc.tile_x, tile_z=loc.tile_z, x=loc.x, y=loc.y, z=loc.z),
                other_train=str(ev.other_train) if ev.other_train is not None else None,
                other_cars=tuple(ev.other_cars) if ev.other_train is not None else None,
                closing_speed=float(ev.closing_speed) if ev.closing_speed is not None else None,
            )
        )
        if ev.kind == "derailment":
            for t in self.trains:
                if t.spec.name == ev.train:
                    t.derail()

    def position(self, k: int) -> TrainPosition:
        """Train ``k``'s position at the last collision check."""
        t = self.trains[k]
        x, v = self._checked
        sl = t.cars
        return TrainPosition(t.spec.name, t.line, x[sl], self.L.bodies.length[sl], v[sl])

    def check_collisions(self, time: float, active: np.ndarray | None) -> None:
        """Track occupancy and side collisions (docs/physics.md §5.4). The trains whose
        boxes come close are watched (the occupancy's trains: one box per train, over
        every car's front and rear); of those, the exact checks take only the trains that
        may collide with, or touch the side of, a train on another line."""
        if len(self.trains) < 2:
            return
        x = np.array(self.engine.x)
        self._checked = (x, np.array(self.engine.v))
        length = self.L.bodies.length
        # Every car's rear and front (clipped onto its line) in one lookup per
        # coordinate: the cars backwards, so that each train's points rise along the
        # table and np.interp finds each next to the last (the numbers do not depend
        # on the order).
        lo = np.minimum(np.maximum(x - length, 0.0), self.L.car_line_len)
        hi = np.minimum(np.maximum(x, 0.0), self.L.car_line_len)
        g = np.stack([lo, hi], axis=1)
        g += self.L.car_base[:, None]
        X, Z = self.lines.world_xz(g[::-1].reshape(-1), "car ends")
        rx, fx = X.reshape(-1, 2)[::-1].T
        rz, fz = Z.reshape(-1, 2)[::-1].T
        starts = self.L.train_start
        lo_x = np.minimum(np.minimum.reduceat(fx, starts), np.minimum.reduceat(rx, starts))
        hi_x = np.maximum(np.maximum.reduceat(fx, starts), np.maximum.reduceat(rx, starts))
        lo_z = np.minimum(np.minimum.reduceat(fz, starts), np.minimum.reduceat(rz, starts))
        hi_z = np.maximum(np.maximum.reduceat(fz, starts), np.maximum.reduceat(rz, starts))
        pad = self.CHECK_PAD
        near_mask = np.zeros(len(self.trains), dtype=bool)
        on = None if active is None else np.flatnonzero(active)  # (off the track: meet nothing)
        box = (lo_x, hi_x, lo_z, hi_z) if on is None else (lo_x[on], hi_x[on], lo_z[on], hi_z[on])
        sweep = self.lines.boxes_near
        if sweep is not None:  # (the same trains, compiled)
            near_on = sweep(*box, pad, np.argsort(box[0], kind="stable"))
            near_mask[near_on if on is None else on[near_on]] = True
        else:
            ii, jj = box_pairs(*box, pad)
            if on is not None:
                ii, jj = on[ii], on[jj]
            near_mask[ii] = True
            near_mask[jj] = True
        near = np.flatnonzero(near_mask).tolist()
        occ = self.occupancy
        names = self.L.names
        near_names = {names[k] for k in near}
        for name in occ.watched():
            if name in self._name_set and name not in near_names:
                occ.remove(name)
        for k in near:
            occ.update_lazy(names[k], self._position_of[k])
        if len(near) < 2:
            return
        collide, side = self.close_trains(near_mask, x, g, (rx, fx, rz, fz))
        for ev in occ.check_among(time, collide, side):
            self.safety(ev)

    def close_trains(self, near: np.ndarray, x: np.ndarray, g: np.ndarray, ends: tuple) -> tuple[set, set]:
        """Of the watched trains (``near``), those that may collide with a watched train
        on another line, and those that may touch one side by side: conservative supersets
        of the trains in the events of :func:`~tdbtools.physics.collisions.collisions` and
        :func:`~tdbtools.physics.collisions.side_collisions` (docs/physics.md §5.4). ``g``:
        every car's rear and front on the global table, ``ends``: their world X and Z
        (rear X, front X, rear Z, front Z)."""
        names = self.L.names
        cars = np.flatnonzero(near[self.L.car_train])
        # the cars' middles (of the part on the line, as side_collisions takes them)
        mx, mz = self.lines.world_xz(((g[cars, 0] + g[cars, 1]) / 2.0)[::-1], "car middles")
        rx, fx, rz, fz = (c[cars] for c in ends)
        X = np.stack([rx, mx[::-1], fx], axis=1)
        Z = np.stack([rz, mz[::-1], fz], axis=1)
        return (
            {names[k] for k in self.sharing_a_node(np.flatnonzero(near), x)},
            {names[k] for k in self.side_by_side(cars, X, Z)},
        )

    def sharing_a_node(self, trains: np.ndarray, x: np.ndarray) -> list[int]:
        """Trains that pass a track node a train on another line passes between its rear
        and front: the node traversals of :meth:`TrackLine.occupancy`, found on the global
        table, one more at each end for the rounding of the global distance."""
        lines = self.lines
        slop = self.CHECK_SLOP
        shared, line_shares = self.shared_rows()
        # only a node on two lines can be passed by trains of two lines: the others'
        # traversals make no pair (the same pairs, fewer rows)
        trains = trains[line_shares[self.L.train_line[trains]]]
        if len(trains) < 2:
            return []
        ln = self.L.train_line[trains]
        base = np.asarray(lines.base)[ln]
        front = x[self.L.train_start[trains]]
        rear = x[self.L.train_end[trains]] - self.L.bodies.length[self.L.train_end[trains]]
        L = self.L.train_line_len[trains]
        a = np.maximum(np.minimum(front, rear), 0.0)
        b = np.minimum(np.maximum(front, rear), L)
        on = a <= b  # else the train is off its line: no interval
        first, last = lines.seg_first[ln], lines.seg_first[ln + 1] - 1
        i0 = np.maximum(np.searchsorted(lines.SEG1, a + base, side="right") - 1, first)
        i1 = np.minimum(np.searchsorted(lines.SEG1, b + base, side="left") + 1, last)
        i0, i1 = np.minimum(i0, last), np.maximum(i1, first)
        cnt = np.where(on, i1 - i0 + 1, 0)
        tot = int(cnt.sum())
        if not tot:
            return []
        who = np.repeat(np.arange(len(trains)), cnt)
        row = np.repeat(i0, cnt) + (np.arange(tot) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        # the node interval each traversal holds (as occupancy works it out, on global
        # distances): traversals the rounding allowance added fall away here
        lo = np.maximum(np.repeat(a + base, cnt), lines.SEG0[row])
        hi = np.minimum(np.repeat(b + base, cnt), lines.SEG1[row])
        keep = hi >= lo - slop
        keep &= shared[row]
        row, who, lo, hi = row[keep], who[keep], lo[keep], hi[keep]
        sg = np.where(lines.SEG_DIR[row] == 1, 1.0, -1.0)
        o_lo = lines.SEG_OFF0[row] + sg * (lo - lines.SEG0[row])
        o_hi = lines.SEG_OFF0[row] + sg * (hi - lines.SEG0[row])
        o_lo, o_hi = np.minimum(o_lo, o_hi), np.maximum(o_lo, o_hi)
        node = lines.SEG_NODE[row]
        tot = len(node)
        order = np.lexsort((who, node))
        node, who, o_lo, o_hi = node[order], who[order], o_lo[order], o_hi[order]
        end = np.searchsorted(node, node, side="right")
        c = end - np.arange(tot) - 1  # later entries on the same node
        m = int(c.sum())
        if not m:
            return []
        p = np.repeat(np.arange(tot), c)
        q = p + 1 + (np.arange(m) - np.repeat(np.cumsum(c) - c, c))
        ta, tb = trains[who[p]], trains[who[q]]
        other = self.L.train_line[ta] != self.L.train_line[tb]
        other &= np.minimum(o_hi[p], o_hi[q]) - np.maximum(o_lo[p], o_lo[q]) > -slop  # overlapping
        return np.union1d(ta[other], tb[other]).tolist()

    def shared_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Which node traversals of the global table (rows) are on a node that another
        line also passes, and which lines have any (made once: the lines do not change)."""
        lines = self.lines
        got = self._shared
        if got is not None and got[0] is lines:
            return got[1], got[2]
        n_lines = len(lines.seg_first) - 1
        row_line = np.repeat(np.arange(n_lines), np.diff(lines.seg_first))
        node_line = np.unique(np.stack([lines.SEG_NODE.astype(np.int64), row_line], axis=1), axis=0)
        nodes, count = np.unique(node_line[:, 0], return_counts=True)
        shared = np.isin(lines.SEG_NODE, nodes[count > 1])
        line_shares = np.zeros(n_lines, dtype=bool)
        line_shares[row_line[shared]] = True
        self._shared = (lines, shared, line_shares)
        return shared, line_shares

    def side_by_side(self, cars: np.ndarray, X: np.ndarray, Z: np.ndarray) -> list[int]:
        """Trains with a car whose chord (rear → middle → front, the points
        side_collisions takes: the car clipped onto its line; ``X``, ``Z`` of ``cars``)
        comes within the clearance of a car on another line."""
        owner = self.L.car_train[cars]
        ii, jj = chords_within(
            np.stack([X, Z], axis=2),
            DEFAULT_CLEARANCE_M + self.CHECK_SLOP,
            self.L.train_line[owner],
            owner,
            compiled=self.L.compiled,
        )
        if not len(ii):
            return []
        return np.union1d(owner[ii], owner[jj]).tolist()


__all__ = ["MIN_EVENT_SPEED", "WatchStage"]
