"""Synthetic big routes: ``copies`` renumbered, shifted copies of DK24 in one track database.

    python benchmarks/big_route.py COPIES OUT_DIR [--world]

Copy ``k`` of every track node gets index ``i + k·N`` (N: DK24's node count), every item
``j + k·M``, and every tile coordinate (vector sections, UiDs, item positions, path points)
is moved by whole tiles on a grid (8 copies side by side along z, then the next row along
x), so the copies never touch: a route of ``copies`` independent DK24 networks. The
install around it (GLOBAL, TRAINS, the route's tsection.dat/OPENRAILS/.rdb) is taken from
DK24's (copied: links out of the install are not read), so only the .tdb and the copied
.pat files are generated. Used by bench_scale.py;
the routes go to a temporary folder, never into the repository.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DK24 = HERE.parent.parent / "shared" / "routes" / "DK24"
ROUTE = DK24 / "ROUTES" / "OR_DK24"

#: tile extent of DK24 (x: -5680..-5575, z: 15114..15133) plus a margin
STEP_X, STEP_Z, ROW = 110, 24, 8

_ITEM = re.compile(
    r"(TrVectorSections|UiD|TrPin|TrItemRef|TrItemId|TrItemPData|TrItemRData"
    r"|TrSignalDir|CrossoverTrItemData) \(([^()]*)\)"
)
_NODE = re.compile(r"TrackNode \( (\d+)")
# which fields hold (a track node, an item id, a tile x, a tile z)
_FIELDS = {
    "UiD": ((), (), (0, 4), (1, 5)),
    "TrPin": ((0,), (), (), ()),
    "TrItemRef": ((), (0,), (), ()),
    "TrItemId": ((), (0,), (), ()),
    "TrItemPData": ((), (), (2,), (3,)),
    "TrItemRData": ((), (), (3,), (4,)),
    "TrSignalDir": ((0,), (), (), ()),
    "CrossoverTrItemData": ((0,), (), (), ()),
}


def shift_of(k: int) -> tuple[int, int]:
    """Whole tiles (x, z) that copy ``k`` is moved by."""
    return (k // ROW) * STEP_X, (k % ROW) * STEP_Z


def _copy(body: str, k: int, n_nodes: int, n_items: int) -> str:
    dn, di = k * n_nodes, k * n_items
    dx, dz = shift_of(k)
    if k == 0:
        return body

    def item(m: re.Match) -> str:
        name, vals = m.group(1), m.group(2).split()
        if name == "TrVectorSections":
            for g in range(int(vals[0])):
                b = 1 + 16 * g
                for i, d in ((2, dx), (3, dz), (8, dx), (9, dz)):
                    vals[b + i] = str(int(vals[b + i]) + d)
        else:
            nodes, items, tx, tz = _FIELDS[name]
            for group, d in ((nodes, dn), (items, di), (tx, dx), (tz, dz)):
                for i in group:
                    vals[i] = str(int(vals[i]) + d)
        return f"{name} ( {' '.join(vals)} )"

    body = _ITEM.sub(item, body)
    return _NODE.sub(lambda m: f"TrackNode ( {int(m.group(1)) + dn}", body)


def make_tdb(copies: int, out: Path, source: Path = ROUTE / "DK24.tdb") -> int:
    """Write the .tdb of ``copies`` copies of ``source`` to ``out``; returns its size in bytes."""
    text = source.read_text(encoding="ascii")
    m_nodes = re.search(r"TrackNodes \( (\d+)", text)
    m_items = re.search(r"\n\tTrItemTable \( (\d+)", text)
    assert m_nodes and m_items, "not a DK24-like .tdb"
    n_nodes, n_items = int(m_nodes.group(1)), int(m_items.group(1))
    nodes = text[m_nodes.end() : m_items.start()].rstrip()
    assert nodes.endswith(")")
    nodes = nodes[:-1]  # the TrackNodes block's ")"
    items = text[m_items.end() :].rstrip()
    assert items.endswith(")")
    items = items[:-1].rstrip()  # the TrackDB block's ")"
    assert items.endswith(")")
    items = items[:-1]  # the TrItemTable block's ")"
    with open(out, "w", encoding="ascii", newline="\n") as f:
        f.write(text[: m_nodes.start()])
        f.write(f"TrackNodes ( {n_nodes * copies}")
        for k in range(copies):
            f.write(_copy(nodes, k, n_nodes, n_items))
        f.write(f")\n\tTrItemTable ( {n_items * copies}")
        for k in range(copies):
            f.write(_copy(items, k, n_nodes, n_items))
        f.write(")\n)\n")
    return out.stat().st_size


def copy_pat(src: Path, out: Path, k: int) -> None:
    """``src`` moved onto copy ``k`` (its TrackPDP tiles shifted)."""
    dx, dz = shift_of(k)
    text = src.read_text(encoding="utf-16" if src.read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff") else "ascii")

    def pdp(m: re.Match) -> str:
        vals = m.group(1).split()
        vals[0] = str(int(vals[0]) + dx)
        vals[1] = str(int(vals[1]) + dz)
        return f"TrackPDP ( {' '.join(vals)} )"

    out.write_text(re.sub(r"TrackPDP \(([^()]*)\)", pdp, text), encoding="ascii")


def copy_world(copies: int, folder: Path, n_items: int) -> int:
    """DK24's world files onto every copy (tiles moved, signal units' item ids renumbered)
    and its sigcfg.dat / sigscr.dat: the copies are signalled as DK24 is. Returns the
    number of world files written."""
    world = folder / "WORLD"
    world.mkdir(exist_ok=True)
    for name in ("sigcfg.dat", "sigscr.dat"):
        if not (folder / name).exists():
            shutil.copyfile(ROUTE / name, folder / name)  # (a link out of the route is not read)
    n = 0
    for src in sorted((ROUTE / "WORLD").glob("w*.w")):
        m = re.fullmatch(r"w([+-]\d+)([+-]\d+)\.w", src.name)
        if m is None:
            continue
        text = src.read_text(encoding="latin-1")
        for k in range(copies):
            dx, dz = shift_of(k)
            dst = world / f"w{int(m.group(1)) + dx:+07d}{int(m.group(2)) + dz:+07d}.w"
            if not dst.exists():
                body = re.sub(
                    r"TrItemId \( 0 (\d+) \)",
                    lambda t, k=k: f"TrItemId ( 0 {int(t.group(1)) + k * n_items} )",
                    text,
                )
                dst.write_text(body, encoding="latin-1")
                n += 1
    return n


def make_route(copies: int, root: Path, paths: list[str] = (), *, world: bool = False) -> Path:
    """An install under ``root`` whose route BIG<copies> holds ``copies`` copies of DK24,
    with the .pat files ``paths`` (names in DK24's PATHS) copied onto every copy as
    ``c<k>_<name>``; with ``world``, DK24's signals on every copy (:func:`copy_world`).
    Returns the route folder (reused if it exists)."""
    folder = root / "ROUTES" / f"BIG{copies}"
    tdb = folder / "DK24.tdb"
    (folder / "PATHS").mkdir(parents=True, exist_ok=True)
    # copied, not linked: includes may not point outside the install root, and stock linked
    # out of the install is not read (docs/security.md §3)
    for src, dst in (
        (DK24 / "GLOBAL", root / "GLOBAL"),
        (ROUTE / "OPENRAILS", folder / "OPENRAILS"),
        (DK24 / "TRAINS", root / "TRAINS"),
    ):
        if not dst.exists():
            shutil.copytree(src, dst)
    for name in ("DK24.trk", "DK24.rdb", "tsection.dat"):
        # copied: a route file linked out of the install is not read (docs/security.md §3)
        if not (folder / name).exists() or (folder / name).is_symlink():
            (folder / name).unlink(missing_ok=True)
            shutil.copyfile(ROUTE / name, folder / name)
    if not tdb.exists():
        tmp = tdb.with_suffix(".tmp")
        make_tdb(copies, tmp)
        tmp.replace(tdb)
    if world:
        m_items = re.search(r"\n\tTrItemTable \( (\d+)", (ROUTE / "DK24.tdb").read_text(encoding="ascii"))
        assert m_items
        copy_world(copies, folder, int(m_items.group(1)))
    for name in paths:
        for k in range(copies):
            dst = folder / "PATHS" / f"c{k}_{name}"
            if not dst.exists():
                copy_pat(ROUTE / "PATHS" / name, dst, k)
    return folder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("copies", type=int)
    ap.add_argument("out", type=Path)
    ap.add_argument("--world", action="store_true", help="DK24's world files and signals on every copy")
    args = ap.parse_args()
    if not (ROUTE / "DK24.tdb").is_file():
        print(f"DK24 not found at {ROUTE}", file=sys.stderr)
        return 2
    folder = make_route(args.copies, args.out, world=args.world)
    print(f"{folder}: {(folder / 'DK24.tdb').stat().st_size / 1e6:.1f} MB .tdb")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
