"""Names a timetable's cells hold (docs/timetables.md §2): the commands that name
other trains, and path or consist names as relative file names."""

from __future__ import annotations

#: Commands whose value (None) or qualifiers name another train.
TRAIN_REFS: dict[str, tuple[str | None, ...]] = {
    "forms": (None,),
    "triggers": (None,),
    "wait": (None,),
    "follow": (None,),
    "connect": (None,),
    "activate": (None,),
    "attach": (None,),
    "pickup": (None,),
    "transfer": (None,),
    "detach": ("forms",),
    "stable": ("forms", "triggers"),
    "create": ("ahead",),
    "static": ("ahead",),
}


def relative_file_name(name: str, suffix: str) -> str | None:
    """A path or consist name of a timetable as a relative file name (``/``-separated)
    without ``suffix``; None when it would lead outside its folder (``..``, a root, a
    drive). Open Rails joins the name to PATHS or TRAINS/CONSISTS and adds the suffix
    when it has none (ProcessTimetable.cs), so ``MainWE.pat`` and a subfolder written
    the Windows way (``Sub\\Set``) both name files."""
    parts = [x.strip() for x in name.replace("\\", "/").split("/")]
    if not name.strip() or ":" in name or any(x in ("", ".", "..") for x in parts):
        return None
    rel = "/".join(parts)
    return rel[: -len(suffix)] if rel.lower().endswith(suffix) else rel


__all__ = ["TRAIN_REFS", "relative_file_name"]
