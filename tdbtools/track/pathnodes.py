"""What Open Rails makes of each node of a path, and the located error for a node that
cannot be followed (docs/activities.md §4.5, §4.8).

``TrPathNode ( AAAABBBB next_main next_siding pdp )``: the low 16 bits (``BBBB``) are
flags, the high 16 bits (``AAAA``) a waiting point's value. Open Rails
(``AIPath.cs`` ``AIPathNode.InterpretPathNodeFlags``, ``PATfile.cs``) reads:

* bit 0 set: a reversal point (whatever else is set);
* bit 1 set, bit 0 clear: a waiting point; its value is

  - below 30000: seconds to wait;
  - 3HHMM: wait until the clock time HH:MM (``AIAuxAction.cs`` ``AuxActionWPItem``:
    "an absolute delay in the form 3HHMM");
  - 4NNSS / 5NNSS: uncouple NN cars (5: keeping the rear part) and wait SS seconds;
  - 60000 and up: other orders (attach, ask permission to pass a signal, horn);

* bits 2 ("intermediate point"), 3 ("other exit") and 4 ("optional route") are written
  by the MSTS path editor and change nothing in how Open Rails runs a path.

No other flag bit is known to MSTS or Open Rails: a node with one is refused here
(:class:`PathNodeError`), as are a clock time that is none (3HHMM with HH > 23 or MM > 59)
and any node a replay cannot follow (off the track, no way on from it, a PDP that does not
exist, a broken chain). The error is located: the path file, the line and column of the
node's ``TrPathNode`` block, a caret under the value at fault.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import Diagnostics, FormatError, Location
from ..formats.pat import PathFile, read_pat
from ..formats.route import Route
from ..stf import parse_file
from ..stf.tree import Block
from .paths import ResolvedPath, resolve_path

__all__ = [
    "KNOWN_FLAGS",
    "PathNodeError",
    "WaitOrder",
    "check_path",
    "node_error",
    "wait_order",
]

#: The flag bits (low 16 bits) MSTS and Open Rails know: reversal, waiting point,
#: intermediate point, other exit, optional route.
KNOWN_FLAGS = 0x1F


class PathNodeError(FormatError):
    """A path node a train cannot follow, located at its ``TrPathNode`` block."""


@dataclass(frozen=True, slots=True)
class WaitOrder:
    """A waiting point's value as Open Rails reads it: wait ``seconds`` after stopping,
    or until the clock time ``until`` (seconds since midnight); ``unmodelled`` names the
    part of the order the replay does not carry out (None: all of it is)."""

    seconds: float
    until: int | None = None
    unmodelled: str | None = None


def wait_order(value: int) -> WaitOrder:
    """The waiting point value ``value`` (the node's high 16 bits), read as Open Rails
    does (module docstring). Raises ValueError for a 3HHMM value that is no clock time."""
    if value < 30000:
        return WaitOrder(float(value))
    if value < 40000:
        hh, mm = (value // 100) % 100, value % 100
        if hh > 23 or mm > 59:
            raise ValueError(f"waiting point value {value} (3HHMM) is no clock time")
        return WaitOrder(0.0, 3600 * hh + 60 * mm)
    if value < 60000:
        n = (value // 100) % 100
        keep = ", keeping the rear" if value >= 50000 else ""
        return WaitOrder(float(value % 100), None, f"uncoupling {n} car(s){keep}")
    return WaitOrder(0.0, None, f"Open Rails order {value} (attach, permission or horn)")


def _node_blocks(pat: str | Path) -> list[Block]:
    doc = parse_file(pat, diagnostics=Diagnostics(strict=False))
    for blk in doc.blocks():
        if blk.key == "trackpath":
            for sub in blk.blocks():
                if sub.key == "trpathnodes":
                    return [b for b in sub.blocks() if b.key == "trpathnode"]
    return []


def node_error(pat: str | Path, node: int | None, message: str, item: int = 0) -> PathNodeError:
    """A :class:`PathNodeError` at path node ``node`` (its index in the file) of ``pat``,
    the caret under its value ``item`` (0 flags, 1 next main node, 3 PDP index); at the
    file as a whole when the node cannot be found."""
    blocks = _node_blocks(pat) if node is not None else []
    if node is not None and 0 <= node < len(blocks):
        blk = blocks[node]
        loc = blk.item_location(item) or blk.location
        return PathNodeError(message, loc, blk.snippet(loc))
    return PathNodeError(message, Location(str(pat), 0, 0))


def check_path(route: Route, pat: str | Path) -> tuple[ResolvedPath, list[str]]:
    """Resolve the path file ``pat`` on ``route`` and check every node on its main chain
    as Open Rails reads it (module docstring). Returns the resolved path and notes of
    what a replay will not carry out (waiting-point orders beyond a wait); raises
    :class:`PathNodeError` for a node that cannot be followed."""
    pf: PathFile = read_pat(pat, diagnostics=Diagnostics(strict=False))
    chain = pf.main_chain()
    notes: list[str] = []
    for i in chain.nodes:
        node = pf.nodes[i]
        unknown = node.flags & 0xFFFF & ~KNOWN_FLAGS
        if unknown:
            raise node_error(
                pat,
                i,
                f"path node {i}: flags {node.flags_text or format(node.flags, '08x')}: bit(s) {unknown:#x} are unknown "
                "to MSTS and Open Rails (known: 1 reversal, 2 waiting point, 4 intermediate, "
                "8 other exit, 10 optional route)",
            )
        value = node.wait_seconds
        if value is None:
            continue
        try:
            order = wait_order(value)
        except ValueError as exc:
            raise node_error(pat, i, f"path node {i}: {exc}") from None
        if order.unmodelled is not None:
            notes.append(
                f"waiting point at path node {i} of {Path(pat).name}: {order.unmodelled} not modelled "
                f"(the train waits {order.seconds:.0f} s)"
            )
    res = resolve_path(route, pf)
    if not res.ok:
        item = 3 if res.problem_node is not None and "PDP" in res.problems[0] else 0
        raise node_error(pat, res.problem_node, f"path {Path(pat).name}: " + "; ".join(res.problems), item)
    return res, notes
