"""On-disk cache of loaded routes, in a format that cannot run code.

An entry lives under the user's cache folder (``$TDBTOOLS_CACHE_DIR``, else the
platform's own from platformdirs: ``$XDG_CACHE_HOME/tdbtools`` or ``~/.cache/tdbtools``
on Linux, ``~/Library/Caches/tdbtools`` on macOS, ``%LOCALAPPDATA%/tdbtools/Cache`` on
Windows), keyed by the route folder
and the reading mode. It holds JSON for the records (frozen dataclasses of the
modules in :data:`~tdbtools.formats.cache_records._RECORD_MODULES` only, named by class) and the raw bytes of the
numpy columns (plain numeric dtypes, read with ``np.frombuffer`` from the memory-mapped
entry; big record tables are made on first use, after numpy checks of every column at
load): nothing in it is ever unpickled or evaluated, so whoever wrote it, loading it can
at worst give a wrong route -- which the ownership rules below prevent (docs/security.md §1).

An entry is used only if: the folder is not writable by other users (or is sticky),
the entry is a regular file owned by the user and writable by no one else, every
source file has the size, mtime, ctime and inode it had when the entry was written,
no candidate file that was absent has appeared, the tdbtools version and the format
are the same, and the CRC matches. Anything else is ignored (and rebuilt when the
folder is safe); the cache never raises.

:class:`RecordCache` keeps other records made from a route folder (the signals' sigcfg
and world objects) the same way; :func:`conforms` checks a decoded record's field types.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import stat
import tempfile
import zlib
from itertools import chain as _chain
from pathlib import Path

from .. import __version__
from .._fs import clean_stale_temps
from ..stf.parser import gc_paused
from .cache_decode import LAZY_ROWS, _arrays, _Decoder
from .cache_encode import _blob_parts, _encode
from .cache_records import _registry, conforms

__all__ = ["CACHE_FORMAT", "LAZY_ROWS", "RecordCache", "RouteCache", "cache_dir", "conforms"]

#: Bump when the stored model changes shape.
CACHE_FORMAT = 3
_MAGIC = b"TDBTOOLS-ROUTE-CACHE-JSON\n"
_SUFFIX = ".route"
#: A temporary entry older than this was left by a killed run (writing one takes well
#: under a second) and is removed when the cache is next written.
STALE_TEMP_SECONDS = 60.0


def cache_dir() -> Path:
    """``$TDBTOOLS_CACHE_DIR``, else the user cache folder the OS expects (platformdirs;
    on Linux it honours ``$XDG_CACHE_HOME``)."""
    env = os.environ.get("TDBTOOLS_CACHE_DIR")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("tdbtools", appauthor=False))


#: Files up to this size are hashed whole in their stamp; larger ones by their first and
#: last :data:`STAMP_EDGE_BYTES` (with the size and mtime, which any edit changes).
STAMP_HASH_BYTES = 4 << 20
STAMP_EDGE_BYTES = 64 << 10


def _stamp(path: str | Path) -> list | None:
    """What says a source file is unchanged: its size, its mtime (ns) and a CRC-32 of its
    content (whole up to :data:`STAMP_HASH_BYTES`, else its two ends). Not the inode nor
    the ctime: a hard-linked copy of an install (``cp -al``, ``rsync --link-dest``) or a
    ``chmod`` keeps the content, and must keep the cache warm (docs/security.md §1)."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):  # a folder: its entries (a new file) change its mtime
            return [st.st_size, st.st_mtime_ns]
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if st.st_size <= STAMP_HASH_BYTES:
                crc = zlib.crc32(fh.read(STAMP_HASH_BYTES + 1))
            else:
                crc = zlib.crc32(fh.read(STAMP_EDGE_BYTES))
                fh.seek(-STAMP_EDGE_BYTES, os.SEEK_END)
                crc = zlib.crc32(fh.read(STAMP_EDGE_BYTES), crc)
    except (OSError, ValueError):
        return None
    return [st.st_size, st.st_mtime_ns, crc]


# -- the store --------------------------------------------------------------------------


def _folder_safe(folder: Path) -> bool:
    """False if users other than the owner may plant or swap entries in ``folder``:
    writable by group or others without the sticky bit (docs/security.md §1)."""
    try:
        st = folder.stat()
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        return False
    if hasattr(os, "getuid") and st.st_uid not in (os.getuid(), 0) and not st.st_mode & stat.S_ISVTX:
        return False
    return True


def _read_own_file(path: Path, mapped: bool = False) -> bytes | mmap.mmap | None:
    """The bytes of ``path`` if it is a regular file (not a link) owned by this user
    and writable by no one else; else None. ``mapped``: the file memory-mapped (read
    only) instead of read, so that numpy columns can stay in the page cache."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return None
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return None
        if mapped and st.st_size > 0:
            # The mapping outlives the descriptor. Entries are replaced (os.replace), never
            # rewritten in place, so a mapped entry does not change under the reader.
            return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    except OSError:
        return None
    finally:
        os.close(fd)


class RouteCache:
    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or cache_dir()

    def _entry(self, files, strict: bool) -> Path:
        # One entry per route whatever ``strict`` says: load_route keeps the lenient model
        # with its findings and decides strictness from them (docs/security.md §1).
        key = f"{files.folder}|one|{__version__}|{CACHE_FORMAT}"
        digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
        return self.folder / f"{files.folder.name}-{digest}{_SUFFIX}"

    #: Map the entry and make big record tables on first use (route entries); a
    #: RecordCache entry is small and read whole.
    lazy = True

    def get(self, files, strict: bool):
        if not _folder_safe(self.folder):
            return None
        data = _read_own_file(self._entry(files, strict), mapped=self.lazy)
        if data is None:
            return None
        try:
            # no reference cycles in a route: the collector would only rescan the many
            # objects being made
            with gc_paused():
                return self._decode(data)
        except Exception:  # noqa: BLE001 - any damage means "not cached"
            return None

    def _decode(self, data: bytes | mmap.mmap):
        view = memoryview(data)
        if view[: len(_MAGIC)] != _MAGIC:
            return None
        pos = len(_MAGIC)
        head_len = int.from_bytes(view[pos : pos + 8], "little")
        crc = int.from_bytes(view[pos + 8 : pos + 12], "little")
        head_end = pos + 12 + head_len
        if head_end > len(data):
            return None
        header = json.loads(bytes(view[pos + 12 : head_end]))
        if header["version"] != [__version__, CACHE_FORMAT]:
            return None
        for p, st in header["stamps"]:
            if _stamp(p) != st:
                return None
        if zlib.crc32(view[head_end:]) != crc:
            return None
        rec_len = header["records"]
        blob_start = head_end + rec_len + (-(head_end + rec_len) % 8)
        arrays = _arrays(header["arrays"], view[blob_start:])
        _registry()
        # The caller checks that this is a Route (importing route.py here would be a cycle).
        return _Decoder(arrays, self.lazy).build(json.loads(bytes(view[head_end : head_end + rec_len])))

    def put(self, files, strict: bool, route) -> None:
        try:
            records, table, arrays = _encode(route)
        except (TypeError, ValueError, RecursionError):
            return  # a model the format cannot hold is simply not cached
        stamps = [[p, _stamp(p)] for p in route.sources]
        stamps += [[str(p), None] for p in files.absent]
        stamps += [[str(files.folder), _stamp(files.folder)]]
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not _folder_safe(self.folder):
                return
            clean_stale_temps(self.folder, ".tmp-*" + _SUFFIX, STALE_TEMP_SECONDS)
            header = json.dumps(
                {
                    "version": [__version__, CACHE_FORMAT],
                    "stamps": stamps,
                    "records": len(records),
                    "arrays": table,
                },
                separators=(",", ":"),
            ).encode("utf-8")
            head_end = len(_MAGIC) + 12 + len(header)
            pad = b"\0" * (-(head_end + len(records)) % 8)  # the blob starts 8-aligned
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=_SUFFIX)
            try:
                with os.fdopen(fd, "wb") as fh:
                    # the CRC (of everything after the header) is known at the end
                    fh.write(_MAGIC + len(header).to_bytes(8, "little") + bytes(4))
                    fh.write(header)
                    crc = 0
                    for part in _chain((records, pad), _blob_parts(table, arrays)):
                        crc = zlib.crc32(part, crc)
                        fh.write(part)
                    fh.seek(len(_MAGIC) + 8)
                    fh.write(crc.to_bytes(4, "little"))
                os.replace(tmp, self._entry(files, strict))
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except (OSError, ValueError):
            pass  # a cache that cannot be written only costs time

    def clear(self) -> int:
        n = 0
        if self.folder.is_dir():
            # *.pickle: entries of the old, unsafe format (never read any more).
            for pattern in ("*" + _SUFFIX, "*.pickle", ".tmp-*"):
                for p in self.folder.glob(pattern):
                    try:
                        p.unlink()
                        n += 1
                    except OSError:
                        continue
        return n


# -- other records of a route folder ----------------------------------------------------

#: Entries of a :class:`RecordCache` larger than this are neither read nor kept.
MAX_RECORD_BYTES = 64 << 20


class RecordCache(RouteCache):
    """Entries for records other than a route, derived from a route folder (the signals'
    sigcfg and world objects: ``kind`` "signals"), in the same format under the same
    checks, named apart by ``kind`` and bounded to :data:`MAX_RECORD_BYTES`. The record
    needs a ``sources`` field; the caller checks the class of what :meth:`get` gives
    (and :func:`conforms`)."""

    lazy = False

    def __init__(self, kind: str, folder: Path | None = None) -> None:
        super().__init__(folder)
        self.kind = kind

    def _entry(self, files, strict: bool) -> Path:
        key = f"{files.folder}|{self.kind}|{'strict' if strict else 'lenient'}|{__version__}|{CACHE_FORMAT}"
        digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
        return self.folder / f"{files.folder.name}-{self.kind}-{digest}{_SUFFIX}"

    def _small(self, files, strict: bool) -> bool:
        try:
            return os.lstat(self._entry(files, strict)).st_size <= MAX_RECORD_BYTES
        except OSError:
            return False

    def get(self, files, strict: bool):
        return super().get(files, strict) if self._small(files, strict) else None

    def put(self, files, strict: bool, route) -> None:
        super().put(files, strict, route)
        entry = self._entry(files, strict)
        try:
            if os.lstat(entry).st_size > MAX_RECORD_BYTES:
                entry.unlink()
        except OSError:
            pass
