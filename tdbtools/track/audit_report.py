"""The audit's records: every finding code with its severity (:data:`CODES`, the table in
:mod:`tdbtools.track.audit`), one finding (:class:`AuditFinding`), the route's report
(:class:`AuditReport`), how each path resolved (:class:`PathResolution`), and the world
places of node ends and section starts that the checks measure against."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..formats.route import Route
from ..formats.tdb import (
    VectorNode,
)
from .audit_paths import PathsReport
from .closure import section_start_xyz
from .geometry import SectionGeometry, WorldPoint, section_end_xyz

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
