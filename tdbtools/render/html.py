"""A self-contained interactive page of a route scene (one .html file, opens in any
browser without Python or a network): plotly.js's WebGL 3-D scatter, embedded in the
file. Pan, zoom and rotate with the mouse; the legend shows and hides each layer;
hovering a track point or a marker shows its data; two buttons switch between the
top-down map and the exaggerated 3-D view. Why plotly: docs/render.md §7.
"""

from __future__ import annotations

import html as _html
import math
from pathlib import Path

import numpy as np

from ..errors import TdbToolsError
from ..formats.route import Route
from . import view as V
from .scene import (
    GAP_COLOR,
    KIND_COLORS,
    KIND_NAMES,
    MARKER_COLORS,
    MARKER_KINDS,
    SEVERITY_COLORS,
    Scene,
    _item_info,
    as_scene,
)

NO_PLOTLY = "an HTML page needs plotly: pip install 'tdbtools[render]' (plotly)"
MARKER_NAMES = {
    "junction": "junctions",
    "end": "ends of track",
    "signal": "signals",
    "speedpost": "speed posts",
    "platform": "platforms",
    "siding": "sidings",
}

__all__ = ["write_html", "figure"]


def _go():
    try:
        import plotly.graph_objects as go  # type: ignore[import-untyped]
    except ImportError:
        raise TdbToolsError(NO_PLOTLY) from None
    return go


def _with_breaks(points: np.ndarray, offsets: np.ndarray, *cols: np.ndarray) -> list[np.ndarray]:
    """Polylines as one array with a NaN row between lines (plotly breaks the line there)."""
    n = len(offsets) - 1
    idx = np.arange(len(points)) + np.repeat(np.arange(n), np.diff(offsets))
    out = []
    for c in (points, *cols):
        c = np.asarray(c, dtype=np.float64)
        shape = (len(points) + n - 1,) + c.shape[1:]
        a = np.full(shape, np.nan)
        a[idx] = c
        out.append(a)
    return out


def _hover_item(info: dict) -> str:
    return "<br>".join(f"{_html.escape(str(k))}: {_html.escape(str(v))}" for k, v in info.items())


def figure(scene: Scene, *, exaggerate: float | None = None):
    """The plotly figure of a scene (see :func:`write_html`)."""
    go = _go()
    tr = scene.track
    pts = np.asarray(tr.points, dtype=np.float64) if tr.n_points else np.zeros((0, 3))
    base = float(pts[:, 2].min()) if len(pts) else 0.0
    e = (
        V.auto_exaggeration(pts if scene.focus is None else scene.focus)
        if exaggerate is None
        else float(exaggerate)
    )
    if not (math.isfinite(e) and e > 0):
        raise TdbToolsError(f"exaggerate must be a positive number, not {exaggerate}")
    traces = []
    # Text drawn inside WebGL costs seconds per label set in plotly; labels are SVG
    # annotations pinned to 3-D points instead (they follow the camera as well).
    notes: list[dict] = []
    if len(pts):
        pd = tr.point_data
        offsets = _offsets_from_nodes(np.asarray(pd["node"]))
        custom = np.column_stack(
            [pd["node"], pd["section"], pd["section_id"], pd["offset_m"], pd["grade"], pd["curvature_per_km"]]
        )
        hover = (
            "node %{customdata[0]:.0f}, section %{customdata[1]:.0f} (id %{customdata[2]:.0f})<br>"
            "offset %{customdata[3]:.1f} m<br>grade %{customdata[4]:.2f} ‰<br>"
            "curvature %{customdata[5]:.3f} /km<extra>track</extra>"
        )
        if scene.color_by == "kind":
            kind_pt = np.repeat(np.asarray(tr.cell_data["kind"]), np.diff(offsets))
            for ki, name in enumerate(KIND_NAMES):
                sel_cells = np.flatnonzero(np.asarray(tr.cell_data["kind"]) == ki)
                if not len(sel_cells):
                    continue
                mask = kind_pt == ki
                sub_off = np.concatenate([[0], np.cumsum(np.diff(offsets)[sel_cells])])
                P, C = _with_breaks(pts[mask], sub_off, custom[mask])
                P, C = P.astype(np.float32), C.astype(np.float32)
                traces.append(
                    go.Scatter3d(
                        x=P[:, 0],
                        y=P[:, 1],
                        z=P[:, 2],
                        mode="lines",
                        name=f"track: {name}",
                        line=dict(color=KIND_COLORS[ki], width=5),
                        customdata=C,
                        hovertemplate=hover,
                        legendgroup="track",
                    )
                )
        else:
            vals = np.asarray(pd[scene.scalars], dtype=np.float64)
            P, C, S = (a.astype(np.float32) for a in _with_breaks(pts, offsets, custom, vals))
            title = "grade ‰" if scene.color_by == "grade" else "limit km/h"
            scale = (
                [[0, "#1f4fb4"], [0.5, "#9a9a9a"], [1, "#c41a1a"]] if scene.color_by == "grade" else "Viridis"
            )
            traces.append(
                go.Scatter3d(
                    x=P[:, 0],
                    y=P[:, 1],
                    z=P[:, 2],
                    mode="lines",
                    name="track",
                    line=dict(
                        color=np.nan_to_num(S),
                        colorscale=scale,
                        cmin=scene.clim[0],
                        cmax=scene.clim[1],
                        width=5,
                        showscale=True,
                        colorbar=dict(title=dict(text=title), len=0.5, y=0.3, thickness=14),
                    ),
                    customdata=C,
                    hovertemplate=hover,
                    legendgroup="track",
                )
            )
    for k in MARKER_KINDS:
        m = scene.markers.get(k)
        if m is None or not len(m):
            continue
        if k in ("junction", "end"):
            text = [f"{k} node {int(i)}" for i in m.ids]
        else:
            text = [_hover_item(_item_info(scene.items[int(i)])) for i in m.ids]
        if k == "platform":
            notes += [_note(p, t, bold=True) for p, t in zip(m.points, m.labels) if t]
        traces.append(
            go.Scatter3d(
                x=m.points[:, 0],
                y=m.points[:, 1],
                z=m.points[:, 2],
                mode="markers",
                name=MARKER_NAMES[k],
                marker=dict(size=5 if k != "platform" else 7, color=MARKER_COLORS[k]),
                hovertext=text,
                hoverinfo="text",
                visible=True if k in ("platform", "signal", "end") else "legendonly",
            )
        )
    f = scene.markers.get("finding")
    if f is not None and len(f):
        sev = [scene.findings[int(i)].severity for i in f.ids]
        text = [
            _hover_item(
                {
                    "code": scene.findings[int(i)].code,
                    "severity": s,
                    "message": scene.findings[int(i)].message,
                }
            )
            for i, s in zip(f.ids, sev)
        ]
        traces.append(
            go.Scatter3d(
                x=f.points[:, 0],
                y=f.points[:, 1],
                z=f.points[:, 2],
                mode="markers",
                name="audit findings",
                marker=dict(size=10, color=[SEVERITY_COLORS[s] for s in sev], symbol="diamond"),
                hovertext=text,
                hoverinfo="text",
            )
        )
        notes += [
            _note(p, t, color=SEVERITY_COLORS[s])
            for p, t, s in zip(f.points, _cluster_labels(f.points, list(f.labels), sev), sev)
            if t
        ]
    if scene.gaps is not None and scene.gaps.n_points:
        g = np.asarray(scene.gaps.points)
        P = np.full((len(g) // 2 * 3, 3), np.nan)
        P[0::3], P[1::3] = g[0::2], g[1::2]
        traces.append(
            go.Scatter3d(
                x=P[:, 0],
                y=P[:, 1],
                z=P[:, 2],
                mode="lines",
                name="gaps in nodes",
                line=dict(color=GAP_COLOR, width=8),
                hoverinfo="skip",
                legendgroup="audit findings",
            )
        )
    # scale bar and north arrow, as 3-D objects so that they stay true when turned
    frame_pts = pts if scene.focus is None else scene.focus
    if len(frame_pts):
        lo, hi = frame_pts.min(axis=0), frame_pts.max(axis=0)
        span = float(max(hi[0] - lo[0], hi[1] - lo[1], 1.0))
        L = V.nice_length(span * 0.2)
        y0 = lo[1] - 0.04 * span
        z0 = base
        label = f"{L / 1000:g} km" if L >= 1000 else f"{L:g} m"
        traces.append(
            go.Scatter3d(
                x=[lo[0], lo[0] + L],
                y=[y0, y0],
                z=[z0, z0],
                mode="lines",
                name="scale bar",
                line=dict(color="black", width=6),
                hoverinfo="skip",
            )
        )
        notes.append(_note((lo[0] + L / 2, y0, z0), label, yanchor="top"))
        # the arrow's tip at the scale bar's height: below the route, so it never covers track
        ax, ay = lo[0] + L + 0.06 * span, y0 - 0.08 * span
        traces.append(
            go.Scatter3d(
                x=[ax, ax, ax - 0.012 * span, ax, ax + 0.012 * span],
                y=[ay, ay + 0.08 * span, ay + 0.055 * span, ay + 0.08 * span, ay + 0.055 * span],
                z=[z0] * 5,
                mode="lines",
                name="north arrow",
                line=dict(color="black", width=5),
                hoverinfo="skip",
            )
        )
        notes.append(_note((ax, ay + 0.08 * span, z0), "N", bold=True, yanchor="bottom"))
        extra = [[lo[0], y0, z0], [lo[0] + L, y0, z0], [ax, ay, z0]]
    fig = go.Figure(traces)
    fig.layout.meta = {"tdb_frame_extra": extra if len(frame_pts) else []}
    ext = np.ptp(frame_pts, axis=0) if len(frame_pts) else np.ones(3)
    ext = np.maximum(ext, 1.0)
    big = float(max(ext[0], ext[1]))
    ratio = dict(x=ext[0] / big, y=ext[1] / big, z=max(ext[2] * e / big, 0.02))
    rng = {}
    if scene.focus is not None:
        c_lo, c_hi = frame_pts.min(axis=0), frame_pts.max(axis=0)
        rng = dict(xaxis=dict(range=[c_lo[0], c_hi[0]]), yaxis=dict(range=[c_lo[1], c_hi[1]]))
    map_cam = dict(
        eye=dict(x=0, y=0, z=2.2),
        up=dict(x=0, y=1, z=0),
        center=dict(x=0, y=0, z=0),
        projection=dict(type="orthographic"),
    )
    d3_cam = dict(
        eye=dict(x=-0.5, y=-1.5, z=0.9),
        up=dict(x=0, y=0, z=1),
        center=dict(x=0, y=0, z=-0.1),
        projection=dict(type="perspective"),
    )
    axis = dict(visible=False)
    fig.update_layout(
        title=dict(text=_html.escape(scene.title) + f"  (3-D heights x{e:.3g})", x=0.01, font=dict(size=15)),
        paper_bgcolor="white",
        margin=dict(l=0, r=0, t=40, b=40),
        hovermode="closest",
        legend=dict(
            orientation="h",
            x=0.0,
            y=0.0,
            yanchor="top",
            bgcolor="rgba(255,255,255,0.8)",
            title=dict(text="layers (click to show/hide):"),
        ),
        scene=dict(
            aspectmode="manual",
            aspectratio=ratio,
            camera=map_cam,
            dragmode="orbit",
            annotations=notes,
            xaxis={**axis, **rng.get("xaxis", {})},
            yaxis={**axis, **rng.get("yaxis", {})},
            zaxis=axis,
        ),
        updatemenus=[
            dict(
                type="buttons",
                direction="right",
                x=0.62,
                xanchor="left",
                y=1.0,
                yanchor="bottom",
                buttons=[
                    dict(
                        label="map (top-down)",
                        method="relayout",
                        args=[{"scene.camera": map_cam, "scene.aspectratio": ratio}],
                    ),
                    dict(
                        label="3-D",
                        method="relayout",
                        args=[{"scene.camera": d3_cam, "scene.aspectratio": ratio}],
                    ),
                ],
            )
        ],
    )
    return fig


def _note(p, text: str, *, bold: bool = False, color: str = "black", yanchor: str = "bottom") -> dict:
    return dict(
        x=float(p[0]),
        y=float(p[1]),
        z=float(p[2]),
        text=f"<b>{_html.escape(text)}</b>" if bold else _html.escape(text),
        showarrow=False,
        xanchor="left",
        yanchor=yanchor,
        xshift=4,
        font=dict(size=12, color=color),
        bgcolor="rgba(255,255,255,0.7)",
    )


def _cluster_labels(points: np.ndarray, labels: list[str], severity: list[str]) -> list[str]:
    """Text for finding markers without a pile of overlapping labels: the most severe
    finding of each cluster (8 % of the extent) is labelled, with how many it stands for."""
    rank = {"error": 0, "warning": 1, "info": 2}
    span = float(np.ptp(points[:, :2], axis=0).max()) if len(points) > 1 else 1.0
    r = 0.08 * max(span, 1.0)
    order = sorted(range(len(labels)), key=lambda i: (rank.get(severity[i], 3), i))
    heads: list[int] = []
    count: dict[int, int] = {}
    for i in order:
        near = [h for h in heads if np.hypot(*(points[i, :2] - points[h, :2])) < r]
        if near:
            count[near[0]] += 1
        else:
            heads.append(i)
            count[i] = 1
    return [
        (labels[i] + (f" (+{count[i] - 1})" if count[i] > 1 else "")) if i in count else ""
        for i in range(len(labels))
    ]


def _offsets_from_nodes(node: np.ndarray) -> np.ndarray:
    change = np.flatnonzero(node[1:] != node[:-1]) + 1
    return np.concatenate([[0], change, [len(node)]]).astype(np.int64)


#: Runs in the page after plotting: zooms the camera so that the route (or the focus)
#: fills the plot with a margin, now and after each view button; window.tdbProject
#: gives the pixel of a data point (used by the browser test to hover a known point).
_FIT_JS = """
(function () {
  var gd = document.getElementById('{plot_id}');
  var FRAME = %s;
  function mul(m, v) { var o = [0, 0, 0, 0]; for (var i = 0; i < 4; i++) for (var j = 0; j < 4; j++) o[i] += m[j * 4 + i] * v[j]; return o; }
  window.tdbProject = function (p) {
    var sc = gd._fullLayout.scene._scene, cp = sc.glplot.cameraParams, ds = sc.dataScale;
    var v = [p[0] * ds[0], p[1] * ds[1], p[2] * ds[2], 1];
    v = mul(cp.projection, mul(cp.view, mul(cp.model, v)));
    var r = gd.querySelector('.gl-container canvas').getBoundingClientRect();
    if (v[3] <= 0) return [NaN, NaN];
    return [r.left + (v[0] / v[3] + 1) / 2 * r.width, r.top + (1 - (v[1] / v[3] + 1) / 2) * r.height];
  };
  function extent() {
    var r = gd.querySelector('.gl-container canvas').getBoundingClientRect();
    var x0 = 1e9, x1 = -1e9, y0 = 1e9, y1 = -1e9, behind = false;
    FRAME.forEach(function (p) { var q = window.tdbProject(p); if (!isFinite(q[0]) || !isFinite(q[1])) behind = true;
      x0 = Math.min(x0, q[0]); x1 = Math.max(x1, q[0]); y0 = Math.min(y0, q[1]); y1 = Math.max(y1, q[1]); });
    if (behind) return 2;   // part of the route is behind the camera: step back
    // a perspective view is not re-centred, only zoomed: it keeps a wider margin
    var k = gd._fullLayout.scene.camera.projection.type === 'orthographic' ? 1.0 : 0.85;
    return Math.max((x1 - x0) / (0.86 * k * r.width), (y1 - y0) / (0.80 * k * (r.height - 40)));
  }
  function fit(n) {
    var sc = gd._fullLayout.scene._scene;
    if (!sc || !sc.glplot || !sc.glplot.cameraParams) return;
    var f = extent();
    if (!(f > 0) || Math.abs(f - 1) < 0.03 || n <= 0) {   // drawn once more before it says so
      requestAnimationFrame(function () { requestAnimationFrame(function () { gd.dataset.fitted = '1'; }); });
      return;
    }
    var cam = gd._fullLayout.scene.camera, upd = {};
    if (cam.projection.type === 'orthographic') {   // plotly zooms an orthographic view by the aspect ratio
      var ar = gd._fullLayout.scene.aspectratio;
      upd['scene.aspectratio'] = {x: ar.x / f, y: ar.y / f, z: ar.z / f};
    } else {
      upd['scene.camera.eye'] = {x: cam.eye.x * f, y: cam.eye.y * f, z: cam.eye.z * f};
    }
    Plotly.relayout(gd, upd)
      .then(function () { requestAnimationFrame(function () { fit(n - 1); }); });
  }
  window.tdbFit = function () { gd.dataset.fitted = ''; requestAnimationFrame(function () { fit(6); }); };
  gd.on('plotly_buttonclicked', window.tdbFit);
  window.tdbFit();
})();
"""


def _frame_points(scene: Scene, n: int = 1500) -> list:
    pts = scene.focus if scene.focus is not None else np.asarray(scene.track.points)
    if len(pts) == 0:
        return []
    step = max(1, len(pts) // n)
    return np.round(np.asarray(pts)[::step], 2).tolist()


def _vendored_plotlyjs() -> str | None:
    """plotly.js's 3-D bundle shipped with tdbtools (vendor/README.md), if it matches the
    plotly.js version of the installed plotly; else None (the full bundle is embedded)."""
    from importlib.resources import files

    try:
        from plotly.offline import get_plotlyjs_version  # type: ignore[import-untyped]

        text = (files(__package__) / "vendor" / "plotly-gl3d.min.js").read_text(encoding="utf-8")
    except (ImportError, OSError):
        return None
    head = text[:200]
    if f"v{get_plotlyjs_version()}" not in head:
        return None
    return text.replace("</script", "<\\/script")


def write_html(scene: Scene | Route, out: str | Path, *, exaggerate: float | None = None) -> Path:
    """Write the scene (or a route's default scene) as one self-contained HTML page
    (plotly.js embedded; no network or Python needed to open it), atomically."""
    import json

    scene = as_scene(scene)

    fig = figure(scene, exaggerate=exaggerate)
    out = Path(out)
    tmp = out.with_name(f".{out.name}.tmp.html")
    bundle = _vendored_plotlyjs()
    page = fig.to_html(
        include_plotlyjs=bundle is None,
        full_html=True,
        include_mathjax=False,
        config={"displaylogo": False, "scrollZoom": True, "responsive": True},
        default_width="100%",
        default_height="96vh",
        post_script=_FIT_JS % json.dumps(_frame_points(scene) + fig.layout.meta["tdb_frame_extra"]),
    )
    head = f"<head>\n    <title>{_html.escape(scene.title)}</title>"
    if bundle is not None:
        head += f'\n    <script type="text/javascript">{bundle}</script>'
    page = page.replace("<head>", head, 1)
    try:
        tmp.write_text(page, encoding="utf-8")
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return out
