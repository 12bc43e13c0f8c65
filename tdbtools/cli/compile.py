"""``tdbtools compile`` and the one-line notice before a replay compiles numba's kernels."""

from __future__ import annotations

import time

import click

from .common import _echo_json, _handle_errors


def _kernel_notice() -> None:
    """Before a replay that will compile numba's kernels (the first one after an
    install: about 30 s of silence otherwise), say so on stderr in one line, with each
    kernel group as it is done; later runs load them from numba's cache and say nothing."""
    from ..physics.compiled import compile_kernels, kernels_cached

    if kernels_cached():
        return
    t0 = time.perf_counter()
    click.echo(
        "compiling the replay's kernels with numba, once after an install (about 30 s; "
        "`tdbtools compile` does it ahead):",
        err=True,
        nl=False,
    )

    def progress(group: str) -> None:
        click.echo(f" {group}…", err=True, nl=False)

    compile_kernels(progress)
    click.echo(f" done in {time.perf_counter() - t0:.0f} s", err=True)


@click.command("compile")
@click.option("--json", "as_json", is_flag=True, help="Print the seconds per kernel group as JSON.")
@_handle_errors
def compile_cmd(as_json: bool) -> None:
    """Compile the replay's numba kernels now (tdbtools[fast]) into numba's cache, so that
    the first replay, test run or sweep worker does not wait for them. Without numba:
    says so and does nothing (the replay runs on numpy, with the same numbers)."""
    from ..physics.compiled import compile_kernels, compiled_available

    if not compiled_available():
        if as_json:
            _echo_json("compile", {"numba": False, "seconds": {}})
        else:
            click.echo('numba is not installed (pip install "tdbtools[fast]"): nothing to compile')
        return
    show = not as_json

    def progress(group: str) -> None:
        if show:
            click.echo(f"  {group} …", err=True)

    took = compile_kernels(progress)
    if as_json:
        _echo_json("compile", {"numba": True, "seconds": {k: round(v, 3) for k, v in took.items()}})
        return
    click.echo(
        "compiled (or loaded from numba's cache): " + ", ".join(f"{k} {v:.1f} s" for k, v in took.items())
    )
