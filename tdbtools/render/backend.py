"""Whether 3-D pictures can be drawn here: pyvista imported on demand (with VTK's X-server
chatter silenced), and a working offscreen OpenGL checked once per process in a child
process, so that a broken GL driver crashes the child, not the caller (docs/render.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .._fs import write_bytes_atomic
from ..errors import TdbToolsError

NO_RENDERER = (
    "no renderer: 3-D pictures need a working OpenGL. On Debian/Ubuntu: "
    "apt-get install libegl1 libgl1 libgl1-mesa-dri (offscreen, no display needed)"
)
NO_PYVISTA = "3-D pictures need pyvista: pip install 'tdbtools[render]' (pyvista, imageio, imageio-ffmpeg)"

__all__ = ["NO_PYVISTA", "NO_RENDERER", "check_renderer"]


def _quiet_vtk() -> None:
    """Headless VTK first tries X and logs "bad X server connection" before it falls back
    to EGL/OSMesa: only errors go to stderr."""
    try:
        from vtkmodules.vtkCommonCore import vtkLogger
    except ImportError:  # pragma: no cover - old VTK
        return
    vtkLogger.SetStderrVerbosity(vtkLogger.VERBOSITY_ERROR)


def _pv():
    try:
        import pyvista
    except ImportError:
        raise TdbToolsError(NO_PYVISTA) from None
    _quiet_vtk()
    return pyvista


# -- renderer detection ----------------------------------------------------------------

_PROBE = """
from vtkmodules.vtkCommonCore import vtkLogger
vtkLogger.SetStderrVerbosity(vtkLogger.VERBOSITY_ERROR)
import pyvista as pv
p = pv.Plotter(off_screen=True, window_size=(32, 32))
p.add_mesh(pv.Cube())
img = p.screenshot(return_img=True)
p.close()
assert img is not None and img.shape[:2] == (32, 32), img
print("ok", img.shape)
"""
_probe_cache: tuple[bool, str] | None = None


def _probe_marker() -> Path | None:
    """Where a successful probe is remembered: keyed by the interpreter, VTK, the probe
    and the display/GL settings, so that any change probes again."""
    import hashlib

    try:
        from vtkmodules.vtkCommonCore import vtkVersion

        from ..formats.cache import cache_dir
    except ImportError:  # pragma: no cover - no VTK: the probe reports it
        return None
    env = [
        os.environ.get(k, "")
        for k in (
            "DISPLAY",
            "WAYLAND_DISPLAY",
            "VTK_DEFAULT_OPENGL_WINDOW",
            "PYVISTA_OFF_SCREEN",
            "LIBGL_ALWAYS_SOFTWARE",
            "GALLIUM_DRIVER",
        )
    ]
    key = "|".join([sys.executable, vtkVersion.GetVTKVersion(), _PROBE, *env])
    return cache_dir() / f"renderer-ok-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def _probe(timeout: float = 60.0) -> tuple[bool, str]:
    """Render a 32×32 cube offscreen in a child process (a broken GL may crash it, not
    us). Returns (works, detail). A success is remembered on disk (the child costs
    seconds of start-up on every render otherwise); a failure is not."""
    marker = _probe_marker()
    if marker is not None and marker.is_file():
        return True, f"remembered in {marker}"
    try:
        r = subprocess.run(
            [sys.executable, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PYVISTA_OFF_SCREEN": "true"},
        )
    except subprocess.TimeoutExpired:
        return False, f"a test render took more than {timeout:.0f} s"
    except OSError as exc:
        return False, str(exc)
    if r.returncode == 0 and r.stdout.startswith("ok"):
        if marker is not None:
            try:
                marker.parent.mkdir(parents=True, exist_ok=True)
                write_bytes_atomic(marker, (r.stdout.strip() + "\n").encode("utf-8"))
            except OSError:
                pass  # a read-only cache only costs the probe next time
        return True, r.stdout.strip()
    tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
    how = f"exit status {r.returncode}" if r.returncode >= 0 else f"signal {-r.returncode}"
    return False, f"a test render failed ({how}): " + " | ".join(tail)


def check_renderer(*, timeout: float = 60.0) -> None:
    """Raise :class:`TdbToolsError` unless pyvista is installed and an offscreen render
    works (checked once per process, in a subprocess)."""
    global _probe_cache
    _pv()
    if _probe_cache is None:
        _probe_cache = _probe(timeout)
    ok, detail = _probe_cache
    if not ok:
        raise TdbToolsError(f"{NO_RENDERER}\n({detail})")
