"""The ``tdbtools`` command line.

Exit status: 0 success; 1 the command ran and found problems; 2 bad usage or bad
input (a clear message on stderr, no traceback unless ``--debug``); 3 an internal
error (a bug in tdbtools).

This module holds the click group and registers the commands; each command lives in
the module of its family (docs/development.md §7).
"""

from __future__ import annotations

import click

from .. import __version__
from . import audit, compare, compile, export, info, render, replay, sweep, track
from .common import bundled_sample_route, bundled_scenario

__all__ = ["bundled_sample_route", "bundled_scenario", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="tdbtools")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of short error messages.")
def main(debug: bool) -> None:
    """Read, check, travel, replay, draw and export Microsoft Train Simulator / Open Rails
    routes."""


for _command in (
    info.info,
    info.parse,
    info.signals_cmd,
    audit.audit,
    track.locate,
    track.profile,
    track.path_cmd,
    export.export_cmd,
    export.convert,
    render.render,
    replay.replay,
    sweep.sweep,
    compile.compile_cmd,
    compare.compare,
):
    main.add_command(_command)
