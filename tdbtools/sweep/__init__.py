"""Parameter sweeps: many replays over one route, on a Dask cluster.

What belongs here: expanding a sweep spec into one-train scenarios, running them
(Dask), the result table and its plot; the replays themselves are
:mod:`tdbtools.physics`, the command line is :mod:`tdbtools.cli`.

A sweep spec is a TOML file::

    route = "ROUTES/SAMPLE"            # the route folder, relative to this file
    paths = ["Main*.pat", "Siding.pat"]  # globs (case-insensitive) in the route's PATHS
    consists = ["sample_passenger", "/abs/TRAINS/CONSISTS/x.con"]  # as in a scenario
    step = 0.1                         # scenario settings, the same for every replay
    duration = 900                     # (step, duration, stand_in, collision_check_interval)
    stand_in = true
    traces = false                     # also write each replay's traces (or --traces)

    [train]                            # train options fixed for every replay
    deceleration = 0.4

    [grid]                             # each key a list of values: every combination runs
    beyond_path = [0, 500]
    max_speed = ["80km/h", "120km/h"]
    brake_mode = ["force", "deceleration"]
    # a throttle policy: driver = ["auto", "schedule"] with a fixed [[train.schedule]],
    # or a grid of schedules (each a list of commands):
    # schedule = [ [ {at = 0, throttle = 0.5} ], [ {at = 0, throttle = 1.0}, {at = 60, brake = 0.3} ] ]

``[train]`` and ``[grid]`` take the keys of a scenario's ``[[train]]`` table (see
:mod:`tdbtools.physics.scenario`) except ``name``, ``consist``, ``path``, ``start`` and
``distance``: ``beyond_path``, ``max_speed``, ``brake_mode``, ``deceleration``,
``driver``, ``schedule``, ``schedule_by``, ``start_speed``, ``start_offset``,
``stand_in``. Quantities may carry units as in a scenario. Every combination (path ×
consist × grid) becomes a one-train scenario read by
:func:`~tdbtools.physics.scenario.scenario_from_dict`, so mistakes are located
:class:`~tdbtools.physics.scenario.ScenarioError` s; a consist that does not exist or a
path that does not resolve is not a spec error but a failed replay, recorded with its
message.

Running: :func:`run_sweep` sends one task per combination to Dask: a
:class:`distributed.LocalCluster` of single-threaded worker processes sized to the
machine, or an existing scheduler (``scheduler="tcp://host:8786"``; its workers must
have tdbtools installed and see the route and consists at the same paths). Each worker
loads a route once (from the on-disk cache) and keeps it as an attribute of the worker.

Output folder: ``results/<key>.json`` per finished combination (``key`` is a stable
hash of the route, path, consist, train options and settings), written atomically as
each replay finishes, so an interrupted sweep resumes where it stopped: a re-run skips
the combinations already recorded (failed ones too; delete their JSON to retry).
Then ``sweep.csv`` (and ``sweep.parquet`` with pyarrow): one row per combination in
spec order: key, path, consist, the grid parameters (as written in the spec),
``status`` (``ok``, ``error``, ``not run``), running time, distance, top speed,
traction and braking energy, finished, derailed, collisions, end_of_track, the event
counts (JSON) and the error. With traces: ``traces/<key>/`` as ``tdbtools replay``
writes them. :func:`read_sweep` reads a table back; :func:`plot_sweep` draws running
time per path.

From a notebook::

    from tdbtools.sweep import run_sweep, read_sweep, plot_sweep
    res = run_sweep("sweep.toml", out="sweep-out", workers=4)
    print(res.summary_text())
    res.rows[0]["running_time_s"]
"""

from __future__ import annotations

from .plot import plot_sweep
from .run import RESULT_COLUMNS, SweepResult, read_sweep, run_combination, run_sweep, worker_route
from .spec import Combination, SweepSpec, read_sweep_spec, sweep_spec_from_dict, sweep_spec_from_text

__all__ = [
    "Combination",
    "RESULT_COLUMNS",
    "SweepResult",
    "SweepSpec",
    "plot_sweep",
    "read_sweep",
    "read_sweep_spec",
    "run_combination",
    "run_sweep",
    "sweep_spec_from_dict",
    "sweep_spec_from_text",
    "worker_route",
]
