"""Consistency audit of a loaded route: topology, geometry, items and paths.

:func:`audit_route` checks the track database against itself and tsection.dat and
returns an :class:`AuditReport` of :class:`AuditFinding` s, each with a stable
``code``, a severity, the node and item ids involved and the world location of
the defect:

=========================  ========  ===========================================================
code                       severity  meaning
=========================  ========  ===========================================================
``PIN_OUT_OF_RANGE``       error     a TrPin links to a node id above N (or an empty slot)
``PIN_UNCONNECTED``        warning   a TrPin links to node 0: nothing there (DK24 has 16 junctions
                                     whose trunk pin is ``TrPin ( 0 0 )``)
``PIN_ASYMMETRIC``         error     A links to B but B has no pin back to A (nodes = [A, B])
``PIN_DIRECTION``          warning   the pin and its pin back disagree on which end/side they
                                     join (docs/formats.md §6.4 direction rules), or a direction not 0/1
``PIN_COUNT``              error     in/out pin counts not vector 1+1, junction 1+2, end 1+0, or
                                     a number of TrPins that is not in + out
``NODE_NO_SECTIONS``       error     a vector node without sections
``SECTION_UNKNOWN``        error     TrVectorSection ids missing from tsection.dat (one finding
                                     per node)
``UID_MISSING``            warning   a junction or end node without a UiD (no position)
``JUNCTION_SHAPE_UNKNOWN`` warning   a junction's shape id is not a TrackShape in tsection.dat
``GAP_IN_NODE``            warning   the computed end of a section is farther than
                                     ``gap_tolerance`` from the recorded start of the next one
                                     (the message says when a heading reversed by π explains it)
``HEADING_KINK``           warning   consecutive sections meet (no gap) but their headings differ
                                     by more than ``kink_tolerance`` rad
``GAP_AT_NODE_END``        warning   a vector node's end is farther than ``node_end_tolerance``
                                     from the junction/end node UiD (or vector node end) its pin
                                     links to (a vector-vector join is reported once)
``ITEM_REF_MISSING``       error     a TrItemRef names an item that is not in the TrItemTable
``ITEM_REF_DUPLICATE``     warning   an item referenced more than once (by one or several nodes)
``ITEM_UNREFERENCED``      info      an item that no node references
``ITEM_ID_MISMATCH``       warning   TrItemId differs from the item's position in the table
``ITEM_LINK_BROKEN``       warning   a platform/siding end whose linked item is missing, of
                                     another type or does not link back; the same for the
                                     paired crossover item; a signal dir naming a node id
                                     out of range
``ITEM_OFF_TRACK``         warning   a referenced item's TrItemRData is farther than
                                     ``item_tolerance`` (horizontally) from its node's sections
=========================  ========  ===========================================================

Statistics that are not defects (closure percentiles, zero-length sections, item
distances) go in :attr:`AuditReport.closure`, :attr:`AuditReport.node_ends` and
:attr:`AuditReport.stats`.

:func:`audit_paths` reads every ``.pat`` of the route's ``PATHS`` folder leniently
and checks each path's PDPs against the track (a vectorised nearest-section scan,
not a traveller) and its junction PDPs against the junction nodes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import TdbToolsError
from ..formats.route import Route
from ..formats.tdb import (
    EndNode,
    JunctionNode,
    VectorNode,
)
from .audit_items import _audit_items
from .audit_paths import PathAudit, PathsReport, PdpIssue, audit_paths
from .audit_report import CODES, AuditFinding, AuditReport, PathResolution, _Places, _stats
from .closure import closure
from .geometry import SectionGeometry, point_at, section_geometry
from .paths import resolve_route_paths
from .timetable_audit import audit_timetables

__all__ = [
    "CODES",
    "AuditFinding",
    "AuditReport",
    "PathAudit",
    "PathResolution",
    "PathsReport",
    "PdpIssue",
    "audit_paths",
    "audit_route",
]

_EXPECTED_PINS = {"vector": (1, 1), "junction": (1, 2), "end": (1, 0)}


# -- the route audit -------------------------------------------------------------------


def audit_route(
    route: Route,
    *,
    gap_tolerance: float = 0.5,
    node_end_tolerance: float = 0.5,
    item_tolerance: float = 5.0,
    kink_tolerance: float = 0.01,
    unreferenced_items: bool = True,
    paths: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> AuditReport:
    """Audit the topology, geometry and items of ``route`` (see the module docstring
    for the finding codes). Tolerances are metres, ``kink_tolerance`` radians.

    With ``paths=True`` the report also holds :func:`audit_paths` and every ``.pat``
    of the route resolved on the track (what ``tdbtools audit`` checks by default); a
    path that does not resolve is a ``PATH_UNRESOLVED`` finding, and ``progress(done,
    total)`` is called as the paths are resolved (seconds on a big route). The defects
    the loader tolerated (``route.warnings``) are findings with their own codes
    (docs/findings.md §2), except its ``SECTION_UNKNOWN``, which the audit reports per
    node."""
    for name, v in (
        ("gap_tolerance", gap_tolerance),
        ("node_end_tolerance", node_end_tolerance),
        ("item_tolerance", item_tolerance),
        ("kink_tolerance", kink_tolerance),
    ):
        if not 0 <= v < math.inf:
            raise TdbToolsError(f"{name} must be a finite number >= 0, got {v!r}")
    findings: list[AuditFinding] = [
        AuditFinding(
            w.code,
            (f"{w.location}: " if w.location else "")
            + w.message
            + (f" (and {w.count - 1} more like it)" if w.count > 1 else ""),
            nodes=() if w.node is None else (w.node,),
            items=() if w.item is None else (w.item,),
            level=w.severity,
        )
        for w in route.warnings
        if w.code != "SECTION_UNKNOWN"
    ]
    geom = section_geometry(route, copy=False)  # only read
    places = _Places(route, geom)
    _audit_pins(route, places, findings)
    _audit_nodes(route, geom, places, findings)
    clo = closure(route, geom, ends=(places.end_xyz, places.end_heading))
    _audit_joins(route, geom, places, clo, findings, gap_tolerance, kink_tolerance)
    _audit_node_ends(route, places, clo, findings, node_end_tolerance)
    item_stats = _audit_items(route, geom, places, findings, item_tolerance, unreferenced_items)
    stats = {
        "nodes": route.tdb.counts(),
        "sections": len(geom),
        "unknown_sections": int((~geom.known).sum()),
        "zero_length_sections": int((geom.known & (geom.length == 0)).sum()),
        "items": item_stats,
    }
    end_ok = clo.end_gap[~np.isnan(clo.end_gap)]
    node_ends = _stats(end_ok)
    node_ends["count"] = node_ends.pop("joins")
    paths_report = resolution = None
    if paths:
        paths_report = audit_paths(route)
        resolution = tuple(_resolve_paths(route, progress))
        for p in resolution:
            if not p.ok:
                findings.append(
                    AuditFinding("PATH_UNRESOLVED", f"{p.file}: " + (p.error or "; ".join(p.problems)))
                )
    # The route's Open Rails timetables (track/timetable_audit.py, codes TT_*).
    findings.extend(
        AuditFinding(code, msg, level=level) for code, msg, level in audit_timetables(route, paths=paths)
    )
    return AuditReport(
        route=route.name,
        findings=tuple(findings),
        closure=_stats(clo.join_gap),
        node_ends=node_ends,
        stats=stats,
        thresholds={
            "gap_tolerance": gap_tolerance,
            "node_end_tolerance": node_end_tolerance,
            "item_tolerance": item_tolerance,
            "kink_tolerance": kink_tolerance,
        },
        paths=paths_report,
        path_resolution=resolution,
    )


def _resolve_paths(route: Route, progress: Callable[[int, int], None] | None) -> list[PathResolution]:
    return [
        PathResolution(
            name,
            bool(res and res.ok),
            err or None,
            tuple(res.problems) if res else (),
            round(res.length, 3) if res else None,
        )
        for name, res, err in resolve_route_paths(route, progress=progress)
    ]


def _audit_pins(route: Route, places: _Places, out: list[AuditFinding]) -> None:
    nodes: tuple[Any, ...] = route.tdb.nodes  # node kinds are tested where it matters
    nv = len(nodes)
    for n in nodes[1:]:
        if n is None:
            continue
        want = _EXPECTED_PINS.get(n.kind)
        if want is not None and ((n.in_pins, n.out_pins) != want or len(n.pins) != n.in_pins + n.out_pins):
            out.append(
                AuditFinding(
                    "PIN_COUNT",
                    f"{n.kind} node {n.index}: {n.in_pins} in + {n.out_pins} out pins with "
                    f"{len(n.pins)} TrPin(s), expected {want[0]} + {want[1]}",
                    (n.index,),
                    location=places.node(n.index),
                )
            )
        for p, pin in enumerate(n.pins):
            where = places.node(n.index, p if n.kind == "vector" else None)
            link = pin.link
            if link == 0:
                out.append(
                    AuditFinding(
                        "PIN_UNCONNECTED",
                        f"{n.kind} node {n.index} pin {p} links to node 0: nothing is "
                        f"connected there (a traveller stops)",
                        (n.index,),
                        location=where,
                    )
                )
                continue
            if not 0 < link < nv or nodes[link] is None:
                out.append(
                    AuditFinding(
                        "PIN_OUT_OF_RANGE",
                        f"{n.kind} node {n.index} pin {p} links to node {link}, which "
                        f"does not exist (nodes are 1..{nv - 1})",
                        (n.index,),
                        location=where,
                    )
                )
                continue
            other = nodes[link]
            back = [q for q, bp in enumerate(other.pins) if bp.link == n.index]
            if not back:
                out.append(
                    AuditFinding(
                        "PIN_ASYMMETRIC",
                        f"{n.kind} node {n.index} pin {p} links to {other.kind} node {link}, "
                        f"which has no pin back to {n.index} (its pins link to "
                        f"{', '.join(str(bp.link) for bp in other.pins) or 'nothing'})",
                        (n.index, link),
                        location=where,
                    )
                )
                continue
            if pin.direction not in (0, 1):
                out.append(
                    AuditFinding(
                        "PIN_DIRECTION",
                        f"{n.kind} node {n.index} pin {p} (to node {link}) has direction "
                        f"{pin.direction}, expected 0 or 1",
                        (n.index, link),
                        location=where,
                    )
                )
                continue
            # §6.4: direction 1 = enter the other node at its pin 0 (a vector node's start,
            # a junction's trunk, an end node's only pin), 0 = at another pin; and the pin
            # back has direction 1 exactly when it leads to this node's pin 0.
            if not any(
                (q == 0) == (pin.direction == 1) and other.pins[q].direction == (1 if p == 0 else 0)
                for q in back
            ):
                backs = ", ".join(f"pin {q} ({other.pins[q].link} {other.pins[q].direction})" for q in back)
                out.append(
                    AuditFinding(
                        "PIN_DIRECTION",
                        f"{n.kind} node {n.index} pin {p} ({link} {pin.direction}) and the "
                        f"pin back from {other.kind} node {link} ({backs}) do not describe the same join "
                        f"(docs/formats.md §6.4)",
                        (n.index, link),
                        location=where,
                    )
                )


def _audit_nodes(route: Route, geom: SectionGeometry, places: _Places, out: list[AuditFinding]) -> None:
    shape_ids = route.tsection.shapes.ids
    for n in route.tdb.nodes[1:]:
        if isinstance(n, VectorNode):
            if n.section_count == 0:
                out.append(
                    AuditFinding("NODE_NO_SECTIONS", f"vector node {n.index} has no sections", (n.index,))
                )
                continue
            sl = n.section_slice
            bad = np.flatnonzero(~geom.known[sl])
            if len(bad):
                ids = geom.section_index[sl][bad]
                listed = ", ".join(f"{int(i)} (section {int(k)})" for i, k in zip(ids[:8], bad[:8]))
                more = f" and {len(bad) - 8} more" if len(bad) > 8 else ""
                out.append(
                    AuditFinding(
                        "SECTION_UNKNOWN",
                        f"vector node {n.index}: {len(bad)} of {n.section_count} section "
                        f"id(s) not in tsection.dat: {listed}{more}",
                        (n.index,),
                        location=places.row_start(sl.start + int(bad[0])),
                    )
                )
        elif isinstance(n, (JunctionNode, EndNode)):
            if n.uid is None:
                out.append(
                    AuditFinding(
                        "UID_MISSING", f"{n.kind} node {n.index} has no UiD (no position)", (n.index,)
                    )
                )
            if isinstance(n, JunctionNode):
                k = int(np.searchsorted(shape_ids, n.shape_index))
                if k >= len(shape_ids) or shape_ids[k] != n.shape_index:
                    out.append(
                        AuditFinding(
                            "JUNCTION_SHAPE_UNKNOWN",
                            f"junction node {n.index}: shape {n.shape_index} is not a "
                            f"TrackShape in tsection.dat",
                            (n.index,),
                            location=places.node(n.index),
                        )
                    )


def _audit_joins(
    route: Route,
    geom: SectionGeometry,
    places: _Places,
    clo,
    out: list[AuditFinding],
    gap_tol: float,
    kink_tol: float,
) -> None:
    gap = np.nan_to_num(clo.join_gap, nan=0.0)
    for k in np.flatnonzero(gap > gap_tol):
        row = int(clo.join_row[k])
        node = int(clo.join_node[k])
        pos = int(clo.join_section[k])
        dx, dy, dz = (float(v) for v in clo.join_delta[k])
        turn = float(clo.join_turn[k])
        ids = int(geom.section_index[row]), int(geom.section_index[row + 1])
        msg = (
            f"vector node {node}: {gap[k]:.3f} m gap between section {pos} (id {ids[0]}) and "
            f"section {pos + 1} (id {ids[1]}): "
            f"the next start is dX {dx:+.3f} dY {dy:+.3f} dZ {dz:+.3f} m from the computed end, "
            f"headings differ by {math.degrees(turn):+.1f}°"
        )
        msg += _reversal_note(geom, places, row, pos, gap_tol)
        out.append(
            AuditFinding("GAP_IN_NODE", msg, (node,), location=places.row_end(row), value=float(gap[k]))
        )
    turn = np.abs(np.nan_to_num(clo.join_turn, nan=0.0))
    for k in np.flatnonzero((turn > kink_tol) & (gap <= gap_tol)):
        row = int(clo.join_row[k])
        node = int(clo.join_node[k])
        pos = int(clo.join_section[k])
        jump = float(clo.join_turn[k])
        out.append(
            AuditFinding(
                "HEADING_KINK",
                f"vector node {node}: the heading jumps by {math.degrees(jump):+.3f}° "
                f"between section {pos} and section {pos + 1} (gap {gap[k]:.3f} m)",
                (node,),
                location=places.row_end(row),
                value=jump,
            )
        )


def _reversal_note(geom: SectionGeometry, places: _Places, row: int, pos: int, tol: float) -> str:
    """Whether laying section ``row`` with heading AY + π closes the gap to the next
    section's start (the next start is then exactly behind the section's start)."""
    one = geom.take([row])
    flipped = dataclasses.replace(one, ay=one.ay + math.pi)
    e = point_at(flipped, 0, flipped.length[0])
    nxt = places.start_xyz[row + 1]
    d = math.hypot(float(e.X) - nxt[0], float(e.Z) - nxt[2])
    if math.isfinite(d) and d <= tol:
        return (
            f"; explained by a heading reversed by π: section {pos} has AY {geom.ay[row]:.6f}, and with "
            f"AY + π its end meets the next start within {d:.4f} m (horizontal)"
        )
    return ""


def _audit_node_ends(route: Route, places: _Places, clo, out: list[AuditFinding], tol: float) -> None:
    nodes: tuple[Any, ...] = route.tdb.nodes  # node kinds are tested where it matters
    seen: set = set()
    for k in np.flatnonzero(np.nan_to_num(clo.end_gap, nan=0.0) > tol):
        node, pin, link = int(clo.end_node[k]), int(clo.end_pin[k]), int(clo.end_link[k])
        target = nodes[link]
        if isinstance(target, VectorNode):
            there_end = 0 if nodes[node].pins[pin].direction > 0 else 1
            key = frozenset({(node, pin), (link, there_end)})
            if key in seen:
                continue
            seen.add(key)
            what = f"the {'start' if there_end == 0 else 'end'} of vector node {link}"
        else:
            what = f"the UiD of {target.kind} node {link}"
        dx, dy, dz = (float(v) for v in clo.end_delta[k])
        out.append(
            AuditFinding(
                "GAP_AT_NODE_END",
                f"vector node {node} {'start' if pin == 0 else 'end'} (pin {pin}) is "
                f"{float(clo.end_gap[k]):.3f} m from {what} (dX {dx:+.3f} dY {dy:+.3f} dZ {dz:+.3f} m)",
                (node, link),
                location=places.node(node, pin),
                value=float(clo.end_gap[k]),
            )
        )


#: Item-to-section rows worked out at a time by _audit_items (memory, not results).
