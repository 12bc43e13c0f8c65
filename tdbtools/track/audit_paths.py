"""The paths' part of the audit: every ``.pat`` of the route read leniently, its PDPs
checked against the track by a vectorised nearest-section scan and its junction PDPs
against the junction nodes (:func:`audit_paths`)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import Diagnostics, TdbToolsError
from ..formats.pat import PathFile, read_pat
from ..formats.route import Route
from ..formats.tdb import (
    JunctionNode,
)
from ..stf import resolve_case_insensitive
from .geometry import (
    WorldPoint,
    section_geometry,
)
from .spatial import nearest_track

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
