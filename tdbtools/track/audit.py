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
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Diagnostics, TdbToolsError
from ..formats.pat import PathFile, read_pat
from ..formats.route import Route
from ..formats.tdb import (
    CrossoverItem,
    EndNode,
    JunctionNode,
    PlatformItem,
    SidingItem,
    SignalItem,
    VectorNode,
)
from ..stf import resolve_case_insensitive
from .geometry import (
    SectionGeometry,
    WorldPoint,
    closure,
    point_at,
    section_end_xyz,
    section_geometry,
    section_start_xyz,
)
from .paths import resolve_route_paths
from .spatial import distance_to_sections, nearest_track
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

#: Every finding code and its severity.
CODES: dict[str, str] = {
    "PIN_OUT_OF_RANGE": "error",
    "PIN_UNCONNECTED": "warning",
    "PIN_ASYMMETRIC": "error",
    "PIN_DIRECTION": "warning",
    "PIN_COUNT": "error",
    "NODE_NO_SECTIONS": "error",
    "SECTION_UNKNOWN": "error",
    "UID_MISSING": "warning",
    "JUNCTION_SHAPE_UNKNOWN": "warning",
    "GAP_IN_NODE": "warning",
    "HEADING_KINK": "warning",
    "GAP_AT_NODE_END": "warning",
    "ITEM_REF_MISSING": "error",
    "ITEM_REF_DUPLICATE": "warning",
    "ITEM_UNREFERENCED": "info",
    "ITEM_ID_MISMATCH": "warning",
    "ITEM_LINK_BROKEN": "warning",
    "ITEM_OFF_TRACK": "warning",
    "PATH_UNRESOLVED": "error",
    # timetables (track/timetable_audit.py); the reader's own codes are listed with them
    "TT_READ": "error",
    "TT_PATH_MISSING": "error",
    "TT_CONSIST_MISSING": "error",
    "TT_STATION_UNKNOWN": "error",
    "TT_STATION_OFF_PATH": "warning",
    "TT_TIME_ORDER": "warning",
    "TT_TRAIN_MISSING": "error",
    "TT_LIST_MISSING": "error",
    "TT_UNKNOWN_COMMAND": "warning",
    "TT_UNKNOWN_ROW": "warning",
    "TT_DUPLICATE_TRAIN": "error",
    "TT_SPEED_ROWS": "warning",
    "FORMAT": "warning",
}

_EXPECTED_PINS = {"vector": (1, 1), "junction": (1, 2), "end": (1, 0)}


# -- result records --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AuditFinding:
    code: str
    message: str
    nodes: tuple[int, ...] = ()
    items: tuple[int, ...] = ()
    location: WorldPoint | None = None
    #: The measured quantity for geometric findings (gap or distance in metres, heading
    #: jump in radians), else None.
    value: float | None = None
    #: The severity of a code that is not the audit's own (a loader finding).
    level: str | None = None

    @property
    def severity(self) -> str:
        return self.level or CODES.get(self.code, "warning")

    def to_json(self) -> dict:
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "nodes": list(self.nodes),
            "items": list(self.items),
            "location": self.location.to_json() if self.location else None,
            "value": self.value if self.value is not None and math.isfinite(self.value) else None,
        }

    def __str__(self) -> str:
        where = ""
        if self.location:
            lo = self.location
            where = f" @ tile ({lo.tile_x}, {lo.tile_z}) x {lo.x:.3f} y {lo.y:.3f} z {lo.z:.3f}"
        return f"{self.code}: {self.message}{where}"


@dataclass(frozen=True, slots=True, eq=False)
class AuditReport:
    route: str
    findings: tuple[AuditFinding, ...]
    #: Joins between consecutive sections inside vector nodes: count, p50, p99, max (m).
    closure: dict
    #: Vector-node ends against the node each pin links to: count, p50, p99, max (m).
    node_ends: dict
    stats: dict = field(default_factory=dict)
    thresholds: dict = field(default_factory=dict)
    #: With ``audit_route(..., paths=True)``: the .pat files' PDP check ...
    paths: PathsReport | None = None
    #: ... and each .pat file resolved through the network (else None).
    path_resolution: tuple[PathResolution, ...] | None = None

    @property
    def unresolved_paths(self) -> list[PathResolution]:
        return [p for p in self.path_resolution or () if not p.ok]

    def _facts(self) -> list[tuple[str, object]]:
        facts: list[tuple[str, object]] = [
            ("route", self.route),
            ("errors", sum(f.severity == "error" for f in self.findings)),
            ("warnings", sum(f.severity == "warning" for f in self.findings)),
            ("findings", len(self.findings)),
            ("codes", self.counts),
        ]
        if self.path_resolution is not None:
            facts.append(
                (
                    "paths",
                    f"{len(self.path_resolution) - len(self.unresolved_paths)} of {len(self.path_resolution)} resolve",
                )
            )
        return facts

    def __repr__(self) -> str:
        # Every finding is in .findings; the repr says how many.
        from .._display import short_repr

        return short_repr("AuditReport", self._facts())

    def _repr_html_(self) -> str:
        from .._display import html_summary

        return html_summary(f"Audit of {self.route}", self._facts())

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.code] = out.get(f.code, 0) + 1
        return dict(sorted(out.items()))

    def by_code(self, code: str) -> list[AuditFinding]:
        return [f for f in self.findings if f.code == code]

    def problems(self, min_severity: str = "warning") -> list[AuditFinding]:
        """Findings at or above a severity ("info" < "warning" < "error")."""
        rank = {"info": 0, "warning": 1, "error": 2}
        return [f for f in self.findings if rank[f.severity] >= rank[min_severity]]

    def to_json(self) -> dict:
        """The report ``tdbtools audit --json`` prints."""
        data = {
            "route": self.route,
            "findings": [f.to_json() for f in self.findings],
            "closure": self.closure,
            "node_ends": self.node_ends,
            "counts": self.counts,
            "stats": self.stats,
            "thresholds": self.thresholds,
        }
        if self.paths is not None or self.path_resolution is not None:
            data["paths"] = self.paths_json()
        return data

    def paths_json(self) -> dict:
        """One block for the ``.pat`` files: per file, how it reads (``status``: ok,
        findings, error), its PDP issues and whether it resolves on the track; the
        counts of all of them."""
        read = {p.file: p for p in self.paths.paths} if self.paths is not None else {}
        res = {p.file: p for p in self.path_resolution or ()}
        files = []
        for name in sorted({*read, *res}, key=str.lower):
            entry = read[name].to_json() if name in read else {"file": name}
            r = res.get(name)
            entry["resolved"] = None if r is None else r.ok
            entry["length_m"] = None if r is None else r.length_m
            entry["problems"] = [] if r is None else list(r.problems)
            if r is not None and r.error and not entry.get("error"):
                entry["error"] = r.error
            files.append(entry)
        counts = dict(self.paths.counts) if self.paths is not None else {"files": len(files)}
        counts["files"] = len(files)
        counts["read_ok"] = counts.pop("ok", 0)
        counts["read_with_findings"] = counts.pop("findings", 0)
        counts["unreadable"] = counts.pop("error", 0)
        if self.path_resolution is not None:
            counts["resolved"] = sum(1 for p in self.path_resolution if p.ok)
            counts["unresolved"] = len(self.path_resolution) - counts["resolved"]
        return {
            "folder": self.paths.folder if self.paths is not None else None,
            "counts": counts,
            "files": files,
        }


@dataclass(frozen=True, slots=True)
class PathResolution:
    """One ``.pat`` file resolved through the track network: ``ok`` when it gives a
    continuous route; else ``error`` (it could not be read or resolved) or
    ``problems``."""

    file: str
    ok: bool
    error: str | None = None
    problems: tuple[str, ...] = ()
    length_m: float | None = None

    def to_json(self) -> dict:
        return {
            "file": self.file,
            "ok": self.ok,
            "error": self.error,
            "problems": list(self.problems),
            "length_m": self.length_m,
        }


# -- helpers ---------------------------------------------------------------------------


def _stats(values: np.ndarray) -> dict:
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if len(v) == 0:
        return {"joins": 0, "p50": None, "p99": None, "max": None}
    p50, p99 = np.percentile(v, [50, 99])
    return {"joins": int(len(v)), "p50": float(p50), "p99": float(p99), "max": float(v.max())}


class _Places:
    """World positions of node ends and section starts/ends (absolute X, Y, Z)."""

    def __init__(self, route: Route, geom: SectionGeometry) -> None:
        self.route = route
        self.geom = geom
        # Only the end points and headings are kept (the closure reuses them), worked
        # out a run of rows at a time: the whole pose and its temporaries took ~0.3 GB
        # on a 200 MB route.
        self.end_xyz, self.end_heading = section_end_xyz(geom)
        self.start_xyz = section_start_xyz(geom)

    def row_start(self, row: int) -> WorldPoint | None:
        return WorldPoint.absolute(*self.start_xyz[row])

    def row_end(self, row: int) -> WorldPoint | None:
        return WorldPoint.absolute(*self.end_xyz[row])

    def node(self, index: int, pin: int | None = None) -> WorldPoint | None:
        """Where a node is: a junction/end node's UiD; a vector node's start (pin 0,
        or no pin) or end (pin 1)."""
        nodes = self.route.tdb.nodes
        if not 0 < index < len(nodes):
            return None
        n = nodes[index]
        if isinstance(n, VectorNode):
            if n.section_count == 0:
                return None
            sl = n.section_slice
            return self.row_end(sl.stop - 1) if pin == 1 else self.row_start(sl.start)
        uid = getattr(n, "uid", None)
        if uid is None:
            return None
        return WorldPoint.of(uid.tile_x, uid.tile_z, uid.x, uid.y, uid.z)


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
_ITEM_ROWS = 1 << 16


def _audit_items(
    route: Route,
    geom: SectionGeometry,
    places: _Places,
    out: list[AuditFinding],
    tol: float,
    unreferenced: bool,
) -> dict:
    nodes: tuple[Any, ...] = route.tdb.nodes  # node kinds are tested where it matters
    items: tuple[Any, ...] = route.tdb.items
    ni = len(items)
    nv = len(nodes)
    refs: dict[int, list[int]] = defaultdict(list)
    pairs: list[tuple[int, int]] = []
    for n in nodes[1:]:
        if not isinstance(n, VectorNode):
            continue
        for i in n.item_refs:
            if not 0 <= i < ni:
                out.append(
                    AuditFinding(
                        "ITEM_REF_MISSING",
                        f"vector node {n.index} refers to item {i}, which is not in the "
                        f"TrItemTable ({ni} items)",
                        (n.index,),
                        (i,),
                        places.node(n.index),
                    )
                )
                continue
            refs[i].append(n.index)
            pairs.append((n.index, i))

    def item_place(i: int) -> WorldPoint | None:
        r = items[i].r_data
        return None if r is None else WorldPoint.of(r.tile_x, r.tile_z, r.x, r.y, r.z)

    for i, it in enumerate(items):
        users = refs.get(i, [])
        if len(users) > 1:
            out.append(
                AuditFinding(
                    "ITEM_REF_DUPLICATE",
                    f"{it.kind} item {i} is referenced {len(users)} times (by node(s) "
                    f"{', '.join(map(str, users))})",
                    tuple(dict.fromkeys(users)),
                    (i,),
                    item_place(i),
                )
            )
        elif not users and unreferenced:
            out.append(
                AuditFinding(
                    "ITEM_UNREFERENCED",
                    f"{it.kind} item {i} is referenced by no track node",
                    (),
                    (i,),
                    item_place(i),
                )
            )
        if it.item_id is not None and it.item_id != i:
            out.append(
                AuditFinding(
                    "ITEM_ID_MISMATCH",
                    f"{it.kind} item at position {i} has TrItemId {it.item_id}",
                    tuple(dict.fromkeys(users)),
                    (i,),
                    item_place(i),
                )
            )
        _item_links(it, i, items, nv, users, item_place, out)

    # Off-track: project each referenced item on its node's sections (vectorised).
    pos_pairs = [(nd, i) for nd, i in pairs if items[i].r_data is not None and nodes[nd].section_count]
    stats: dict = {
        "references": len(pairs),
        "checked": len(pos_pairs),
        "without_position": sum(1 for _, i in pairs if items[i].r_data is None),
    }
    if not pos_pairs:
        return stats
    counts = np.array([nodes[nd].section_count for nd, _ in pos_pairs], dtype=np.int64)
    firsts = np.array([nodes[nd].first_section for nd, _ in pos_pairs], dtype=np.int64)
    rd = [items[i].r_data for _, i in pos_pairs]
    tx_p = np.array([r.tile_x for r in rd], dtype=np.int64)
    tz_p = np.array([r.tile_z for r in rd], dtype=np.int64)
    px_p = np.array([r.x for r in rd])
    pz_p = np.array([r.z for r in rd])
    # Views of the X and Z columns (no copy: 2 × 35 MB on a 200 MB route).
    start_xz = places.start_xyz[:, ::2]
    end_xz = places.end_xyz[:, ::2]
    npair = len(pos_pairs)
    best = np.empty(npair)
    best_rows = np.empty(npair, dtype=np.int64)
    best_off = np.empty(npair)
    # Each item against every section of its node, a few hundred thousand rows at a
    # time: all at once, a 200 MB route's ~10 row-long temporaries held ~0.4 GB. The
    # work is row by row and per item, so the figures are the same.
    ends = np.cumsum(counts)
    k0 = 0
    while k0 < npair:
        k1 = max(k0 + 1, int(np.searchsorted(ends, ends[k0] - counts[k0] + _ITEM_ROWS, side="right")))
        c = counts[k0:k1]
        pair_of = np.repeat(np.arange(k1 - k0), c)
        starts = np.cumsum(c) - c
        rows = firsts[k0:k1][pair_of] + (np.arange(len(pair_of)) - starts[pair_of])
        d, off = distance_to_sections(
            geom,
            start_xz,
            end_xz,
            rows,
            tx_p[k0:k1][pair_of],
            tz_p[k0:k1][pair_of],
            px_p[k0:k1][pair_of],
            pz_p[k0:k1][pair_of],
        )
        d = np.where(np.isnan(d), np.inf, d)
        best[k0:k1] = np.minimum.reduceat(d, starts)
        for k in range(k1 - k0):  # argmin per group (groups are small)
            a = int(starts[k])
            j = a + int(np.argmin(d[a : a + int(c[k])]))
            best_rows[k0 + k] = rows[j]
            best_off[k0 + k] = off[j]
        k0 = k1
    # The along-node offset of the nearest point, for the TrItemSData comparison.
    length0 = np.nan_to_num(geom.length, nan=0.0)
    within = np.cumsum(length0) - length0  # cumulative start of each row …
    node_first = np.array([nodes[nd].first_section for nd, _ in pos_pairs])
    node_off = within[best_rows] - within[node_first] + best_off
    sd = np.array([items[i].s_data.distance if items[i].s_data else np.nan for _, i in pos_pairs])
    finite = best[np.isfinite(best)]
    if len(finite):
        stats.update(
            {
                "distance_p50": float(np.percentile(finite, 50)),
                "distance_p99": float(np.percentile(finite, 99)),
                "distance_max": float(finite.max()),
            }
        )
    delta = np.abs(node_off - sd)
    delta = delta[np.isfinite(delta) & np.isfinite(best) & (best <= tol)]
    if len(delta):
        stats.update(
            {"sdata_offset_p99": float(np.percentile(delta, 99)), "sdata_offset_max": float(delta.max())}
        )
    for k in np.flatnonzero(~(best <= tol)).tolist():
        nd, i = pos_pairs[k]
        dist = "no known section" if not np.isfinite(best[k]) else f"{best[k]:.3f} m"
        out.append(
            AuditFinding(
                "ITEM_OFF_TRACK",
                f"{items[i].kind} item {i}: its TrItemRData position is {dist} from the "
                f"nearest section of vector node {nd} (tolerance {tol} m)",
                (nd,),
                (i,),
                item_place(i),
                float(best[k]),
            )
        )
    return stats


def _item_links(
    it,
    i: int,
    items,
    nv: int,
    users: list[int],
    item_place,  # noqa: ANN001
    out: list[AuditFinding],
) -> None:
    nodes = tuple(dict.fromkeys(users))
    if isinstance(it, (PlatformItem, SidingItem)):
        j = it.linked_item
        problem = None
        if not 0 <= j < len(items):
            problem = f"links to item {j}, which is not in the TrItemTable"
        elif type(items[j]) is not type(it):
            problem = f"links to item {j}, which is a {items[j].kind} item"
        elif items[j].linked_item != i:
            problem = f"links to item {j}, which links to item {items[j].linked_item}, not back"
        if problem:
            out.append(
                AuditFinding(
                    "ITEM_LINK_BROKEN",
                    f"{it.kind} item {i} {problem}",
                    nodes,
                    (i,) if not 0 <= j < len(items) else (i, j),
                    item_place(i),
                )
            )
    elif isinstance(it, SignalItem):
        bad = [d.track_node for d in it.signal_dirs if not 0 < d.track_node < nv]
        if bad:
            out.append(
                AuditFinding(
                    "ITEM_LINK_BROKEN",
                    f"signal item {i}: TrSignalDir names node(s) {', '.join(map(str, bad))}, out of range",
                    nodes,
                    (i,),
                    item_place(i),
                )
            )
    elif isinstance(it, CrossoverItem):
        # The first CrossoverTrItemData value (``track_node`` in the reader, after Open
        # Rails' name) is, in real content, the id of the paired crossover item: DK24's
        # 124 crossover items come in 62 mutual pairs, with values such as 0 and 1.
        j = it.track_node
        problem = None
        if not 0 <= j < len(items):
            problem = f"pairs with item {j}, which is not in the TrItemTable"
        elif not isinstance(items[j], CrossoverItem):
            problem = f"pairs with item {j}, which is a {items[j].kind} item"
        elif items[j].track_node != i:
            problem = f"pairs with item {j}, which pairs with item {items[j].track_node}, not back"
        if problem:
            out.append(
                AuditFinding(
                    "ITEM_LINK_BROKEN",
                    f"crossover item {i} {problem}",
                    nodes,
                    (i,) if not 0 <= j < len(items) else (i, j),
                    item_place(i),
                )
            )


# -- paths -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PdpIssue:
    """A PDP that is not where it should be.

    ``kind`` "off_track": no section within the tolerance (``distance`` = horizontal
    distance to the nearest section, ``track_node`` its vector node); "junction": a
    junction PDP (flag 2) with no junction node UiD within the tolerance on its tile
    (``distance`` = 3-D distance to the nearest junction on the tile, inf if none)."""

    kind: str
    pdp: int
    path_nodes: tuple[int, ...]
    location: WorldPoint | None
    distance: float
    track_node: int | None
    message: str

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "pdp": self.pdp,
            "path_nodes": list(self.path_nodes),
            "location": self.location.to_json() if self.location else None,
            "distance": round(self.distance, 4) if math.isfinite(self.distance) else None,
            "track_node": self.track_node,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class PathAudit:
    """One ``.pat`` file: ``status`` "ok" (parsed, no reader findings), "findings"
    (parsed leniently with findings) or "error" (could not be read at all)."""

    file: str
    status: str
    error: str | None = None
    findings: tuple[str, ...] = ()
    path_id: str = ""
    name: str = ""
    pdps: int = 0
    nodes: int = 0
    main_chain: tuple[int, ...] = ()
    issues: tuple[PdpIssue, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict:
        return {
            "file": self.file,
            "status": self.status,
            "error": self.error,
            "findings": list(self.findings),
            "path_id": self.path_id,
            "name": self.name,
            "pdps": self.pdps,
            "nodes": self.nodes,
            "main_chain": list(self.main_chain),
            "issues": [i.to_json() for i in self.issues],
        }


@dataclass(frozen=True, slots=True, eq=False)
class PathsReport:
    route: str
    folder: str
    exists: bool
    paths: tuple[PathAudit, ...]
    thresholds: dict = field(default_factory=dict)

    @property
    def counts(self) -> dict[str, int]:
        c = {
            "files": len(self.paths),
            "ok": 0,
            "findings": 0,
            "error": 0,
            "off_track_pdps": 0,
            "junction_pdps_unmatched": 0,
        }
        for p in self.paths:
            c[p.status] += 1
            for i in p.issues:
                c["off_track_pdps" if i.kind == "off_track" else "junction_pdps_unmatched"] += 1
        return c

    def to_json(self) -> dict:
        return {
            "route": self.route,
            "folder": self.folder,
            "exists": self.exists,
            "counts": self.counts,
            "thresholds": self.thresholds,
            "paths": [p.to_json() for p in self.paths],
        }


def audit_paths(
    route: Route,
    paths_folder: str | Path | None = None,
    *,
    pdp_tolerance: float = 2.5,
    junction_tolerance: float = 1.0,
) -> PathsReport:
    """Read every ``.pat`` of ``paths_folder`` (default: the route's ``PATHS``)
    leniently and check its PDPs.

    A PDP is off track when no section of any vector node is within ``pdp_tolerance``
    metres horizontally (2.5 m = Open Rails' ``MaximumCenterlineOffset``). A junction
    PDP (flag 2) is unmatched when no junction node UiD on the same tile is within
    ``junction_tolerance`` metres (3-D; Open Rails snaps it to the nearest one on the
    tile). Resolving the path through the network is not done here.
    """
    folder = (
        Path(paths_folder)
        if paths_folder is not None
        else resolve_case_insensitive(Path(route.folder) / "PATHS")
    )
    thresholds = {"pdp_tolerance": pdp_tolerance, "junction_tolerance": junction_tolerance}
    if not folder.is_dir():
        return PathsReport(route.name, str(folder), False, (), thresholds)
    files = sorted(
        (p for p in folder.iterdir() if p.suffix.lower() == ".pat" and p.is_file()),
        key=lambda p: p.name.lower(),
    )
    parsed: list[tuple[Path, PathFile | None, list[str], str | None]] = []
    for f in files:
        diags = Diagnostics(strict=False)
        try:
            read = read_pat(f, diagnostics=diags)
        except (TdbToolsError, OSError) as exc:
            parsed.append((f, None, [str(x) for x in diags.findings], str(exc)))
            continue
        parsed.append((f, read, [str(x) for x in diags.findings], None))

    # All PDPs of all files in one scan.
    owners: list[tuple[int, int]] = []
    pts: list[tuple[int, int, float, float, float]] = []
    for k, (_f, pf, _fs, _e) in enumerate(parsed):
        if pf is None:
            continue
        for j, p in enumerate(pf.pdps):
            owners.append((k, j))
            pts.append((p.tile_x, p.tile_z, p.x, p.y, p.z))
    geom = section_geometry(route)
    if pts:
        arr = np.array(pts, dtype=np.float64)
        dist, row, _ = nearest_track(
            route, arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64), arr[:, 2], arr[:, 4], geom=geom
        )
    else:
        dist = row = np.zeros(0)
    junctions = _junction_table(route)
    issues: dict[int, list[PdpIssue]] = defaultdict(list)
    for m, (k, j) in enumerate(owners):
        pf = parsed[k][1]
        assert pf is not None
        p = pf.pdps[j]
        users = tuple(i for i, n in enumerate(pf.nodes) if n.pdp_index == j)
        loc = WorldPoint.of(p.tile_x, p.tile_z, p.x, p.y, p.z)
        if not dist[m] <= pdp_tolerance:
            tn = int(geom.node[row[m]]) if row[m] >= 0 else None
            far = (
                f"{dist[m]:.3f} m from the nearest track (vector node {tn})"
                if tn is not None
                else "not near any track"
            )
            issues[k].append(
                PdpIssue(
                    "off_track",
                    j,
                    users,
                    loc,
                    float(dist[m]),
                    tn,
                    f"PDP {j} is {far} (tolerance {pdp_tolerance} m)",
                )
            )
        if p.is_junction:
            jd, jn = _nearest_junction(junctions, p)
            if not jd <= junction_tolerance:
                what = (
                    f"the nearest junction node on its tile is {jn}, {jd:.3f} m away"
                    if jn is not None
                    else f"there is no junction node on tile ({p.tile_x}, {p.tile_z})"
                )
                issues[k].append(
                    PdpIssue(
                        "junction",
                        j,
                        users,
                        loc,
                        jd,
                        jn,
                        f"junction PDP {j}: {what} (tolerance {junction_tolerance} m)",
                    )
                )
    out = []
    for k, (f, pf, fs, err) in enumerate(parsed):
        if pf is None:
            out.append(PathAudit(f.name, "error", err, tuple(fs)))
            continue
        out.append(
            PathAudit(
                f.name,
                "findings" if fs else "ok",
                fs[0] if fs else None,
                tuple(fs),
                pf.path_id,
                pf.name,
                len(pf.pdps),
                len(pf.nodes),
                pf.main_chain().nodes,
                tuple(issues.get(k, ())),
            )
        )
    return PathsReport(route.name, str(folder), True, tuple(out), thresholds)


def _junction_table(route: Route) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]:
    by_tile: dict[tuple[int, int], list] = defaultdict(list)
    for n in route.tdb.nodes[1:]:
        if isinstance(n, JunctionNode) and n.uid is not None:
            u = n.uid
            by_tile[(u.tile_x, u.tile_z)].append((n.index, u.x, u.y, u.z))
    return {
        t: (np.array([v[0] for v in vs], dtype=np.int64), np.array([v[1:] for v in vs]))
        for t, vs in by_tile.items()
    }


def _nearest_junction(table, p) -> tuple[float, int | None]:  # noqa: ANN001
    hit = table.get((p.tile_x, p.tile_z))
    if hit is None:
        return math.inf, None
    ids, xyz = hit
    d = np.linalg.norm(xyz - np.array([p.x, p.y, p.z]), axis=1)
    k = int(np.argmin(d))
    return float(d[k]), int(ids[k])
