"""Running a sweep on a Dask cluster, resuming it, and reading its table back."""

from __future__ import annotations

import csv
import io
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TdbToolsError
from .spec import TRAIN_NAME, Combination, SweepSpec, read_sweep_spec

RESULTS = "results"  # one <key>.json per finished combination
TRACES = "traces"  # <key>/train.csv, events.json, summary.json on request
TABLE = "sweep.csv"
PARQUET = "sweep.parquet"

#: Measured columns of the table, after key, path, consist and the grid parameters.
RESULT_COLUMNS = (
    "status",
    "running_time_s",
    "distance_m",
    "max_speed_kmh",
    "traction_energy_kwh",
    "braking_energy_kwh",
    "finished",
    "derailed",
    "collisions",
    "end_of_track",
    "events",
    "error",
)
_SUMMARY_FIELDS = (
    "running_time_s",
    "distance_m",
    "max_speed_kmh",
    "traction_energy_kwh",
    "braking_energy_kwh",
    "finished",
    "derailed",
)

Progress = Callable[[int, int, "dict | None"], None]


# -- on the workers -------------------------------------------------------------------------

_LOCAL_ROUTES: dict = {}
_LOCK = threading.Lock()


def _route_cache() -> dict:
    """The route cache of the Dask worker this runs on (an attribute of the worker, so
    one per worker whether workers are processes or threads), else of this process."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return _LOCAL_ROUTES
    cache = getattr(worker, "_tdbtools_routes", None)
    if cache is None:
        cache = {}
        worker._tdbtools_routes = cache  # type: ignore[attr-defined]  # our own attribute
    return cache


def worker_route(folder: str | Path, strict: bool = True):
    """The route in ``folder``, loaded (from the on-disk cache) once per worker.
    Returns ``(route, loaded_now)``. ``strict=False``: loaded as Open Rails does
    (docs/findings.md §1)."""
    from ..formats.route import load_route

    key = f"{folder}|{strict}"
    with _LOCK:
        cache = _route_cache()
        if key in cache:
            return cache[key], False
        route = load_route(folder, strict=strict)
        cache[key] = route
        return route, True


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return "local"


def run_combination(combo: Combination, traces: bool = False, strict: bool = True) -> dict:
    """Replay one combination; never raises: a replay that cannot start or fails is a
    record with ``status = "error"`` and the message. With ``traces`` the record also
    holds the :class:`~tdbtools.physics.replay.ReplayResult` under ``"result"``."""
    from ..physics.replay import Replay

    t0 = time.perf_counter()
    rec: dict[str, Any] = {
        "key": combo.key,
        "path": combo.path,
        "consist": combo.consist,
        "params": combo.params,
        "status": "ok",
        "error": None,
        "worker": _worker_name(),
        "route_loaded": False,
    }
    if combo.activity is not None:
        return _run_activity(combo, rec, t0, traces)
    try:
        route, rec["route_loaded"] = worker_route(combo.scenario.route, strict)
        result = Replay(combo.scenario, route=route).run()
    except Exception as exc:  # noqa: BLE001 - a failing combination must not stop the sweep
        rec["status"] = "error"
        kind = "" if isinstance(exc, TdbToolsError) else f"{type(exc).__name__}: "
        rec["error"] = f"{kind}{exc}"
        rec["wall_s"] = round(time.perf_counter() - t0, 4)
        return rec
    s = result.summary["trains"][TRAIN_NAME]
    for k in _SUMMARY_FIELDS:
        rec[k] = s[k]
    rec["events"] = s["events"]
    kinds = [e.kind for e in result.events]
    rec["collisions"] = kinds.count("collision") + kinds.count("side_collision")
    rec["end_of_track"] = "end_of_line" in kinds or any(
        e.kind == "derailment" and "track end" in getattr(e, "message", "") for e in result.events
    )
    rec["simulated_s"] = result.summary["simulated_seconds"]
    if not s["finished"] and not s["derailed"]:
        # Still running when `duration` ran out: its running time is not a result.
        rec["status"] = "incomplete"
        rec["error"] = (
            f"stopped by duration = {combo.scenario.duration:g} s before the train "
            f"finished ({s['distance_m']:.0f} m run)"
        )
    rec["wall_s"] = round(time.perf_counter() - t0, 4)
    if traces:
        rec["result"] = result
    return rec


def _run_activity(combo: Combination, rec: dict, t0: float, traces: bool) -> dict:
    """One activity replay as a sweep record: times and energies summed over its trains,
    ``finished`` when every train reached the end of its path."""
    from ..physics.activity import ActivityReplay, plan_activity

    try:
        assert combo.activity is not None
        plan = plan_activity(combo.activity)
        route, rec["route_loaded"] = worker_route(plan.route_folder)
        p = combo.params
        sc = combo.scenario
        rp = ActivityReplay(
            plan,
            route=route,
            stand_in=sc.stand_in,
            step=sc.step,
            stuck_after=float(p.get("stuck_after", 1800.0)),
            duration=sc.duration,
        )
        if "deceleration" in p:
            for d in rp.drivers:
                d.auto.decel = float(p["deceleration"])
        result = rp.run()
    except Exception as exc:  # noqa: BLE001 - a failing activity must not stop the sweep
        rec["status"] = "error"
        kind = "" if isinstance(exc, TdbToolsError) else f"{type(exc).__name__}: "
        rec["error"] = f"{kind}{exc}"
        rec["wall_s"] = round(time.perf_counter() - t0, 4)
        return rec
    s = result.replay.summary
    trains = s["trains"].values()
    rec["running_time_s"] = s["simulated_seconds"]
    rec["distance_m"] = round(sum(t["distance_m"] for t in trains), 3)
    rec["max_speed_kmh"] = max((t["max_speed_kmh"] for t in trains), default=0.0)
    rec["traction_energy_kwh"] = round(sum(t["traction_energy_kwh"] for t in trains), 4)
    rec["braking_energy_kwh"] = round(sum(t["braking_energy_kwh"] for t in trains), 4)
    rec["finished"] = not s["not_at_end"]
    rec["derailed"] = bool(s["derailed"])
    rec["collisions"] = s["collisions"]
    rec["end_of_track"] = False
    kinds = [e.kind for e in result.replay.events]
    rec["events"] = {
        k: kinds.count(k) for k in ("deadlock", "stuck", "not_at_end", "start_delayed") if k in kinds
    }
    rec["simulated_s"] = s["simulated_seconds"]
    rec["wall_s"] = round(time.perf_counter() - t0, 4)
    if traces:
        rec["result"] = result
    return rec


# -- results --------------------------------------------------------------------------------


def _write_atomic(path: Path, data: bytes) -> None:
    from .._fs import write_bytes_atomic

    write_bytes_atomic(path, data)


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, (list, dict)):
        return json.dumps(v, sort_keys=True, separators=(",", ":"))
    return v


def _row(spec: SweepSpec, combo: Combination, rec: dict | None) -> dict:
    row = {"key": combo.key, "path": combo.path, "consist": combo.consist, **combo.params}
    if rec is None:
        row.update({c: None for c in RESULT_COLUMNS})
        row["status"] = "not run"
        return row
    for c in RESULT_COLUMNS:
        row[c] = rec.get(c)
    return row


def _columns(spec: SweepSpec) -> list[str]:
    return ["key", "path", "consist", *spec.grid_keys, *RESULT_COLUMNS]


def _table_csv(columns: list[str], rows: list[dict]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([_cell(r.get(c)) for c in columns])
    return buf.getvalue().encode("utf-8")


def _write_parquet(path: Path, columns: list[str], rows: list[dict]) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise TdbToolsError("a Parquet table needs pyarrow: pip install pyarrow") from None
    table = pa.table(
        {
            c: [
                None
                if r.get(c) is None
                else _cell(r.get(c))
                if isinstance(r.get(c), (list, dict))
                else r.get(c)
                for r in rows
            ]
            for c in columns
        }
    )
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


@dataclass(slots=True)
class SweepResult:
    """The table of a sweep (one row per combination, in spec order) and how it ran."""

    out: Path
    columns: list[str]
    rows: list[dict]
    ran: int = 0  # combinations replayed by this call
    skipped: int = 0  # already done in ``out``
    lost: list[str] = field(default_factory=list)  # keys whose task died (not recorded)
    wall_seconds: float = 0.0
    dashboard: str | None = None
    workers: int = 0

    @property
    def table_path(self) -> Path:
        return self.out / TABLE

    def __repr__(self) -> str:
        # One row per combination (thousands): .rows and .summary() hold them.
        from .._display import short_repr

        return short_repr("SweepResult", [("out", str(self.out)), *self.summary().items()])

    def _repr_html_(self) -> str:
        from .._display import html_summary

        return html_summary(f"Sweep in {self.out}", list(self.summary().items()))

    @property
    def has_problems(self) -> bool:
        """A replay failed, derailed or collided, or a task was lost (``tdbtools sweep``
        exits with status 1)."""
        s = self.summary()
        return bool(s["failed"] or s["derailed"] or s["collisions"] or self.lost)

    def column(self, name: str) -> list:
        return [r.get(name) for r in self.rows]

    def summary(self) -> dict:
        rows = self.rows
        ok = [r for r in rows if r["status"] == "ok"]
        return {
            "combinations": len(rows),
            "ok": len(ok),
            "failed": sum(r["status"] == "error" for r in rows),
            "not_run": sum(r["status"] == "not run" for r in rows),
            "incomplete": sum(r["status"] == "incomplete" for r in rows),
            "finished": sum(bool(r["finished"]) for r in ok),
            "derailed": sum(bool(r["derailed"]) for r in ok),
            "collisions": sum(int(r["collisions"] or 0) > 0 for r in ok),
            "end_of_track": sum(bool(r["end_of_track"]) for r in ok),
            "ran": self.ran,
            "skipped": self.skipped,
            "workers": self.workers,
            "wall_seconds": round(self.wall_seconds, 3),
            "replays_per_second": round(self.ran / self.wall_seconds, 3) if self.wall_seconds > 0 else None,
        }

    def summary_text(self, *, max_errors: int = 10) -> str:
        s = self.summary()
        lines = [
            f"{s['combinations']} combinations: {s['ok']} ok, {s['failed']} failed"
            + (f", {s['incomplete']} cut off by duration" if s["incomplete"] else "")
            + (f", {s['not_run']} not run" if s["not_run"] else "")
            + f"; {s['ran']} replayed now ({s['skipped']} already done)"
            + (
                f" in {s['wall_seconds']:.1f} s, {s['replays_per_second']} replays/s on "
                f"{s['workers']} workers"
                if s["ran"]
                else ""
            ),
            f"  finished {s['finished']}, derailed {s['derailed']}, collisions {s['collisions']}, "
            f"end of track {s['end_of_track']}",
        ]
        by_path: dict[str, list[float]] = {}
        for r in self.rows:
            if r["status"] == "ok":
                by_path.setdefault(r["path"], []).append(float(r["running_time_s"]))
        if by_path:
            lines.append("  running time per path (s): min / mean / max")
            for p, ts in list(by_path.items())[:20]:
                lines.append(f"    {p:24s} {min(ts):8.1f} {sum(ts) / len(ts):8.1f} {max(ts):8.1f}")
            if len(by_path) > 20:
                lines.append(f"    … and {len(by_path) - 20} more paths")
        errors = [r for r in self.rows if r["status"] == "error"]
        for r in errors[:max_errors]:
            lines.append(f"  error {r['path']} × {r['consist']}: {str(r['error']).splitlines()[0]}")
        if len(errors) > max_errors:
            lines.append(f"  … and {len(errors) - max_errors} more errors (see the 'error' column)")
        return "\n".join(lines)

    def to_pandas(self):  # pragma: no cover - pandas is optional
        import pandas as pd

        return pd.DataFrame(self.rows, columns=self.columns)


# -- the cluster ----------------------------------------------------------------------------


@contextmanager
def _client(
    scheduler: str | None, workers: int | None, processes: bool, dashboard: bool, n_tasks: int
) -> Iterator[tuple[Any, str | None, int]]:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise TdbToolsError("sweeps need Dask: pip install 'tdbtools[sweep]'") from None
    if scheduler is not None:
        with Client(scheduler) as client:
            if workers:
                client.wait_for_workers(workers)
            n = (
                len(client.scheduler_info(n_workers=-1)["workers"])
                if _accepts_n_workers(client)
                else len(client.scheduler_info()["workers"])
            )
            yield client, client.dashboard_link, n
        return
    n = workers or max(1, min(os.cpu_count() or 1, n_tasks))
    # Dask's usual :8787 is often held by another cluster, and None means that default
    # (the scheduler's HTTP server binds it even without a dashboard): any free port.
    board: dict[str, Any] = {"dashboard_address": ":0"}
    if not dashboard:
        board["scheduler_kwargs"] = {"dashboard": False}
    with (
        LocalCluster(n_workers=n, threads_per_worker=1, processes=processes, **board) as cluster,
        Client(cluster) as client,
    ):
        yield client, (client.dashboard_link if dashboard else None), n


def _accepts_n_workers(client) -> bool:
    import inspect

    return "n_workers" in inspect.signature(client.scheduler_info).parameters


# -- the sweep ------------------------------------------------------------------------------


def run_sweep(
    spec: SweepSpec | str | Path,
    *,
    out: str | Path,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: Progress | None = None,
    traces: bool | None = None,
    processes: bool = True,
    dashboard: bool = True,
    parquet: bool = False,
    log: Callable[[str], None] | None = None,
    strict: bool = True,
) -> SweepResult:
    """Run every combination of ``spec`` not already done in ``out``.

    ``scheduler``: address of an existing Dask scheduler (``tcp://host:8786``); without
    it a :class:`distributed.LocalCluster` of ``workers`` single-threaded workers (the
    machine's cores by default; ``processes=False`` makes them threads of this process).
    ``progress(done, total, record)`` is called once with ``record=None`` when the
    cluster is up, then after every finished combination. ``log`` receives messages
    (the dashboard address, how much is already done). Results go to
    ``out/results/<key>.json`` as each replay finishes, then to ``out/sweep.csv``
    (and ``out/sweep.parquet`` with ``parquet``, which needs pyarrow). ``strict=False``
    loads the route as Open Rails does (defects it tolerates are tolerated).
    """
    spec = spec if isinstance(spec, SweepSpec) else read_sweep_spec(spec)
    want_traces = spec.traces if traces is None else traces
    out = Path(out)
    results = out / RESULTS
    results.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()

    def done(c: Combination) -> bool:
        if not (results / f"{c.key}.json").is_file():
            return False
        return not want_traces or (out / TRACES / c.key / "summary.json").is_file() or _failed(results, c)

    todo = [c for c in spec.combinations if not done(c)]
    total = len(spec.combinations)
    skipped = total - len(todo)
    say = log or (lambda _m: None)
    if skipped:
        say(f"{skipped} of {total} combinations already done in {out}")
    lost: list[str] = []
    dash = None
    n_workers = 0
    if todo:
        with _client(scheduler, workers, processes, dashboard, len(todo)) as (client, dash, n_workers):
            from distributed import as_completed

            if dash:
                say(f"Dask dashboard: {dash}")
            count = skipped
            if progress:
                progress(count, total, None)
            token = os.urandom(4).hex()
            futures = {
                client.submit(
                    run_combination, c, want_traces, strict, key=f"replay-{c.key}-{token}", pure=False
                ): c
                for c in todo
            }
            for fut in as_completed(futures):
                c = futures[fut]
                try:
                    rec = fut.result()
                except Exception as exc:  # noqa: BLE001 - a dead worker: retried on the next run
                    lost.append(c.key)
                    say(f"{c.path} × {c.consist}: task lost ({type(exc).__name__}: {exc})")
                    rec = None
                fut.release()
                if rec is not None:
                    result = rec.pop("result", None)
                    if result is not None:
                        result.write(out / TRACES / c.key)
                    _write_atomic(
                        results / f"{c.key}.json",
                        (json.dumps(rec, indent=1, sort_keys=True, default=str) + "\n").encode(),
                    )
                count += 1
                if progress:
                    progress(count, total, rec)
    res = _collect(spec, out, parquet)
    res.ran, res.skipped, res.lost = len(todo) - len(lost), skipped, lost
    res.wall_seconds, res.dashboard, res.workers = time.perf_counter() - t0, dash, n_workers
    return res


def _failed(results: Path, c: Combination) -> bool:
    try:
        return json.loads((results / f"{c.key}.json").read_text(encoding="utf-8"))["status"] == "error"
    except (OSError, ValueError, KeyError):
        return False


def _collect(spec: SweepSpec, out: Path, parquet: bool = False) -> SweepResult:
    """Build the table from the per-combination records and write it atomically."""
    rows = []
    for c in spec.combinations:
        p = out / RESULTS / f"{c.key}.json"
        try:
            rec = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            rec = None
        except (OSError, ValueError):  # a damaged record: run it again next time
            p.unlink(missing_ok=True)
            rec = None
        rows.append(_row(spec, c, rec))
    columns = _columns(spec)
    _write_atomic(out / TABLE, _table_csv(columns, rows))
    if parquet:
        _write_parquet(out / PARQUET, columns, rows)
    return SweepResult(out, columns, rows)


# -- reading back ---------------------------------------------------------------------------

_BOOL = {"True": True, "False": False, "true": True, "false": False}


def _parse(v: str, column: str) -> Any:
    if v == "":
        return None
    if column in ("key", "path", "consist", "status", "error"):
        return v
    if v in _BOOL:
        return _BOOL[v]
    if v[0] in "[{":
        try:
            return json.loads(v)
        except ValueError:
            return v
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v


def read_sweep(path: str | Path) -> SweepResult:
    """Read a sweep's table back: ``path`` is the output folder or its ``sweep.csv``
    (or ``sweep.parquet``). Values get their types back (numbers, booleans, the event
    counts as a dict)."""
    p = Path(path)
    if p.is_dir():
        p = p / TABLE
    if p.suffix == ".parquet":
        import pyarrow.parquet as pq

        t = pq.read_table(p).to_pylist()
        columns = list(t[0]) if t else []
        rows = [
            {c: (_parse(r[c], c) if isinstance(r[c], str) and c == "events" else r[c]) for c in columns}
            for r in t
        ]
        return SweepResult(p.parent, columns, rows)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TdbToolsError(f"no sweep table at {p}") from None
    reader = csv.reader(io.StringIO(text))
    columns = next(reader, [])
    rows = [{c: _parse(v, c) for c, v in zip(columns, r)} for r in reader]
    return SweepResult(p.parent, columns, rows)


__all__ = ["RESULT_COLUMNS", "SweepResult", "read_sweep", "run_combination", "run_sweep", "worker_route"]
