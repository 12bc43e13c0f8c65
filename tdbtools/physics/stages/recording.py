"""The recording stage of a replay: trace rows every ``trace_every`` seconds (and per-car
rows when asked for), and at the end the :class:`ReplayResult`: traces, car traces,
events and the summary per train.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..events import CarEvent, ReplayEvent
from .setup import Layout

TRACE_COLUMNS = (
    "time",
    "distance",
    "speed",
    "acceleration",
    "throttle",
    "brake",
    "node",
    "offset",
    "tile_x",
    "tile_z",
    "x",
    "y",
    "z",
    "grade_permille",
)
CAR_COLUMNS = ("time", "car", "front", "speed", "gap", "force")

#: The units of the numbers in events.json (written with the events).
EVENT_UNITS = {
    "time": "s",
    "relative_speed": "m/s",
    "impulse": "N·s",
    "energy_lost": "J",
    "distance": "m",
    "speed": "m/s",
    "closing_speed": "m/s",
    "location.x/y/z": "m in the tile (y: height)",
    "cars": "[train, car index from the front]",
}


@dataclass(frozen=True, slots=True, eq=False)
class ReplayResult:
    """What a replay produced: per-train traces (numpy columns), per-car traces
    (optional), events and a summary per train."""

    scenario: str
    traces: dict[str, dict[str, np.ndarray]]
    car_traces: dict[str, dict[str, np.ndarray]]
    events: tuple[ReplayEvent, ...]
    summary: dict
    wall_seconds: float

    def _facts(self) -> list[tuple[str, object]]:
        trains = self.summary.get("trains", {})
        facts: list[tuple[str, object]] = [
            ("scenario", self.scenario),
            ("trains", list(trains)[:8]),
            ("simulated_s", self.summary.get("simulated_seconds")),
            ("events", len(self.events)),
        ]
        for name, t in list(trains.items())[:4]:
            facts.append((name, f"{t.get('distance_m', 0):.0f} m in {t.get('running_time_s', 0):.0f} s"))
        return facts

    def __repr__(self) -> str:
        # The traces are megabytes of columns: .traces, .events and .summary hold them.
        from ..._display import short_repr

        return short_repr("ReplayResult", self._facts())

    def _repr_html_(self) -> str:
        from ..._display import html_summary

        return html_summary(f"Replay of {self.scenario}", self._facts())

    def write(self, out: str | Path) -> list[Path]:
        """Write ``<train>.csv`` (and ``<train>_cars.csv``), ``events.json`` and
        ``summary.json`` into ``out``, each file atomically. events.json is ``{"units":
        EVENT_UNITS, "events": [...]}``."""
        from ..._fs import write_bytes_atomic

        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        stems = self.file_stems()
        for name, cols in self.traces.items():
            p = folder / f"{stems[name]}.csv"
            write_bytes_atomic(p, _csv(cols, TRACE_COLUMNS).encode())
            written.append(p)
        for name, cols in self.car_traces.items():
            p = folder / f"{stems[name]}_cars.csv"
            write_bytes_atomic(p, _csv(cols, CAR_COLUMNS).encode())
            written.append(p)
        events = {"units": EVENT_UNITS, "events": [e.to_dict() for e in self.events]}
        # Each train's files, one per train whatever the names (docs/security.md §5).
        files = {
            n: {
                "trace": f"{stems[n]}.csv",
                **({"cars": f"{stems[n]}_cars.csv"} if n in self.car_traces else {}),
            }
            for n in self.traces
        }
        summary = {**self.summary, "files": files}
        for fname, data in (("events.json", events), ("summary.json", summary)):
            p = folder / fname
            write_bytes_atomic(p, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
            written.append(p)
        return written

    def file_stems(self) -> dict[str, str]:
        """Train name -> the stem of its files, one per train (docs/security.md §5)."""
        from ..._outputs import unique_stems

        return unique_stems([*self.traces, *self.car_traces])


def safe_name(name: str) -> str:
    """A train name made safe for a file name."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _csv(cols: dict[str, np.ndarray], order: tuple[str, ...]) -> str:
    keys = [k for k in order if k in cols]
    lines = [",".join(keys)]
    arrays = [cols[k] for k in keys]
    for row in zip(*arrays):
        lines.append(
            ",".join(
                f"{v:.6g}" if isinstance(v, float) else str(v)
                for v in (x.item() if hasattr(x, "item") else x for x in row)
            )
        )
    return "\n".join(lines) + "\n"


class Recorder:
    """What a replay records as it runs, and its result (module docstring)."""

    def __init__(self, layout: Layout, cars_trace: bool) -> None:
        self.L = layout
        self.trains = layout.trains
        self.engine = layout.engine
        self.cars_trace = cars_trace
        # the trace rows, column by column (trace, columns)
        self._time: list[float] = []
        self._front: list[np.ndarray] = []  # the trains' fronts (engine x)
        self._speed: list[np.ndarray] = []
        self._scale: list[np.ndarray] = []  # each train's fraction of full traction
        self._brake: list[np.ndarray] = []  # each train's brake force (N)
        self.car_rows: list[list] = [[] for _ in layout.trains]  # per train, when cars_trace
        self.maxbrake = np.array([max(float(t.model.max_brake.sum()), 1.0) for t in layout.trains])

    def trace(
        self,
        time: float,
        trac: np.ndarray,
        brk: np.ndarray,
        scale: np.ndarray,
        x: np.ndarray | None = None,
        v: np.ndarray | None = None,
    ) -> None:
        """Record one trace row of every train; ``scale``: each train's fraction of full
        traction; ``x``, ``v``: the cars' positions and speeds now (default: the
        engine's). A row keeps only what changes from row to row (the time, the fronts'
        positions and speeds, the traction fractions, each train's brake force); every
        column is worked out from those in :meth:`columns`, in one numpy call over all
        rows, with the same operations the row would have had (docs/running-time.md §2.1)."""
        if x is None or v is None:
            x, v = self.engine.x, self.engine.v
        starts = self.L.train_start
        self._time.append(time)
        self._front.append(x[starts])
        self._speed.append(v[starts])
        self._scale.append(np.array(scale, dtype=np.float64))
        self._brake.append(np.add.reduceat(brk, starts) if len(brk) else np.zeros(len(starts)))
        if self.cars_trace:
            # gap[i] is the joint behind car i (n − 1 of them): the last car of a
            # train has none towards the next train.
            gap_all = np.append(self.engine.gap, np.nan)
            for t, car_rows in zip(self.trains, self.car_rows):
                sl = t.cars
                gaps = gap_all[sl].copy()
                gaps[-1] = np.nan
                for i in range(sl.stop - sl.start):
                    car_rows.append(
                        (
                            time,
                            i,
                            float(x[sl][i]),
                            float(v[sl][i]),
                            float(gaps[i]),
                            float(trac[sl][i] - brk[sl][i]),
                        )
                    )

    def _per_train(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The rows' times and their per-train columns (rows × trains): the front's
        distance from its start, its line distance clipped onto the line, the speed, the
        mean acceleration since the previous row (0 in the first row, and in a row not
        later than the one before), the traction fraction and the brake force as a
        fraction of the train's (at most 1)."""
        n = len(self.L.train_start)
        times = np.array(self._time, dtype=np.float64)
        R = len(times)
        front = np.array(self._front, dtype=np.float64).reshape(R, n)
        speed = np.array(self._speed, dtype=np.float64).reshape(R, n)
        scale = np.array(self._scale, dtype=np.float64).reshape(R, n)
        brake = np.minimum(np.array(self._brake, dtype=np.float64).reshape(R, n) / self.maxbrake, 1.0)
        acc = np.zeros((R, n))
        later = np.flatnonzero(times[1:] > times[:-1]) + 1
        acc[later] = (speed[later] - speed[later - 1]) / (times[later] - times[later - 1])[:, None]
        return times, {
            "distance": front - self.L.train_front0,
            "speed": speed,
            "acceleration": acc,
            "throttle": scale,
            "brake": brake,
            "s_front": np.minimum(np.maximum(front, 0.0), self.L.train_line_len),
        }

    def columns(self) -> dict[str, dict[str, np.ndarray]]:
        """The trace columns of every train (TRACE_COLUMNS) from the recorded rows."""
        if not self._time:
            return {t.spec.name: {k: np.array([]) for k in TRACE_COLUMNS} for t in self.trains}
        times, stack = self._per_train()
        # the trains of one line looked up in one call (TrackLine.at is elementwise)
        of_line: dict[int, list[int]] = {}
        for k, t in enumerate(self.trains):
            of_line.setdefault(id(t.line), []).append(k)
        ats: list[dict] = [{}] * len(self.trains)
        R = len(times)
        for ks in of_line.values():
            both = self.trains[ks[0]].line.at(stack["s_front"][:, ks].T.ravel())
            for j, k in enumerate(ks):
                ats[k] = {c: a[j * R : (j + 1) * R] for c, a in both.items()}
        out = {}
        for k, t in enumerate(self.trains):
            at = ats[k]
            out[t.spec.name] = {
                "time": times,
                "distance": stack["distance"][:, k],
                "speed": stack["speed"][:, k],
                "acceleration": stack["acceleration"][:, k],
                "throttle": stack["throttle"][:, k],
                "brake": stack["brake"][:, k],
                "node": np.asarray(at["node"], dtype=np.int64),
                "offset": np.asarray(at["offset"], dtype=np.float64),
                "tile_x": np.asarray(at["tile_x"], dtype=np.int64),
                "tile_z": np.asarray(at["tile_z"], dtype=np.int64),
                "x": np.asarray(at["x"], dtype=np.float64),
                "y": np.asarray(at["y"], dtype=np.float64),
                "z": np.asarray(at["z"], dtype=np.float64),
                "grade_permille": 1000.0 * np.asarray(at["grade"], dtype=np.float64),
            }
        return out

    def result(
        self,
        scenario: Any,
        route_name: str,
        time: float,
        wall: float,
        events: list,
        sums: np.ndarray,
        signalling: dict | None,
    ) -> ReplayResult:
        """The replay's result after ``time`` simulated seconds in ``wall`` seconds;
        ``sums``: per car its traction and braking energy and top speed."""
        cars: dict[str, dict[str, np.ndarray]] = {}
        trains_summary: dict[str, dict] = {}
        summary: dict = {
            "scenario": scenario.source,
            "route": route_name,
            "physics": scenario.physics,
            "simulated_seconds": round(time, 6),
            "wall_seconds": round(wall, 3),
            "trains": trains_summary,
        }
        summary["realtime_factor"] = round(time / wall, 1) if wall > 0 else None
        traces = self.columns()
        # every event's kind under each train it names (one pass over the events)
        kinds_of: dict[str, list[str]] = {}
        for e in events:
            train = getattr(e, "train", None)
            named = dict.fromkeys([train] if train is not None else [])
            if isinstance(e, CarEvent):
                for c in e.cars:
                    named[c[0]] = None
            for name in named:
                kinds_of.setdefault(name, []).append(e.kind)
        if signalling is not None:
            summary["signalling"] = signalling
        for t, car_rows in zip(self.trains, self.car_rows):
            sl = t.cars
            t.traction_j = float(sums[0][sl].sum())
            t.braking_j = float(sums[1][sl].sum())
            t.max_speed = float(sums[2][sl].max())
            if self.cars_trace and car_rows:
                cc = list(zip(*car_rows))
                cars[t.spec.name] = {k: np.array(c) for k, c in zip(CAR_COLUMNS, cc)}
            kinds = kinds_of.get(t.spec.name, [])
            summary["trains"][t.spec.name] = {
                "consist": t.consist.name,
                "cars": t.cars.stop - t.cars.start,
                "category": t.category,
                "mass_t": round(float(t.model.mass.sum()) / 1000.0, 3),
                "length_m": round(t.length, 3),
                "running_time_s": round(t.done_at if t.done_at is not None else time, 3),
                "finished": t.done_at is not None,
                "derailed": t.derailed,
                "distance_m": round(float(self.engine.x[t.cars][0] - t.front0), 3),
                "max_speed_kmh": round(t.max_speed * 3.6, 3),
                "traction_energy_kwh": round(t.traction_j / 3.6e6, 4),
                "braking_energy_kwh": round(t.braking_j / 3.6e6, 4),
                "events": {k: kinds.count(k) for k in sorted(set(kinds))},
            }
            if t.allowance is not None:
                trains_summary[t.spec.name]["allowance"] = t.allowance
        return ReplayResult(scenario.source, traces, cars, tuple(events), summary, wall)


__all__ = ["CAR_COLUMNS", "EVENT_UNITS", "TRACE_COLUMNS", "Recorder", "ReplayResult", "safe_name"]
