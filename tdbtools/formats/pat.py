"""Path files ``.pat`` (docs/formats.md §8): ``<route>/PATHS/<id>.pat``.

::

    Serial ( 1 )
    TrackPDPs ( TrackPDP ( tileX tileZ x y z junctionFlag invalidFlag ) … )
    TrackPath (
       TrPathName ( id )  Name ( "display" )  [TrPathFlags ( hex )]
       TrPathStart ( s )  TrPathEnd ( s )
       TrPathNodes ( <count>  TrPathNode ( flags:hex nextMain nextSiding pdpIndex ) × count )
    )

The list index of a ``TrackPDP`` is its id; the list index of a ``TrPathNode`` is
its id. ``4294967295`` (0xFFFFFFFF) as a next-node index means "none" and reads as
``None``. Node 0 is the path start, where the **rear** of the train is placed.

Strict mode raises :class:`~tdbtools.errors.FormatError` at the first defect with
the exact line and column; lenient mode records a finding and keeps going (a bad
link is kept as its integer value, so :meth:`PathFile.main_chain` reports it
rather than failing). Defects checked: missing blocks, bad numbers and hex flags,
count mismatches, next-node indices and PDP indices out of range, cycles in the
main chain and in siding chains. A siding that does not come back to the main
chain and nodes that no chain reaches are noted (never fatal).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import Diagnostics
from ..stf import parse_file
from ..stf.tree import Block, Document
from ._read import Reader, check_size, to_float, to_hex, to_int, to_int32, to_uint
from ._records import fast_pickle

#: A path file larger than this is refused before parsing (real ones are a few KB; a path of
#: 100,000 nodes takes about 6 MB): docs/security.md §2.
MAX_PAT_BYTES = 16 << 20

#: The "no next node" value of ``nextMain`` / ``nextSiding``.
NO_NODE = 0xFFFFFFFF

#: ``TrPathFlags`` bit: not a player path.
PATH_FLAG_NOT_PLAYER = 0x20

__all__ = [
    "NO_NODE",
    "PATH_FLAG_NOT_PLAYER",
    "Chain",
    "PathFile",
    "TrPathNode",
    "TrackPDP",
    "pat_from_document",
    "read_pat",
]


# -- records ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TrackPDP:
    """A path data point: a world location (x, z tile-relative, y absolute) and its flags.

    ``junction_flag`` 2 marks a junction (Open Rails snaps it to the nearest junction
    node on the same tile), 1 a plain point. ``invalid_flag`` is 1 normally; 9 (and
    perhaps 12) marks a dragged or broken point; junction PDPs usually have 0.
    """

    tile_x: int
    tile_z: int
    x: float
    y: float
    z: float
    junction_flag: int
    invalid_flag: int

    @property
    def is_junction(self) -> bool:
        return self.junction_flag == 2


@dataclass(frozen=True, slots=True)
class TrPathNode:
    """One node of the path: flags, the next node on the main chain and on a siding
    (``None`` = no next node), and the index of its :class:`TrackPDP`.

    ``flags_text`` is the hex token as written. A next index or ``pdp_index`` out of
    range (tolerated in lenient mode) is kept as read.
    """

    flags: int
    next_main: int | None
    next_siding: int | None
    pdp_index: int
    flags_text: str = ""

    @property
    def is_reversal(self) -> bool:
        return bool(self.flags & 0x1)

    @property
    def is_waiting(self) -> bool:
        return bool(self.flags & 0x2) and not self.flags & 0x1

    @property
    def is_intermediate(self) -> bool:
        return bool(self.flags & 0x4)

    @property
    def other_exit(self) -> bool:
        return bool(self.flags & 0x8)

    @property
    def optional(self) -> bool:
        return bool(self.flags & 0x10)

    @property
    def wait_seconds(self) -> int | None:
        """The high 16 bits of a waiting point (seconds; Open Rails gives values of the
        form 3HHMM, 4NNSS, 5NNSS, 6xSSS extra meanings for AI trains), else None."""
        if not self.is_waiting:
            return None
        return (self.flags >> 16) & 0xFFFF

    @property
    def starts_siding(self) -> bool:
        return self.next_main is not None and self.next_siding is not None


@dataclass(frozen=True, slots=True)
class Chain:
    """A walk along path nodes: the node indices visited and why the walk stopped.

    ``stop`` is ``"end"`` (a node without a next node), ``"rejoin"`` (a siding that
    came back to the main chain: its last node is on the main chain),
    ``"cycle"`` (the next node was visited already), ``"bad_link"`` (the next index
    is out of range) or ``"empty"`` (no nodes at all). ``problem`` describes the
    defect, None when the walk is sound. Iterating gives the node indices.
    """

    nodes: tuple[int, ...]
    stop: str
    problem: str | None = None
    #: The node whose link caused ``problem`` (cycle or bad link), else None.
    at: int | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None

    def __iter__(self) -> Iterator[int]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, i):  # noqa: ANN001
        return self.nodes[i]


@dataclass(frozen=True, slots=True)
class PathFile:
    """A parsed ``.pat`` file."""

    path: str
    serial: int | None
    pdps: tuple[TrackPDP, ...]
    name: str  # the display name (``Name``)
    path_id: str  # ``TrPathName``
    start: str  # ``TrPathStart``
    end: str  # ``TrPathEnd``
    flags: int | None  # ``TrPathFlags`` (hex), None when absent
    nodes: tuple[TrPathNode, ...]

    @property
    def is_player_path(self) -> bool:
        return self.flags is None or not self.flags & PATH_FLAG_NOT_PLAYER

    def pdp(self, node: TrPathNode | int) -> TrackPDP | None:
        """The PDP of a path node (by node or node index), None if its index is bad."""
        n = self.nodes[node] if isinstance(node, int) else node
        return self.pdps[n.pdp_index] if 0 <= n.pdp_index < len(self.pdps) else None

    def main_chain(self) -> Chain:
        """Follow ``next_main`` from node 0. Never raises: a cycle or a bad index
        stops the walk and is described in :attr:`Chain.problem`."""
        n = len(self.nodes)
        if n == 0:
            return Chain((), "empty", "the path has no nodes")
        out = [0]
        seen = {0}
        cur = 0
        while True:
            nxt = self.nodes[cur].next_main
            if nxt is None:
                return Chain(tuple(out), "end")
            if not 0 <= nxt < n:
                return Chain(
                    tuple(out),
                    "bad_link",
                    f"path node {cur}: next main node {nxt} is out of range (0..{n - 1})",
                    cur,
                )
            if nxt in seen:
                return Chain(
                    tuple(out),
                    "cycle",
                    f"path node {cur}: next main node {nxt} was already visited (the main chain has a cycle)",
                    cur,
                )
            out.append(nxt)
            seen.add(nxt)
            cur = nxt

    def siding_chains(self) -> list[Chain]:
        """One chain per main-chain node that has a ``next_siding``, in main-chain order.

        As Open Rails does (``AIPath.FindSidingEnds``): from the node where the siding
        starts, follow ``next_siding`` while the node has one; the last node is the
        siding end. ``stop`` is ``"rejoin"`` when that end is on the main chain, else
        ``"end"`` with a problem; cycles and bad indices stop the walk as in
        :meth:`main_chain`.
        """
        main = self.main_chain()
        on_main = set(main.nodes)
        n = len(self.nodes)
        chains = []
        for start in main.nodes:
            if self.nodes[start].next_siding is None:
                continue
            out = [start]
            seen = {start}
            cur = start
            chain = None
            while True:
                nxt = self.nodes[cur].next_siding
                if nxt is None:
                    break
                if not 0 <= nxt < n:
                    chain = Chain(
                        tuple(out),
                        "bad_link",
                        f"path node {cur}: next siding node {nxt} is out of range (0..{n - 1})",
                        cur,
                    )
                    break
                if nxt in seen:
                    chain = Chain(
                        tuple(out),
                        "cycle",
                        f"path node {cur}: next siding node {nxt} was "
                        f"already visited (the siding chain has a cycle)",
                        cur,
                    )
                    break
                out.append(nxt)
                seen.add(nxt)
                cur = nxt
            if chain is None:
                if len(out) > 1 and out[-1] in on_main:
                    chain = Chain(tuple(out), "rejoin")
                else:
                    chain = Chain(
                        tuple(out),
                        "end",
                        f"the siding from path node {start} ends at node "
                        f"{out[-1]}, which is not on the main chain",
                        cur,
                    )
            chains.append(chain)
        return chains


fast_pickle(TrackPDP, TrPathNode, Chain, PathFile)


# -- reading ---------------------------------------------------------------------------


def read_pat(path: str | Path, *, strict: bool = True, diagnostics: Diagnostics | None = None) -> PathFile:
    """Read a ``.pat`` path file into a :class:`PathFile`."""
    diags = diagnostics if diagnostics is not None else Diagnostics(strict=strict)
    check_size(path, MAX_PAT_BYTES, "path file")
    return pat_from_document(parse_file(path, diagnostics=diags), diags)


def pat_from_document(doc: Document, diags: Diagnostics) -> PathFile:
    """Build a :class:`PathFile` from a parsed document (see the module docstring
    for what is checked)."""
    rd = Reader(diags)
    serial = None
    pdps: list[TrackPDP] = []
    fields: dict[str, Any] = {"name": "", "path_id": "", "start": "", "end": "", "flags": None}
    nodes: list[TrPathNode] = []
    node_blocks: list[Block] = []
    have_pdps = have_path = have_nodes = False
    nodes_block: Block | None = None
    for blk in doc.blocks():
        k = blk.key
        if k == "serial":
            serial = rd.value(blk, 0, to_int, None, "serial")
        elif k == "trackpdps":
            have_pdps = True
            pdps.extend(_pdps(rd, diags, blk))
        elif k == "trackpath":
            if have_path:
                diags.note("a second TrackPath block is ignored", blk.location)
                continue
            have_path = True
            for sub in blk.blocks():
                sk = sub.key
                if sk == "trpathname":
                    fields["path_id"] = rd.string(sub)
                elif sk == "name":
                    fields["name"] = rd.string(sub)
                elif sk == "trpathstart":
                    fields["start"] = rd.string(sub)
                elif sk == "trpathend":
                    fields["end"] = rd.string(sub)
                elif sk == "trpathflags":
                    fields["flags"] = rd.value(sub, 0, to_hex, None, "path flags")
                elif sk == "trpathnodes":
                    if have_nodes:
                        diags.note("TrackPath: a second TrPathNodes block is ignored", sub.location)
                        continue
                    have_nodes = True
                    nodes_block = sub
                    _nodes(rd, diags, sub, nodes, node_blocks)
                else:
                    diags.note(f"TrackPath: block {sub.name!r} ignored", sub.location)
            if not have_nodes:
                rd.problem(blk, "TrackPath: missing block 'TrPathNodes'")
            if not fields["path_id"]:
                diags.note("TrackPath: no TrPathName", blk.location)
        else:
            diags.note(f"block {blk.name!r} ignored", blk.location)
    if not have_pdps:
        rd.problem(doc, "no TrackPDPs block in path file")
    if not have_path:
        rd.problem(doc, "no TrackPath block in path file")
    pf = PathFile(
        doc.path,
        serial,
        tuple(pdps),
        fields["name"],
        fields["path_id"],
        fields["start"],
        fields["end"],
        fields["flags"],
        tuple(nodes),
    )
    _check_links(rd, diags, pf, node_blocks, nodes_block)
    return pf


def _pdps(rd: Reader, diags: Diagnostics, table: Block) -> list[TrackPDP]:
    out = []
    for pos, blk in enumerate(table.items):
        if blk.__class__ is not Block:
            rd.problem(table, f"TrackPDPs: unexpected value {blk!r}", pos)
            continue
        if blk.key != "trackpdp":
            diags.note(f"TrackPDPs: block {blk.name!r} ignored", blk.location)
            continue
        if len(blk.items) > 7:
            diags.note(f"TrackPDP: {len(blk.items)} values, only the first 7 are used", blk.location)
        out.append(
            TrackPDP(
                rd.value(blk, 0, to_int32, 0, "tile x"),
                rd.value(blk, 1, to_int32, 0, "tile z"),
                rd.value(blk, 2, to_float, 0.0, "x"),
                rd.value(blk, 3, to_float, 0.0, "y"),
                rd.value(blk, 4, to_float, 0.0, "z"),
                rd.value(blk, 5, to_int, 1, "junction flag"),
                rd.value(blk, 6, to_int, 1, "invalid flag"),
            )
        )
    return out


def _next(rd: Reader, blk: Block, index: int, what: str) -> int | None:
    v = rd.value(blk, index, to_uint, NO_NODE, what)
    return None if v == NO_NODE else v


def _nodes(
    rd: Reader, diags: Diagnostics, table: Block, nodes: list[TrPathNode], blocks: list[Block]
) -> None:
    count = rd.value(table, 0, to_uint, 0, "node count")
    for pos, blk in enumerate(table.items[1:], start=1):
        if blk.__class__ is not Block:
            rd.problem(table, f"TrPathNodes: unexpected value {blk!r}", pos)
            continue
        if blk.key != "trpathnode":
            diags.note(f"TrPathNodes: block {blk.name!r} ignored", blk.location)
            continue
        items = blk.items
        text = str(items[0]) if items and items[0].__class__ is not Block else ""
        flags = rd.value(blk, 0, to_hex, 0, "flags")
        if len(items) > 4:
            diags.note(f"TrPathNode: {len(items)} values, only the first 4 are used", blk.location)
        nodes.append(
            TrPathNode(
                flags,
                _next(rd, blk, 1, "next main node"),
                _next(rd, blk, 2, "next siding node"),
                rd.value(blk, 3, to_uint, 0, "PDP index"),
                text,
            )
        )
        blocks.append(blk)
    if len(nodes) != count:
        rd.problem(table, f"TrPathNodes: the count says {count} nodes, found {len(nodes)}", 0)


def _check_links(
    rd: Reader, diags: Diagnostics, pf: PathFile, blocks: list[Block], nodes_block: Block | None
) -> None:
    n = len(pf.nodes)
    npdp = len(pf.pdps)
    bad_main: set[int] = set()
    for i, (node, blk) in enumerate(zip(pf.nodes, blocks)):
        links = ((node.next_main, 1, "next main node"), (node.next_siding, 2, "next siding node"))
        for value, pos, what in links:
            if value is not None and not 0 <= value < n:
                rd.problem(
                    blk,
                    f"TrPathNode {i}: {what} {value} is out of range (0..{n - 1}, or {NO_NODE} for none)",
                    pos,
                )
                if pos == 1:
                    bad_main.add(i)
        if not 0 <= node.pdp_index < npdp:
            rd.problem(
                blk,
                f"TrPathNode {i}: PDP index {node.pdp_index} is out of range (the file has {npdp} TrackPDPs)",
                3,
            )
    if n == 0:
        if nodes_block is not None:  # (a missing TrPathNodes block was reported already)
            rd.problem(nodes_block, "TrPathNodes: the path has no nodes")
        return
    main = pf.main_chain()
    if main.stop == "cycle" and main.at is not None:
        rd.problem(blocks[main.at], main.problem or "cycle", 1)
    reached = set(main.nodes)
    for ch in pf.siding_chains():
        reached.update(ch.nodes)
        if ch.stop == "cycle" and ch.at is not None:
            rd.problem(blocks[ch.at], ch.problem or "cycle", 2)
        elif ch.stop == "end":
            diags.note(ch.problem or "siding does not rejoin", blocks[ch.nodes[-1]].location)
    if main.stop != "bad_link" and not bad_main:
        unused = [i for i in range(n) if i not in reached]
        if unused:
            diags.note(
                f"path nodes not reached from node 0 by the main or siding chains: "
                f"{', '.join(map(str, unused[:10]))}{' …' if len(unused) > 10 else ''}",
                blocks[unused[0]].location,
            )
