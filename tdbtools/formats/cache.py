"""On-disk cache of loaded routes.

A route is pickled under the user's cache folder (``$TDBTOOLS_CACHE_DIR``, else
``$XDG_CACHE_HOME/tdbtools``, else ``~/.cache/tdbtools``), keyed by its folder and
the reading mode. It is used only while every source file has the size, mtime, ctime
and inode it had when the entry was written (as Python's .pyc and ccache do), no
candidate file that was absent has appeared, the tdbtools version is the same, and
the payload's CRC matches. Anything else -- stale, truncated, corrupt, another
version -- is ignored and rebuilt; the cache never raises.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import zlib
from pathlib import Path

from .. import __version__
from ..stf.parser import gc_paused

#: Bump when the pickled model changes shape.
CACHE_FORMAT = 1
_MAGIC = b"TDBTOOLS-ROUTE-CACHE\n"


def cache_dir() -> Path:
    env = os.environ.get("TDBTOOLS_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "tdbtools"


def _stamp(path: str | Path) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class RouteCache:
    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or cache_dir()

    def _entry(self, files, strict: bool) -> Path:
        key = f"{files.folder}|{'strict' if strict else 'lenient'}|{__version__}|{CACHE_FORMAT}"
        digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
        return self.folder / f"{files.folder.name}-{digest}.pickle"

    def get(self, files, strict: bool):
        path = self._entry(files, strict)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        try:
            if not data.startswith(_MAGIC):
                return None
            head_len = int.from_bytes(data[len(_MAGIC):len(_MAGIC) + 8], "little")
            head_end = len(_MAGIC) + 8 + head_len
            header = pickle.loads(data[len(_MAGIC) + 8:head_end])
            if header["version"] != (__version__, CACHE_FORMAT):
                return None
            for p, stamp in header["stamps"]:
                if _stamp(p) != stamp:
                    return None
            payload = memoryview(data)[head_end:]
            if zlib.crc32(payload) != header["crc"]:
                return None
            # no reference cycles in a route: the collector would only rescan the millions
            # of objects being made (a warm load takes ~3x as long with it running)
            with gc_paused():
                return pickle.loads(payload)
        except Exception:  # noqa: BLE001 - any damage means "not cached"
            return None

    def put(self, files, strict: bool, route) -> None:
        stamps = [(p, _stamp(p)) for p in route.sources]
        stamps += [(str(p), None) for p in files.absent]
        stamps += [(str(files.folder), _stamp(files.folder))]
        payload = pickle.dumps(route, protocol=pickle.HIGHEST_PROTOCOL)
        header = pickle.dumps({"version": (__version__, CACHE_FORMAT), "stamps": stamps,
                               "crc": zlib.crc32(payload)}, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".pickle")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(_MAGIC)
                    fh.write(len(header).to_bytes(8, "little"))
                    fh.write(header)
                    fh.write(payload)
                os.replace(tmp, self._entry(files, strict))
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            pass  # a cache that cannot be written only costs time

    def clear(self) -> int:
        n = 0
        if self.folder.is_dir():
            for p in self.folder.glob("*.pickle"):
                p.unlink(missing_ok=True)
                n += 1
        return n
