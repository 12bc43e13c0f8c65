"""docs/api.md lists what each package's ``__all__`` exports (made by tools/api_listing.py)."""

from __future__ import annotations

import importlib.util

from helpers import REPO


def _tool():
    spec = importlib.util.spec_from_file_location("api_listing", REPO / "tools" / "api_listing.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_api_doc_is_current():
    tool = _tool()
    want = tool.listing()
    assert (REPO / "docs" / "api.md").read_text(encoding="utf-8") == want, (
        "docs/api.md is not current: run python tools/api_listing.py"
    )


def test_every_exported_name_exists_and_is_listed_once():
    tool = _tool()
    text = tool.listing()
    for name in tool.PACKAGES:
        mod = importlib.import_module(name)
        names = tool._public(mod)
        assert len(names) == len(set(names)), name
        for n in names:
            getattr(mod, n)  # an __all__ entry that does not exist fails here
        section = text.split(f"## `{name}` ")[1].split("\n## ")[0]
        assert all(f"`{n}`" in section for n in names), name
