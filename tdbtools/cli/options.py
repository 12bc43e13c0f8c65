"""Options and parameter types several commands take: --strict, the hidden --lenient, and
the one world-point syntax ``TX,TZ,X,Z`` (with its deprecated spellings), and where a
``--plot`` picture goes."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import TdbToolsError
from .common import _deprecated, _need


def _strict_option(func):
    return click.option(
        "--strict",
        is_flag=True,
        help="Refuse input with defects Open Rails tolerates (default: read it as Open Rails does "
        "and summarise what was tolerated on stderr).",
    )(func)


def _lenient_option(func):
    # Reading leniently is the default now; the flag stays so that old scripts run.
    return click.option("--lenient", is_flag=True, hidden=True)(func)


class WorldPointType(click.ParamType):
    """A world point, written the one way every command takes it: ``TX,TZ,X,Z``."""

    name = "TX,TZ,X,Z"

    def convert(self, value, param, ctx):  # noqa: ANN001, ANN201
        if isinstance(value, tuple):
            return value
        from ..track.locate import parse_world_point

        try:
            return parse_world_point(value)
        except TdbToolsError as exc:
            self.fail(str(exc), param, ctx)


WORLD_POINT = WorldPointType()


def _point_or_old(point, tile, pos, new: str, old: str):  # noqa: ANN001, ANN202
    """The world point of ``new`` (TX,TZ,X,Z), or of the deprecated pair of options
    ``old`` (with a warning); usage error when neither or both are given."""
    if (tile is None) != (pos is None):
        raise click.UsageError(f"{old} go together (deprecated: use {new} TX,TZ,X,Z)")
    if tile is not None:
        if point is not None:
            raise click.UsageError(f"give {new} or {old}, not both")
        _deprecated(old, f"{new} TX,TZ,X,Z")
        return (int(tile[0]), int(tile[1]), float(pos[0]), float(pos[1]))
    if point is None:
        raise click.UsageError(f"give the world point: {new} TX,TZ,X,Z")
    return point


def _plot_target(plot_opt: str | None, old: str, new: str, default: Path) -> Path | None:
    """The picture ``--plot`` asks for: None without it; its deprecated ``--plot FILE``
    spelling (warned as ``old``, to be written ``new``) or ``default``. The plotting extra
    is checked first, before any work."""
    if plot_opt is None:
        return None
    _need("matplotlib", "--plot")
    if plot_opt:
        _deprecated(old, new)
        return Path(plot_opt)
    return default
