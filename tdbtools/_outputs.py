"""Folders of output files that belong to one run (docs/security.md §5): one run at a time
(a lock file), a crashed run's leftovers recognised, a manifest written last, one file name
per train whatever the names hold, and CSV text cells a spreadsheet will not run.

The writers stay as they are; a command claims its folder before the work and finishes it::

    run = claim_output_folder(out, overwrite)     # refused: in use, or not empty
    files = result.write(out)
    run.finish(files)                             # manifest.json last, the lock released
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from ._fs import OutputExistsError, check_output_folder, write_bytes_atomic
from .errors import TdbToolsError

__all__ = [
    "LOCK_NAME",
    "MANIFEST_NAME",
    "OutputRun",
    "claim_output_folder",
    "spreadsheet_text",
    "unique_stems",
]

LOCK_NAME = ".tdbtools-run.lock"
MANIFEST_NAME = "manifest.json"

#: First characters a spreadsheet reads as a formula (OWASP, "CSV Injection"): = + - @, tab
#: and carriage return; the full-width forms some spreadsheets also accept.
FORMULA_START = frozenset("=+-@\t\r\uff1d\uff0b\uff0d\uff20")


def spreadsheet_text(cell: str) -> str:
    """A text cell made inert for spreadsheets: a cell that starts like a formula gets a
    leading apostrophe (OWASP's advice; the CSV writer then quotes it as needed). Only text
    from files goes through this, never numbers: ``-5`` stays a number."""
    return "'" + cell if cell and cell[0] in FORMULA_START else cell


def _safe_stem(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def unique_stems(names: Iterable[str], suffixes: Iterable[str] = ("", "_cars", "_speed")) -> dict[str, str]:
    """One file stem per name: the name made safe (letters, digits, ``-_.``; others become
    ``_``) and, where two names would share a file (also ignoring case, as Windows and macOS
    do, or through a ``suffixes`` variant such as ``A_cars`` against ``A`` + ``_cars``),
    the safe name plus 8 hex digits of a hash of the full name. Stems of names that collide
    with nothing are the plain safe name, so folders without such names do not change."""
    names = list(dict.fromkeys(names))
    sfx = list(suffixes)
    stems = {n: _safe_stem(n) for n in names}
    for _round in range(4):
        owners: dict[str, set[str]] = {}
        for n, st in stems.items():
            for s in sfx:
                owners.setdefault((st + s).casefold(), set()).add(n)
        clash = {n for group in owners.values() if len(group) > 1 for n in group}
        if not clash:
            return stems
        for n in clash:
            digest = hashlib.sha256(f"{_round}:{n}".encode("utf-8", "surrogatepass")).hexdigest()[:8]
            stems[n] = f"{_safe_stem(n)}-{digest}"
    # Four rounds of clashing hashes: number what is left (cannot happen in practice).
    return {n: f"{st}-{k}" for k, (n, st) in enumerate(stems.items())}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


class OutputRun:
    """A claimed output folder: the lock file is held until :meth:`finish` or :meth:`release`."""

    def __init__(self, folder: Path, lock: Path, created: bool = False) -> None:
        self.folder, self.lock = folder, lock
        self.created = created  # the folder was made for this run
        self.finished = False

    def finish(self, files: Iterable[str | Path]) -> Path:
        """Write ``manifest.json`` (every file with its size and SHA-256; the last file
        written, so a folder with a manifest holds a complete run) and release the lock."""
        entries = []
        for f in files:
            p = Path(f)
            try:
                data = p.read_bytes()
            except OSError:
                continue
            try:
                name = str(p.resolve().relative_to(self.folder.resolve()))
            except ValueError:
                name = str(p)
            entries.append({"file": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
        from . import __version__

        manifest = {"tdbtools": __version__, "complete": True, "files": entries}
        out = self.folder / MANIFEST_NAME
        write_bytes_atomic(out, (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode())
        self.finished = True
        self.release()
        return out

    def release(self) -> None:
        """Remove the lock (a run that failed leaves no manifest: its folder is incomplete),
        and the folder itself when this run made it and wrote nothing (a refused run leaves
        nothing behind)."""
        try:
            self.lock.unlink()
        except FileNotFoundError:
            pass
        if self.created and not self.finished:
            try:
                self.folder.rmdir()  # only if empty
            except OSError:
                pass


def _read_lock(lock: Path) -> dict:
    try:
        fd = os.open(lock, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read(4096)
    try:
        info = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {}
    return info if isinstance(info, dict) else {}


def _leftovers(folder: Path, info: Mapping) -> None:
    """Remove what a crashed run of this user left: its temporary files, the files it wrote
    after it started, and its lock. Files older than the run are not its own and stay."""
    started = info.get("started")
    uid = os.getuid() if hasattr(os, "getuid") else None
    for p in folder.iterdir():
        try:
            st = p.lstat()
        except OSError:
            continue
        if not p.is_file() or p.is_symlink() or (uid is not None and st.st_uid != uid):
            continue
        temp = p.name.startswith(".") and ".tmp" in p.name
        mine = isinstance(started, (int, float)) and st.st_mtime >= float(started) - 1.0
        if temp or mine or p.name == LOCK_NAME:
            p.unlink(missing_ok=True)


def claim_output_folder(
    folder: str | Path, overwrite: bool, error: type[TdbToolsError] = OutputExistsError
) -> OutputRun:
    """Claim ``folder`` for one run (docs/security.md §5): refused while another live run
    holds it (its lock file), a crashed run's leftovers (lock of a process that is gone) are
    removed, then the folder rule of :func:`~tdbtools._fs.check_output_folder` applies."""
    p = Path(folder)
    lock = p / LOCK_NAME
    if lock.exists() or lock.is_symlink():
        info = _read_lock(lock)
        pid, host = info.get("pid"), info.get("host")
        here = socket.gethostname()
        if isinstance(pid, int) and host == here and not _alive(pid):
            _leftovers(p, info)  # this user's crashed run: recognised and replaced
        else:
            who = f"process {pid} on {host}" if pid else "another run"
            raise error(
                f"output folder {str(p)!r} is in use by {who} ({LOCK_NAME}); "
                "wait for it, or remove the lock file if no such run is active"
            )
    check_output_folder(p, overwrite, error)
    created = not p.exists()
    p.mkdir(parents=True, exist_ok=True)
    info = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(lock, flags, 0o644)
    except FileExistsError:
        raise error(f"output folder {str(p)!r} is in use by another run ({LOCK_NAME})") from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(info, fh)
    return OutputRun(p, lock, created)
