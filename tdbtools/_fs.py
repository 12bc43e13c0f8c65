"""File-system helpers shared by every layer: case-insensitive look-ups, atomic writes
that follow the umask, the one overwrite rule, and cleaning of stale temporary files.

The rules are described in ``docs/security.md`` (outputs).
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from .errors import TdbToolsError

__all__ = [
    "OutputExistsError",
    "check_output_folder",
    "check_target",
    "clean_stale_temps",
    "find_install_root",
    "is_file",
    "install_above",
    "is_install_root",
    "new_file_mode",
    "resolve_case_insensitive",
    "safe_basename",
    "write_bytes_atomic",
    "write_text_atomic",
]

#: A temporary file older than this is left over from a killed run (a live writer
#: finishes far sooner) and is removed by the next write into the same folder.
STALE_TEMP_SECONDS = 600.0


class OutputExistsError(TdbToolsError, FileExistsError):
    """An output file exists and ``overwrite`` was not given (or the target is unusable)."""


# -- look-ups ---------------------------------------------------------------------------


def resolve_case_insensitive(path: Path) -> Path:
    """``path`` itself if it exists, else the existing path whose components match it
    ignoring case (MSTS content comes from case-insensitive Windows file systems)."""
    try:
        return _resolve_case_insensitive(path)
    except (OSError, ValueError):  # a name too long for the file system, a NUL, ...
        return path


def is_file(path: Path) -> bool:
    """``path.is_file()``, False where the file system refuses the name (too long, ...)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _resolve_case_insensitive(path: Path) -> Path:
    if path.exists():
        return path
    parts = path.parts
    cur = Path(parts[0]) if path.is_absolute() else Path(".")
    rest = parts[1:] if path.is_absolute() else parts
    for part in rest:
        nxt = cur / part
        if part in (".", "..") or nxt.exists():
            cur = nxt
            continue
        try:
            low = part.lower()
            match = next((c for c in cur.iterdir() if c.name.lower() == low), None)
        except OSError:
            match = None
        if match is None:
            return path
        cur = match
    return cur


def is_install_root(folder: Path) -> bool:
    """True if ``folder`` holds both ``ROUTES`` and ``GLOBAL`` folders (any case)."""
    try:
        # Names first: a stat per entry of a big folder (/tmp) would dominate lookups.
        found = {c.name.lower(): c for c in folder.iterdir() if c.name.lower() in ("routes", "global")}
        return len(found) == 2 and all(c.is_dir() for c in found.values())
    except OSError:
        return False


def install_above(path: Path) -> Path | None:
    """The MSTS install above ``path``: the nearest folder holding both ``ROUTES`` and
    ``GLOBAL`` (any case), or None when ``path`` is not inside an install."""
    for parent in path.parents:
        if is_install_root(parent):
            return parent.resolve()
    return None


def find_install_root(path: Path) -> Path:
    """The folder a file's includes must stay in (docs/security.md §3): the install
    above ``path`` (:func:`install_above`), else the file's own folder."""
    root = install_above(path)
    return root if root is not None else path.parent.resolve()


# -- names ------------------------------------------------------------------------------

_WINDOWS_RESERVED = re.compile(r"^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$", re.I)
_UNSAFE_CHARS = re.compile(r'[\x00-\x1f<>:"/\\|?*\x7f]')
MAX_NAME_CHARS = 120


def safe_basename(name: str, default: str = "route") -> str:
    """``name`` reduced to one harmless file-name component: no separators, no ``..``,
    no drive or absolute prefix, no control characters, no Windows reserved device
    name, at most :data:`MAX_NAME_CHARS` characters; ``default`` if nothing is left."""
    base = re.split(r"[/\\]", str(name))[-1]
    base = _UNSAFE_CHARS.sub("_", base).strip(" .")
    if _WINDOWS_RESERVED.match(base):
        base = "_" + base
    base = base[:MAX_NAME_CHARS].strip(" .")
    return base or default


# -- writing ----------------------------------------------------------------------------


def _umask() -> int:
    # Reading the mask from /proc does not change it (os.umask would, briefly, for
    # every thread of the process).
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The mode ``open()`` would give a new file: 0666 less the umask."""
    return 0o666 & ~_umask()


def check_target(path: str | Path, overwrite: bool, error: type[TdbToolsError] = OutputExistsError) -> Path:
    """The one overwrite rule: refuse an existing file unless ``overwrite``; refuse a
    folder in its place and a missing parent folder. Returns ``path`` as a Path."""
    p = Path(path)
    if p.is_dir():
        raise error(f"{str(p)!r} is a folder, not a file")
    if (p.exists() or p.is_symlink()) and not overwrite:
        raise error(f"{str(p)!r} exists: not overwritten (use --overwrite / overwrite=True to replace it)")
    if not p.parent.is_dir():
        raise error(f"folder {str(p.parent)!r} does not exist")
    return p


def check_output_folder(
    folder: str | Path, overwrite: bool, error: type[TdbToolsError] = OutputExistsError
) -> Path:
    """The rule for commands that write a folder of files (``replay --out``): a new or
    empty folder is used; a folder that holds anything is refused unless ``overwrite``,
    and then only the files of the same names are replaced (docs/security.md §5)."""
    p = Path(folder)
    if p.exists() and not p.is_dir():
        raise error(f"{str(p)!r} exists and is not a folder")
    if p.is_dir() and not overwrite:
        try:
            used = any(True for _ in p.iterdir())
        except OSError as exc:
            raise error(f"cannot read folder {str(p)!r}: {exc.strerror or exc}") from None
        if used:
            raise error(
                f"output folder {str(p)!r} is not empty: not overwritten (use --overwrite to "
                "replace the files of the same names, or give a new folder)"
            )
    return p


def clean_stale_temps(folder: Path, pattern: str, max_age: float = STALE_TEMP_SECONDS) -> int:
    """Remove this user's files matching ``pattern`` in ``folder`` that are older than
    ``max_age`` seconds (left by a run that was killed). Returns how many."""
    n = 0
    now = time.time()
    uid = os.getuid() if hasattr(os, "getuid") else None
    try:
        candidates = list(folder.glob(pattern))
    except OSError:
        return 0
    for p in candidates:
        try:
            st = p.lstat()
            if uid is not None and st.st_uid != uid:
                continue
            if now - st.st_mtime < max_age:
                continue
            p.unlink()
            n += 1
        except OSError:
            continue
    return n


def write_bytes_atomic(path: str | Path, data: bytes | Iterable[bytes], *, mode: int | None = None) -> None:
    """Write ``data`` (bytes, or chunks of them: an error while making them leaves the
    target as it was) to ``path`` via a temporary file in the same folder and an atomic
    rename: the target is either the old file or the complete new one, never half.

    A new file gets ``mode`` (default 0666 less the umask); an existing file keeps its
    mode. Stale temporary files of the same target from a killed run are removed.
    """
    target = Path(path)
    prefix = f".{target.name}."
    clean_stale_temps(target.parent, f"{glob_escape(prefix)}*.tmp")
    try:
        old_mode = target.stat().st_mode & 0o7777
    except (OSError, ValueError):
        old_mode = None
    want = old_mode if old_mode is not None else (mode if mode is not None else new_file_mode())
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=prefix, suffix=".tmp")
    except OSError as exc:  # name the file asked for, not the temporary one
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, want)
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, (bytes, bytearray, memoryview)):
                fh.write(data)
            else:
                for chunk in data:
                    fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(
    path: str | Path, text: str, *, encoding: str = "utf-16", newline: str = "\r\n"
) -> None:
    """:func:`write_bytes_atomic` of ``text`` with ``newline`` line ends; ``utf-16``
    means UTF-16LE with a BOM, as MSTS writes."""
    data = text.replace("\r\n", "\n").replace("\n", newline)
    if encoding.lower() in ("utf-16", "utf-16-le", "utf16"):
        raw = b"\xff\xfe" + data.encode("utf-16-le")
    else:
        raw = data.encode(encoding)
    write_bytes_atomic(path, raw)


def glob_escape(name: str) -> str:
    """``name`` with glob wildcards made literal."""
    return re.sub(r"([*?\[])", r"[\1]", name)
