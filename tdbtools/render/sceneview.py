"""A scene drawn by pyvista: :class:`SceneView` (one plotter, one view, its overlays,
picking and layer keys) and the drawing entry points built on it: :func:`render_png`,
:func:`screenshot`, :func:`show` (docs/render.md)."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import numpy as np

from .._fs import atomic_output
from ..errors import TdbToolsError
from ..formats.route import Route
from . import items as I
from . import view as V
from .backend import _pv, check_renderer
from .scene import (
    ASPECT_COLORS,
    ASPECT_NAMES,
    GAP_COLOR,
    GRADE_CMAP,
    KIND_COLORS,
    KIND_NAMES,
    LABEL_PRIORITY,
    LAYER_KEYS,
    LAYERS,
    MARKER_COLORS,
    MARKER_KINDS,
    MARKER_PX,
    PATH_POINT_COLORS,
    SEVERITY_COLORS,
    Scene,
    _base_height,
    _item_info,
    _polyline_cells,
    auto_exaggeration,
    build_scene,
)

# -- rendering ---------------------------------------------------------------------------


def _theme(pv):
    theme = pv.themes.DocumentTheme()
    theme.background = "white"
    theme.font.color = "black"
    theme.font.family = "arial"
    theme.anti_aliasing = None
    theme.multi_samples = 0
    theme.lighting = True
    theme.smooth_shading = False
    return theme


def _rgb(color: str) -> tuple[float, float, float]:
    c = color.lstrip("#")
    return tuple(int(c[i : i + 2], 16) / 255.0 for i in (0, 2, 4))  # type: ignore[return-value]


class SceneView:
    """A scene in a pyvista plotter, seen from one view (``"map"``: top-down, north up;
    ``"3d"``: perspective, heights × ``exaggerate``, automatic when None), framed so that
    the route, or the scene's focus, fills the window with a margin. Overlays: colour
    bar or categorical legend, scale bar, north arrow, labels placed without overlap.
    :meth:`pick` tells what is under a pixel; :meth:`toggle` shows/hides a layer."""

    def __init__(
        self,
        scene: Scene,
        window_size: tuple[int, int] = (1280, 960),
        *,
        off_screen: bool = True,
        view: str = "map",
        exaggerate: float | None = None,
        labels: bool = True,
        base: float | None = None,
    ) -> None:
        if view not in V.VIEWS:
            raise TdbToolsError(f"view must be one of {', '.join(V.VIEWS)}, not {view!r}")
        pv = _pv()
        self.scene = scene
        self.view = view
        self.window_size = (int(window_size[0]), int(window_size[1]))
        tp = np.asarray(scene.track.points) if scene.track.n_points else np.zeros((0, 3))
        # Heights are stretched about the lowest track of the place shown (a focus: its
        # own window), so a local view's track does not float kilometres above the grid.
        self.base = _base_height(scene, tp) if base is None else float(base)
        if view == "map":
            self.exaggeration = 1.0
        elif exaggerate is None:
            self.exaggeration = auto_exaggeration(scene)
        else:
            if not (math.isfinite(exaggerate) and 0 < exaggerate <= 10000):
                raise TdbToolsError(f"exaggerate must be in (0, 10000], not {exaggerate}")
            self.exaggeration = float(exaggerate)
        self.actors: dict[str, list] = {k: [] for k in LAYERS}
        self.visible = {k: True for k in LAYERS}
        self.visible["labels"] = labels
        self._label_actors: list = []
        self._overlay_actors: list = []
        p = pv.Plotter(off_screen=off_screen, window_size=list(self.window_size), theme=_theme(pv))
        self.plotter = p
        e, base = self.exaggeration, self.base

        def lifted(mesh):
            m = mesh.copy(deep=True)
            if m.n_points and e != 1.0:
                m.points = V.exaggerate(m.points, e, base)
            return m

        self._lifted = lifted
        if scene.grid.n_points:
            grid = scene.grid.copy(deep=True)
            gp = np.asarray(grid.points).copy()
            gp[:, 2] = base - 1.0  # just under the lowest track drawn
            grid.points = gp
            self.actors["grid"].append(
                p.add_mesh(grid, color="#d0d0d0", line_width=1, name="grid", lighting=False)
            )
        if scene.track.n_points:
            track = lifted(scene.track)
            self.track_points = np.asarray(track.points)
            common = dict(line_width=4, lighting=False, name="track", nan_color="grey")
            if scene.color_by == "kind":
                from matplotlib.colors import ListedColormap  # pyvista depends on matplotlib

                a = p.add_mesh(
                    track,
                    scalars="kind",
                    cmap=ListedColormap(list(KIND_COLORS)),
                    clim=scene.clim,
                    show_scalar_bar=False,
                    **common,
                )
            else:
                title = "grade (permille, + rising)" if scene.color_by == "grade" else "speed limit (km/h)"
                cmap = GRADE_CMAP() if scene.color_by == "grade" else "viridis"
                a = p.add_mesh(
                    track,
                    scalars=scene.scalars,
                    cmap=cmap,
                    clim=scene.clim,
                    scalar_bar_args={
                        "title": title,
                        "n_labels": 5,
                        "fmt": "%.0f",
                        "vertical": False,
                        "position_x": 0.5,
                        "position_y": 0.015,
                        "width": 0.3,
                        "height": 0.07,
                        "title_font_size": 12,
                        "label_font_size": 11,
                    },
                    **common,
                )
            self.actors["track"].append(a)
        else:
            self.track_points = np.zeros((0, 3))
        self.marker_points: dict[str, np.ndarray] = {}
        for k, m in scene.markers.items():
            if not len(m):
                continue
            pts = lifted(m.glyphs)
            self.marker_points[k] = np.asarray(pts.points)
            if k == "finding":
                sev = np.array(
                    [{"error": 2, "warning": 1}.get(scene.findings[int(i)].severity, 0) for i in m.ids]
                )
                pts.point_data["severity"] = sev
                from matplotlib.colors import ListedColormap

                cm = ListedColormap([SEVERITY_COLORS[s] for s in ("info", "warning", "error")])
                a = p.add_mesh(
                    pts,
                    scalars="severity",
                    cmap=cm,
                    clim=(-0.5, 2.5),
                    show_scalar_bar=False,
                    point_size=16 * scene.glyph_size,
                    render_points_as_spheres=True,
                    name="glyph-finding",
                    lighting=False,
                )
                self.actors["audit"].append(a)
            elif k == "signal" and scene.extra.get("signal_aspect") is not None:
                from matplotlib.colors import ListedColormap

                pts.point_data["aspect"] = np.asarray(scene.extra["signal_aspect"], dtype=np.int64)
                a = p.add_mesh(
                    pts,
                    scalars="aspect",
                    cmap=ListedColormap(list(ASPECT_COLORS)),
                    clim=(-0.5, len(ASPECT_COLORS) - 0.5),
                    show_scalar_bar=False,
                    point_size=(MARKER_PX[k] + 4) * scene.glyph_size,
                    render_points_as_spheres=True,
                    name=f"glyph-{k}",
                    lighting=False,
                )
                self._aspect_glyphs = pts
                self.actors["markers"].append(a)
            else:
                a = p.add_mesh(
                    pts,
                    color=MARKER_COLORS[k],
                    point_size=MARKER_PX[k] * scene.glyph_size,
                    render_points_as_spheres=True,
                    name=f"glyph-{k}",
                    lighting=False,
                )
                self.actors["markers"].append(a)
        if scene.gaps is not None and scene.gaps.n_points:
            self.actors["audit"].append(
                p.add_mesh(lifted(scene.gaps), color=GAP_COLOR, line_width=5, lighting=False, name="gaps")
            )
        self._path_arrows: list[tuple[np.ndarray, np.ndarray, str]] = []
        for j, ov in enumerate(scene.paths):
            self._add_path(pv, j, ov)
        if scene.trains is not None and scene.trains.n_points:
            self.set_trains(scene.trains)
        self._legend()
        self._title = p.add_text(scene.title, font_size=10, position="upper_left", name="title")
        self._info = None
        self.camera = V.frame(self._frame_points(), view, self.window_size)
        self.apply_camera(self.camera)

    def _add_path(self, pv, j: int, ov) -> None:  # noqa: ANN001
        """A path over the track: its line (wide, in its colour), glyphs at its start,
        end, reversals, waits and booked stops; arrowheads in :meth:`_overlays`."""
        p, e, base = self.plotter, self.exaggeration, self.base
        line = ov.line
        if len(line):
            pieces = [q[np.isfinite(q[:, 0])] for q in np.split(line, np.flatnonzero(np.isnan(line[:, 0])))]
            pieces = [q for q in pieces if len(q) >= 2]
            if pieces:
                pts = V.exaggerate(np.vstack(pieces), e, base) + [0.0, 0.0, 0.5]
                offs = np.concatenate([[0], np.cumsum([len(q) for q in pieces])]).astype(np.int64)
                mesh = pv.PolyData(pts, lines=_polyline_cells(offs))
                self.actors["paths"].append(
                    p.add_mesh(
                        mesh, color=ov.color, line_width=7, lighting=False, name=f"path-{j}", opacity=0.8
                    )
                )
        if len(ov.arrows):
            at = V.exaggerate(ov.arrows[:, 0], e, base)
            self._path_arrows.append((at, ov.arrows[:, 1], ov.color))
        for kind, color in PATH_POINT_COLORS.items():
            q = [pt for k, pt, _t in ov.points if k == kind]
            if not q:
                continue
            g = pv.PolyData(V.exaggerate(np.array(q), e, base))
            self.actors["paths"].append(
                p.add_mesh(
                    g,
                    color=color,
                    point_size=12 * self.scene.glyph_size,
                    render_points_as_spheres=True,
                    lighting=False,
                    name=f"path-{j}-{kind}",
                )
            )

    # -- camera and projection

    def _frame_points(self) -> np.ndarray:
        sc = self.scene
        if sc.focus is not None:
            return V.exaggerate(sc.focus, self.exaggeration, self.base)
        pts = [self.track_points] + [v for k, v in self.marker_points.items() if k != "finding"]
        pts = [q for q in pts if len(q)]
        return np.vstack(pts) if pts else np.zeros((1, 3))

    def apply_camera(self, cam: V.Camera) -> None:
        c = self.plotter.camera
        c.parallel_projection = cam.parallel
        c.position, c.focal_point, c.up = cam.position, cam.focal_point, cam.up
        if cam.parallel:
            c.parallel_scale = cam.parallel_scale
        c.view_angle = cam.view_angle
        # The clipping range follows the camera: a stale one cut north-south routes.
        self.plotter.renderer.reset_camera_clipping_range()
        self.camera = cam
        self._overlays()

    def current_camera(self) -> V.Camera:
        c = self.plotter.camera
        return V.Camera(
            tuple(c.position),
            tuple(c.focal_point),
            tuple(c.up),
            bool(c.parallel_projection),
            float(c.parallel_scale),
            float(c.view_angle),
        )

    def project(self, points: np.ndarray) -> np.ndarray:
        """Pixels (x from the left, y from the bottom) of already exaggerated points,
        through VTK's own camera matrix."""
        cam = self.plotter.camera
        w, h = self.window_size
        mat = cam.GetCompositeProjectionTransformMatrix(w / h, -1, 1)
        m = np.array([[mat.GetElement(i, j) for j in range(4)] for i in range(4)])
        q = np.c_[np.asarray(points, dtype=np.float64).reshape(-1, 3), np.ones(len(points))] @ m.T
        with np.errstate(divide="ignore", invalid="ignore"):
            ndc = q[:, :2] / q[:, 3:4]
        ndc[q[:, 3] <= 0] = np.nan
        return np.column_stack([(ndc[:, 0] + 1) * 0.5 * w, (ndc[:, 1] + 1) * 0.5 * h])

    # -- overlays

    def _legend(self) -> None:
        sc = self.scene
        entries = []
        if sc.color_by == "kind" and sc.track.n_points:
            present = set(np.unique(sc.track.cell_data["kind"]).tolist())
            entries += [[f"track: {KIND_NAMES[i]}", KIND_COLORS[i]] for i in range(3) if i in present]
        names = {k.kind: k.name for k in I.KINDS}
        aspects = sc.extra.get("signal_aspect")
        for k in MARKER_KINDS:
            if not len(sc.markers.get(k, ())):
                continue
            if k == "signal" and aspects is not None:
                # Every category the replay shows at any time, so that the legend stays put.
                shown = set(sc.extra.get("signal_aspect_used", np.unique(aspects).tolist()))
                entries += [
                    [ASPECT_NAMES[i], ASPECT_COLORS[i]] for i in range(len(ASPECT_NAMES)) if i in shown
                ]
            else:
                entries.append([names[k], MARKER_COLORS[k]])
        if "finding" in sc.markers and len(sc.markers["finding"]):
            sevs = {f.severity for f in sc.findings}
            entries += [[f"audit {s}", SEVERITY_COLORS[s]] for s in ("error", "warning", "info") if s in sevs]
        if sc.gaps is not None and sc.gaps.n_points:
            entries.append(["gap in a node", GAP_COLOR])
        for ov in sc.paths:
            entries.append([f"path: {ov.name}", ov.color])
        self._legend_box = None
        if not entries:
            return
        from vtkmodules.vtkRenderingCore import vtkTextActor

        w, h = self.window_size
        font, row = 12, 17
        width = 26 + 0.62 * font * max(len(t) for t, _c in entries)
        x0, top = w - width - 10, h - 10
        self._legend_box = ((x0 - 4) / w, (top - row * len(entries) - 4) / h, 1.0, 1.0)
        self._legend_actors: list = []
        from vtkmodules.vtkCommonCore import vtkPoints, vtkUnsignedCharArray
        from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData
        from vtkmodules.vtkRenderingCore import vtkActor2D, vtkPolyDataMapper2D

        pts, polys, colors = vtkPoints(), vtkCellArray(), vtkUnsignedCharArray()
        colors.SetNumberOfComponents(3)
        for j, (text, color) in enumerate(entries):
            y = top - row * (j + 1)
            self._text2d(vtkTextActor, text, x0 + 20, y, size=font, bg=True, layer=self._legend_actors)
            polys.InsertNextCell(4)
            for dx, dy in ((2, 2), (14, 2), (14, 14), (2, 14)):
                polys.InsertCellPoint(pts.InsertNextPoint(x0 + dx, y + dy - 1, 0))
            colors.InsertNextTuple3(*(int(255 * c) for c in _rgb(color)))
        pd = vtkPolyData()
        pd.SetPoints(pts)
        pd.SetPolys(polys)
        pd.GetCellData().SetScalars(colors)
        mapper = vtkPolyDataMapper2D()
        mapper.SetInputData(pd)
        actor = vtkActor2D()
        actor.SetMapper(mapper)
        self.plotter.renderer.add_actor(actor, reset_camera=False, pickable=False)
        self._legend_actors.append(actor)

    def _overlays(self) -> None:
        """Scale bar, north arrow and labels for the current camera (again after each
        interaction in a window)."""
        from vtkmodules.vtkCommonCore import vtkPoints
        from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData
        from vtkmodules.vtkRenderingCore import vtkActor2D, vtkPolyDataMapper2D, vtkTextActor

        r = self.plotter.renderer
        for a in self._overlay_actors:
            r.remove_actor(a, reset_camera=False, render=False)
        self._overlay_actors = []
        w, h = self.window_size
        cam = self.current_camera()
        mpp = cam.metres_per_pixel(h)
        segs: list[tuple[tuple[float, float], tuple[float, float]]] = []
        # scale bar: a round length near a fifth of the width, bottom left
        L = V.nice_length(mpp * w * 0.2)
        px = L / mpp if mpp > 0 else 0
        x0, y0 = 0.03 * w, 0.035 * h
        if px > 4:
            segs += [
                ((x0, y0), (x0 + px, y0)),
                ((x0, y0 - 4), (x0, y0 + 4)),
                ((x0 + px, y0 - 4), (x0 + px, y0 + 4)),
                ((x0 + px / 2, y0 - 2), (x0 + px / 2, y0 + 2)),
            ]
            text = f"{L / 1000:g} km" if L >= 1000 else f"{L:g} m"
            if not cam.parallel:
                text += " (at centre)"
            if self.exaggeration != 1.0:
                text += f"   heights x{self.exaggeration:.3g}"
            self._text2d(vtkTextActor, text, x0, y0 + 7)
        # north arrow: the screen direction of north at the focal point, bottom right
        f = np.asarray(cam.focal_point)
        ends = V.project(cam, np.array([f, f + [0.0, mpp * 40, 0.0]]), (w, h))
        d = ends[1] - ends[0]
        n = float(np.hypot(*d)) if np.isfinite(d).all() else 0.0
        d = d / n if n > 1e-6 else np.array([0.0, 1.0])
        c = np.array([w - 40.0, 50.0])
        tip, tail = c + d * 22, c - d * 22
        side = np.array([-d[1], d[0]])
        segs += [
            (tuple(tail), tuple(tip)),
            (tuple(tip), tuple(tip - d * 9 + side * 6)),
            (tuple(tip), tuple(tip - d * 9 - side * 6)),
        ]
        self._text2d(vtkTextActor, "N", *(tip + d * 6 - [5, 0]), size=14, bold=True)
        path_segs: list[tuple[tuple, tuple, str]] = []
        if self.visible["paths"]:
            for at, u, color in self._path_arrows:
                a0 = self.project(at)
                a1 = self.project(at + u * mpp * 10)
                for q0, q1 in zip(a0, a1):
                    dd = q1 - q0
                    nn = float(np.hypot(*dd)) if np.isfinite(dd).all() else 0.0
                    if nn < 1e-6 or not (0 <= q0[0] < w and 0 <= q0[1] < h):
                        continue
                    dd = dd / nn
                    sd = np.array([-dd[1], dd[0]])
                    tip_ = q0 + dd * 6
                    for wing in (tip_ - dd * 9 + sd * 6, tip_ - dd * 9 - sd * 6):
                        path_segs.append((tuple(tip_), tuple(wing), color))
        if path_segs:
            self._segments2d(
                [(a_, b_) for a_, b_, _c in path_segs], [c_ for _a, _b, c_ in path_segs], width=3
            )
        pts = vtkPoints()
        lines = vtkCellArray()
        for a_, b_ in segs:
            i = pts.InsertNextPoint(a_[0], a_[1], 0)
            j = pts.InsertNextPoint(b_[0], b_[1], 0)
            lines.InsertNextCell(2)
            lines.InsertCellPoint(i)
            lines.InsertCellPoint(j)
        pd = vtkPolyData()
        pd.SetPoints(pts)
        pd.SetLines(lines)
        mapper = vtkPolyDataMapper2D()
        mapper.SetInputData(pd)
        actor = vtkActor2D()
        actor.SetMapper(mapper)
        actor.GetProperty().SetColor(0, 0, 0)
        actor.GetProperty().SetLineWidth(2)
        r.add_actor(actor, reset_camera=False, pickable=False)
        self._overlay_actors.append(actor)
        self._place_labels()

    def _segments2d(self, segs, colors, *, width: float = 2) -> None:  # noqa: ANN001
        """Screen-space line segments, one colour each, in the overlay layer."""
        from vtkmodules.vtkCommonCore import vtkPoints, vtkUnsignedCharArray
        from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData
        from vtkmodules.vtkRenderingCore import vtkActor2D, vtkPolyDataMapper2D

        pts, lines, cols = vtkPoints(), vtkCellArray(), vtkUnsignedCharArray()
        cols.SetNumberOfComponents(3)
        for (a_, b_), c in zip(segs, colors):
            i = pts.InsertNextPoint(a_[0], a_[1], 0)
            j = pts.InsertNextPoint(b_[0], b_[1], 0)
            lines.InsertNextCell(2)
            lines.InsertCellPoint(i)
            lines.InsertCellPoint(j)
            cols.InsertNextTuple3(*(int(255 * v) for v in _rgb(c)))
        pd = vtkPolyData()
        pd.SetPoints(pts)
        pd.SetLines(lines)
        pd.GetCellData().SetScalars(cols)
        mapper = vtkPolyDataMapper2D()
        mapper.SetInputData(pd)
        actor = vtkActor2D()
        actor.SetMapper(mapper)
        actor.GetProperty().SetLineWidth(width)
        self.plotter.renderer.add_actor(actor, reset_camera=False, pickable=False)
        self._overlay_actors.append(actor)

    def _text2d(
        self,
        cls,
        text: str,
        x: float,
        y: float,
        *,
        size: int = 12,
        bold: bool = False,
        bg: bool = False,
        layer: list | None = None,
    ):
        t = cls()
        t.SetInput(text)
        t.SetDisplayPosition(int(round(x)), int(round(y)))
        tp = t.GetTextProperty()
        tp.SetFontSize(size)
        tp.SetColor(0, 0, 0)
        tp.SetBold(bold)
        tp.SetFontFamilyToArial()
        if bg:
            tp.SetBackgroundColor(1, 1, 1)
            tp.SetBackgroundOpacity(0.75)
        self.plotter.renderer.add_actor(t, reset_camera=False, pickable=False)
        (self._overlay_actors if layer is None else layer).append(t)
        return t

    def label_candidates(self) -> tuple[np.ndarray, list[str], list[int], list[str]]:
        """Anchors (exaggerated scene points), texts, priorities and kinds of every label."""
        P, T, R, K = [], [], [], []
        for k, m in self.scene.markers.items():
            if k not in LABEL_PRIORITY or not len(m):
                continue
            if k == "finding" and not self.visible["audit"]:
                continue
            if k != "finding" and not self.visible["markers"]:
                continue
            pts = self.marker_points[k]
            for q, t in zip(pts, m.labels):
                if t:
                    P.append(q)
                    T.append(t)
                    R.append(LABEL_PRIORITY[k])
                    K.append(k)
        if self.visible["paths"]:
            for ov in self.scene.paths:
                for _k, q, t in ov.points:
                    if t:
                        P.append(V.exaggerate(q, self.exaggeration, self.base)[0])
                        T.append(t)
                        R.append(LABEL_PRIORITY["path"])
                        K.append("path")
        return np.array(P, dtype=np.float64).reshape(-1, 3), T, R, K

    def placed_labels(self) -> list[tuple[str, str, float, float, float, float]]:
        """(kind, text, x0, y0, x1, y1) of each label drawn now, in pixels."""
        return list(getattr(self, "_placed", []))

    def _place_labels(self) -> None:
        from vtkmodules.vtkRenderingCore import vtkTextActor

        r = self.plotter.renderer
        for a in self._label_actors:
            r.remove_actor(a, reset_camera=False, render=False)
        self._label_actors = []
        self._placed = []
        if not self.visible["labels"]:
            return
        P, T, R, K = self.label_candidates()
        if not len(P):
            return
        w, h = self.window_size
        px = self.project(P)
        reserved: list[tuple[float, float, float, float]] = [
            (0.0, 0.0, w, 0.13 * h),
            (0.0, min(h * 0.93, h - 56.0), 0.6 * w, h),
        ]
        if self._legend_box:
            x0, y0, x1, y1 = self._legend_box
            reserved.append((x0 * w, y0 * h, x1 * w, y1 * h))
        if getattr(self, "_speed_bar", False):  # the trains' colour bar, right
            reserved.append((0.84 * w, 0.26 * h, w, 0.7 * h))
        font = 11
        for i, x, y in V.place_labels(
            px, T, R, (w, h), font_px=font, reserved=reserved, max_labels=max(10, int(w * h / 9000))
        ):
            bold = K[i] in ("platform", "finding")
            self._text2d(vtkTextActor, T[i], x, y, size=font, bold=bold, bg=True, layer=self._label_actors)
            self._placed.append((K[i], T[i], x, y, x + 0.62 * font * len(T[i]), y + 1.25 * font))

    # -- layers, trains, picking

    def toggle(self, layer: str, visible: bool | None = None) -> bool:
        """Show or hide a layer (see ``LAYERS``); returns whether it is now visible."""
        if layer not in LAYERS:
            raise TdbToolsError(f"no layer {layer!r} (layers: {', '.join(LAYERS)})")
        on = (not self.visible[layer]) if visible is None else bool(visible)
        self.visible[layer] = on
        for a in self.actors[layer]:
            a.SetVisibility(on)
        self._overlays()  # labels, and the paths' arrowheads
        return on

    def set_trains(
        self,
        mesh,
        scalars: np.ndarray | None = None,
        clim: tuple[float, float] | None = None,
        lift: float = 0.3,
    ):
        """Show car boxes (true heights: each box is raised with the exaggerated track,
        not stretched; ``lift``: the floor's height above the rail as :func:`train_boxes`
        made it); ``scalars`` per box colour them (e.g. speed)."""
        pts = np.asarray(mesh.points, dtype=np.float64).copy()
        if self.exaggeration != 1.0 and len(pts):
            # Each floor corner sits on the exaggerated rail under it (the box follows
            # the drawn slope, else its ends cut into or float over the track); the
            # body keeps its true height above the floor.
            boxes = pts.reshape(-1, 8, 3)
            floor = boxes[:, :4, 2].copy()
            rail = floor - lift
            new_floor = self.base + (rail - self.base) * self.exaggeration + lift
            boxes[:, :4, 2] = new_floor
            boxes[:, 4:, 2] += new_floor - floor
            pts = boxes.reshape(-1, 3)
        if getattr(self, "_trains", None) is None:
            m = mesh.copy(deep=True)
            m.points = pts
            if scalars is not None:
                self._speed_bar = True
                m.cell_data["speed_kmh"] = np.repeat(np.asarray(scalars, dtype=np.float64), 6)
                a = self.plotter.add_mesh(
                    m,
                    scalars="speed_kmh",
                    cmap="plasma",
                    clim=clim,
                    name="trains",
                    scalar_bar_args={
                        "title": "train speed (km/h)",
                        "vertical": True,
                        "position_x": 0.9,
                        "position_y": 0.3,
                        "width": 0.05,
                        "height": 0.35,
                        "fmt": "%.0f",
                        "n_labels": 4,
                        "title_font_size": 11,
                        "label_font_size": 10,
                    },
                )
            else:
                a = self.plotter.add_mesh(m, color="black", name="trains")
            self._trains = m
            self.actors["trains"] = [a]
        else:
            self._trains.points = pts
            if scalars is not None:
                self._trains.cell_data["speed_kmh"] = np.repeat(np.asarray(scalars, dtype=np.float64), 6)
        return pts

    def set_signal_aspects(self, codes: np.ndarray) -> None:
        """Recolour the signal glyphs (codes as ``scene.extra["signal_aspect"]``); the scene
        must have been built with aspects."""
        g = getattr(self, "_aspect_glyphs", None)
        if g is None:
            raise TdbToolsError("this view was built without signal aspects")
        g.point_data["aspect"] = np.asarray(codes, dtype=np.int64)
        g.Modified()

    def pick(self, x: float, y: float, radius: float = 8.0) -> dict | None:
        """What is drawn at pixel (x, y) (from the bottom left), within ``radius`` pixels:
        an audit finding, else an item or node marker, else the track (node, section,
        offset, grade, curvature); None if nothing is near."""
        best: tuple[float, str, int] | None = None
        kinds: tuple[str, ...] = (
            "finding",
            "platform",
            "signal",
            "speedpost",
            "milepost",
            "siding",
            "levelcr",
            "crossover",
            "soundregion",
            "carspawner",
            "junction",
            "end",
        )
        order = [
            k
            for k in kinds
            if k in self.marker_points and self.visible["audit" if k == "finding" else "markers"]
        ]
        for k in order:
            px = self.project(self.marker_points[k])
            d = np.hypot(px[:, 0] - x, px[:, 1] - y)
            d[~np.isfinite(d)] = np.inf
            j = int(np.argmin(d)) if len(d) else -1
            if j >= 0 and d[j] <= radius:
                best = (float(d[j]), k, j)
                break
        sc = self.scene
        if best is not None:
            _d, k, j = best
            m = sc.markers[k]
            i = int(m.ids[j])
            if k == "finding":
                f = sc.findings[i]
                return {
                    "kind": "finding",
                    "code": f.code,
                    "severity": f.severity,
                    "message": f.message,
                    "nodes": list(f.nodes),
                    "items": list(f.items),
                }
            if k in ("junction", "end"):
                return {"kind": k, "node": i}
            table = sc.road_items if k in I.ROAD_KINDS else sc.items
            return {"kind": k, **_item_info(table[i])}
        if not len(self.track_points) or not self.visible["track"]:
            return None
        px = self.project(self.track_points)
        d = np.hypot(px[:, 0] - x, px[:, 1] - y)
        d[~np.isfinite(d)] = np.inf
        j = int(np.argmin(d))
        if d[j] > radius:
            return None
        pd = sc.track.point_data
        out = {
            "kind": "track",
            "node": int(pd["node"][j]),
            "section": int(pd["section"][j]),
            "section_id": int(pd["section_id"][j]),
            "offset_m": round(float(pd["offset_m"][j]), 2),
            "grade_permille": round(float(pd["grade"][j]), 2),
            "curvature_per_km": round(float(pd["curvature_per_km"][j]), 3),
        }
        if "speed_kmh" in pd:
            out["speed_limit_kmh"] = round(float(pd["speed_kmh"][j]), 1)
        if "lat" in pd and np.isfinite(pd["lat"][j]):
            out["lat"] = round(float(pd["lat"][j]), 6)
            out["lon"] = round(float(pd["lon"][j]), 6)
        return out

    # -- output

    def screenshot(self) -> np.ndarray:
        self.plotter.render()
        return np.asarray(self.plotter.screenshot(return_img=True))

    def close(self) -> None:
        self.plotter.close()

    def click(self, x: float, y: float) -> dict | None:
        """What a click at pixel (x, y) shows: :meth:`pick`, written in the lower right
        corner of the window (and returned)."""
        from vtkmodules.vtkRenderingCore import vtkTextActor

        info = self.pick(x, y)
        text = "nothing here" if info is None else "\n".join(f"{k}: {v}" for k, v in info.items())
        self.info_text = text
        # Upper left, below the title and the help line, hanging down: the bottom right
        # holds the north arrow, the bottom the colour bar and the scale bar.
        r = self.plotter.renderer
        old = getattr(self, "_pick_actor", None)
        if old is not None:
            r.remove_actor(old, reset_camera=False, render=False)
        t = self._text2d(vtkTextActor, text, 10, self.window_size[1] - 52, size=11, bg=True, layer=[])
        t.GetTextProperty().SetVerticalJustificationToTop()
        self._pick_actor = t
        return info

    def key(self, key: str) -> bool | None:
        """A key press: 1–5 toggle a layer (``LAYER_KEYS``); returns the layer's new state."""
        layer = LAYER_KEYS.get(key)
        return None if layer is None else self.toggle(layer)

    def interact(self) -> None:
        """Open the window: click a track or marker for its data; keys 1–5 toggle layers."""
        p = self.plotter

        def on_click(*_a):
            self.click(*p.iren.get_event_position())
            p.render()

        def after(*_a):
            self.camera = self.current_camera()
            self._overlays()

        p.iren.add_observer("LeftButtonPressEvent", on_click)
        p.iren.add_observer("EndInteractionEvent", after)
        p.iren.add_observer("MouseWheelForwardEvent", after)
        p.iren.add_observer("MouseWheelBackwardEvent", after)
        for k in LAYER_KEYS:
            p.add_key_event(k, lambda k=k: (self.key(k), p.render()))
        from vtkmodules.vtkRenderingCore import vtkTextActor

        # The second line under the title (it covered the title at the upper edge).
        self._text2d(
            vtkTextActor,
            "click: what is this   keys: " + "  ".join(f"{k} {v}" for k, v in LAYER_KEYS.items()),
            10,
            self.window_size[1] - 44,
            size=10,
            layer=[],
        )
        p.show()


def _plotter(
    scene: Scene,
    window_size: tuple[int, int],
    off_screen: bool,
    *,
    labels: bool = True,
    view: str = "map",
    exaggerate: float | None = None,
) -> SceneView:
    return SceneView(
        scene, window_size, off_screen=off_screen, view=view, exaggerate=exaggerate, labels=labels
    )


def as_scene(scene: Scene | Route) -> Scene:
    """``scene``, or the default scene of a route (:func:`build_scene` with its
    defaults): every drawing function takes either."""
    if isinstance(scene, Route):
        return build_scene(scene)
    if not isinstance(scene, Scene):
        raise TdbToolsError(f"expected a Route or a Scene, not {type(scene).__name__}")
    return scene


def render_png(
    scene: Scene | Route,
    out: str | Path,
    *,
    window_size: tuple[int, int] = (1280, 960),
    labels: bool = True,
    view: str = "map",
    exaggerate: float | None = None,
) -> Path:
    """Render the scene (or a route's default scene) offscreen to a PNG (atomically)."""
    scene = as_scene(scene)
    check_renderer()
    out = Path(out)
    sv = SceneView(scene, window_size, view=view, exaggerate=exaggerate, labels=labels)
    try:
        with atomic_output(out) as tmp:
            sv.plotter.screenshot(str(tmp), return_img=False)
    finally:
        sv.close()
    return out


def screenshot(
    scene: Scene | Route,
    *,
    window_size: tuple[int, int] = (640, 480),
    labels: bool = True,
    view: str = "map",
    exaggerate: float | None = None,
) -> np.ndarray:
    """The rendered scene (or a route's default scene) as an RGB array (height, width, 3)."""
    scene = as_scene(scene)
    check_renderer()
    sv = SceneView(scene, window_size, view=view, exaggerate=exaggerate, labels=labels)
    try:
        return sv.screenshot()
    finally:
        sv.close()


def show(
    scene: Scene | Route,
    *,
    window_size: tuple[int, int] = (1280, 960),
    view: str = "map",
    exaggerate: float | None = None,
) -> None:
    """An interactive window (needs a display): picking and layer keys, see
    :meth:`SceneView.interact`."""
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        raise TdbToolsError("no display for an interactive window: use --out FILE.png|.html|.mp4|.gif")
    scene = as_scene(scene)
    SceneView(scene, window_size, off_screen=False, view=view, exaggerate=exaggerate).interact()
