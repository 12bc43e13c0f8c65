"""What every command shares: exit statuses, error handling, optional extras, --json
output, reading a route as the command line does, progress on stderr."""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

import click

from ..errors import TdbToolsError

EXIT_FINDINGS = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3


def bundled_sample_route() -> Path:
    """The sample route shipped with tdbtools (in the wheel, or in a source checkout)."""
    pkg = Path(__file__).resolve().parent.parent  # tdbtools/, above tdbtools/cli/
    for base in (pkg / "sample_routes", pkg.parent / "sample_routes"):
        route = base / "sample" / "ROUTES" / "SAMPLE"
        if route.is_dir():
            return route
    raise TdbToolsError("the bundled sample route is missing from this installation")


def bundled_scenario() -> Path:
    """The sample scenario (replay.toml) beside the bundled sample route."""
    return bundled_sample_route().parent.parent / "replay.toml"


def _handle_errors(func):
    """Turn tdbtools errors into a message and exit status 2; bugs into status 3."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        ctx = click.get_current_context()
        debug = bool(ctx.find_root().params.get("debug"))
        try:
            return func(*args, **kwargs)
        except TdbToolsError as exc:
            if debug:
                _traceback()
            click.echo(f"error: {exc}", err=True)
            ctx.exit(EXIT_INPUT)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)
        except BrokenPipeError:
            # The reader of our output went away (e.g. `| head`): not an error.
            sys.stderr.close()
            ctx.exit(0)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except OSError as exc:
            # The file system refused something (an output folder that does not exist,
            # no permission, a full disk): bad input, not a bug.
            if debug:
                _traceback()
            where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
            click.echo(f"error: {exc.strerror or exc}{where}", err=True)
            ctx.exit(EXIT_INPUT)
        except Exception as exc:  # noqa: BLE001 - a bug: say so plainly
            if debug:
                _traceback()
            click.echo(
                f"internal error: {type(exc).__name__}: {exc}\n"
                "This is a bug in tdbtools; run again with --debug for the traceback.",
                err=True,
            )
            ctx.exit(EXIT_INTERNAL)

    return wrapper


def _traceback() -> None:
    """--debug: the traceback on stderr; the exit status stays what it would be without."""
    import traceback

    traceback.print_exc(file=sys.stderr)


def _deprecated(old: str, new: str) -> None:
    """An old spelling still works for one release, with this warning on stderr
    (README, "One grammar")."""
    click.echo(f"warning: {old} is deprecated and goes in the next release: use {new}", err=True)


#: What each optional extra brings, by the module a command needs from it.
EXTRAS = {
    "matplotlib": "plot",
    "pyproj": "geo",
    "pyvista": "render",
    "plotly": "render",
    "imageio": "render",
    "distributed": "sweep",
    "pyarrow": "",
}


def _need(module: str, what: str) -> None:
    """Fail now (exit 2), before any work or output, when ``what`` needs an optional
    package that is not installed."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        extra = EXTRAS.get(module, "")
        how = f'pip install "tdbtools[{extra}]"' if extra else f"pip install {module}"
        raise click.UsageError(f"{what} needs {module}, which is not installed: {how}")


#: The version of every command's --json output (docs/cli-json.md): a change that
#: removes or renames a key, or changes its meaning, raises it.
JSON_SCHEMA_VERSION = 1


def _echo_json(command: str, data: dict) -> None:
    """Print a command's --json report: a JSON object whose first key ``schema`` names
    the command and the version of its keys (docs/cli-json.md), and nothing else on
    stdout."""
    import json  # here, not at import: `tdbtools --help` starts faster

    out = {"schema": f"tdbtools.{command}/{JSON_SCHEMA_VERSION}", **data}
    click.echo(json.dumps(out, indent=2, ensure_ascii=False))


def _tolerated(findings, hint: str | None = None) -> None:  # noqa: ANN001
    """One short summary on stderr of the defects a lenient read tolerated (warnings and
    errors; remarks stay for `audit`)."""
    from ..errors import summarize_findings

    shown = [f for f in findings if f.severity != "info"]
    if shown:
        text = summarize_findings(shown, hint=hint) if hint else summarize_findings(shown)
        click.echo(text, err=True)


def _load(route: Path | None, *, no_cache: bool = False, strict: bool = False, quiet: bool = False):
    """Load a route as the command line does (docs/findings.md §1): as Open Rails would,
    with one summary of what was tolerated on stderr; ``strict`` refuses instead."""
    from ..formats.route import load_route

    folder = route if route is not None else bundled_sample_route()
    # One lenient, cached load (with its findings) decides: strict refuses a route with
    # problems (load_route parses again only to raise the located error).
    r = load_route(folder, cache=not no_cache, strict=strict)
    if not quiet:
        _tolerated(r.warnings)
    return r


def _stderr_progress(label: str):
    """A ``progress(done, total)`` that tells on stderr what a long step is doing: a
    bar on a terminal, else a line at the start and one at the end."""
    state: dict = {}

    def progress(done: int, total: int) -> None:
        if not total:
            return
        if sys.stderr.isatty():
            if "bar" not in state:
                state["bar"] = click.progressbar(length=total, label=label, file=sys.stderr)
                state["bar"].__enter__()
                state["at"] = 0
            state["bar"].update(done - state["at"])
            state["at"] = done
            if done >= total:
                state["bar"].__exit__(None, None, None)
            return
        if total < 20:
            return  # quick: no need to say
        if done == 0:
            state["t0"] = time.perf_counter()
            click.echo(f"{label}: {total} …", err=True)
        elif done >= total:
            click.echo(f"{label}: {total} done in {time.perf_counter() - state.get('t0', 0):.1f} s", err=True)

    return progress


class _NullBar:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, n: int) -> None:
        return None
