"""Pictures: matplotlib plots, and pyvista 3-D scenes (heavy imports stay inside functions).

What belongs here: drawing routes, profiles and replays (plots, 3-D scenes,
animations); the data drawn comes from :mod:`tdbtools.track` and
:mod:`tdbtools.physics`. Importing this package imports neither matplotlib nor pyvista.
"""

from .animate import TrainPlacer, load_replay, render_animation
from .html import write_html
from .plots import plot_profile, plot_speed_distance, pyplot, save_figure
from .scene import Scene, build_scene, resolve_focus
from .sceneview import SceneView, as_scene, render_png, screenshot, show

__all__ = [
    "Scene",
    "SceneView",
    "TrainPlacer",
    "as_scene",
    "screenshot",
    "build_scene",
    "load_replay",
    "plot_profile",
    "plot_speed_distance",
    "pyplot",
    "render_animation",
    "render_png",
    "resolve_focus",
    "save_figure",
    "show",
    "write_html",
]
