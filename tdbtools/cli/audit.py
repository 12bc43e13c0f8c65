"""``tdbtools audit``: a route's defects as findings."""

from __future__ import annotations

from pathlib import Path

import click

from .common import EXIT_FINDINGS, _deprecated, _echo_json, _handle_errors, _load, _stderr_progress
from .options import _lenient_option


@click.command()
@click.argument("route", required=False, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--fail-on",
    type=click.Choice(["error", "warning"]),
    default="error",
    show_default=True,
    help="Exit 1 when a finding of this severity or above is found.",
)
@click.option("--strict", is_flag=True, hidden=True, help="Deprecated: --fail-on warning.")
@click.option(
    "--paths/--no-paths",
    default=True,
    show_default=True,
    help="Also check the route's .pat files and resolve each path on the track.",
)
@_lenient_option
@click.option(
    "--gap",
    type=float,
    default=0.5,
    show_default=True,
    help="Metres above which a join between sections is a gap.",
)
@_handle_errors
def audit(
    route: Path | None, as_json: bool, fail_on: str, strict: bool, paths: bool, lenient: bool, gap: float
) -> None:
    """Check a route for defects: broken or one-way pin links, wrong pin counts, unknown
    sections, gaps between sections and at node ends, broken item references, items off
    their track, and paths that do not resolve.

    Every finding has a code (docs/findings.md), a severity, a message, node/item ids and
    a world location. The route is always read (what the reader tolerated are findings
    too). Exit status 1 when an error is found; with --fail-on warning, also a warning.
    """
    from ..track.audit import audit_route

    if strict:
        # Elsewhere --strict refuses tolerated input; audit never refuses a route.
        _deprecated("audit --strict", "audit --fail-on warning")
        fail_on = "warning"
    r = _load(route, quiet=True)
    say = _stderr_progress("resolving paths")
    report = audit_route(r, gap_tolerance=gap, node_end_tolerance=gap, paths=paths, progress=say)
    findings = report.findings
    problems = report.problems(fail_on)
    unresolved = report.unresolved_paths
    if as_json:
        _echo_json("audit", report.to_json())
    else:
        c = report.closure
        click.echo(f"route       {r.name}")
        click.echo(
            f"closure     {c['joins']} joins: p50 {c['p50'] * 1000:.2f} mm, p99 "
            f"{c['p99'] * 1000:.2f} mm, max {c['max']:.3f} m"
            if c["joins"]
            else "closure     no joins"
        )
        counts = report.counts
        click.echo("findings    " + (", ".join(f"{n} {k}" for k, n in counts.items()) or "none"))
        for f in findings[:50]:
            click.echo(f"  [{f.severity}] {f}")
        if len(findings) > 50:
            click.echo(f"  … {len(findings) - 50} more (use --json for all)")
        if report.path_resolution is not None:
            files = len(report.path_resolution)
            click.echo(
                f"paths       {files - len(unresolved)} of {files} resolve to a continuous route"
                + (" (the others are PATH_UNRESOLVED findings)" if unresolved else "")
            )
    if problems:
        raise click.exceptions.Exit(EXIT_FINDINGS)
