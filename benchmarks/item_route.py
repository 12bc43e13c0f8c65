"""An item-heavy .tdb: DK24's track nodes with a TrItemTable of N items of every kind (issue 32).

    python benchmarks/item_route.py OUT.tdb [--items 3000] [--rdata-first]

Real routes hold many more track items per node than DK24 (327 items: crossovers, signals,
speed posts, a few platforms): sound regions, level crossings, sidings and platforms with
quoted names, car spawners, pick-ups, hazards, empty slots. The table written here cycles
through DK24's own items and items of those kinds (in the shapes the route editors write,
names with spaces quoted), renumbered, so that reading it exercises the item reader rather
than the node reader. The file is written for benchmarks, never into the repository.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DK24_TDB = HERE.parent.parent / "shared" / "routes" / "DK24" / "ROUTES" / "OR_DK24" / "DK24.tdb"

_ID = "\t\t\tTrItemId ( {i} )\n\t\t\tTrItemSData ( {d:.4f} 00000002 )\n"
_R = "\t\t\tTrItemRData ( {x:.4f} 12.5 {z:.4f} -5630 15117 )\n"
_HEAD = _ID + _R
# (as DK24's speed posts: the PData block before the RData block; --rdata-first: after it)
_P = _ID + "\t\t\tTrItemPData ( {x:.4f} {z:.4f} -5630 15117 )\n" + _R
_P_RFIRST = _ID + _R + "\t\t\tTrItemPData ( {x:.4f} {z:.4f} -5630 15117 )\n"
#: Items of the kinds DK24 lacks, as route editors write them.
EXTRA = (
    "\t\tSoundRegionItem (\n" + _HEAD + "\t\t\tTrItemSRData ( 0 3 0.5 )\n\t\t)\n",
    "\t\tLevelCrItem (\n" + _P + "\t\t)\n",
    "\t\tSidingItem (\n"
    + _HEAD
    + '\t\t\tSidingTrItemData ( ffff0000 {j} )\n\t\t\tSidingName ( "Siding {k} Nord" )\n\t\t)\n',
    "\t\tPlatformItem (\n"
    + _HEAD
    + '\t\t\tPlatformTrItemData ( ffff0000 {j} )\n\t\t\tPlatformName ( "Spor {k}" )\n'
    + '\t\t\tStation ( "Tommerup St" )\n\t\t\tPlatformMinWaitingTime ( 60 )\n'
    + "\t\t\tPlatformNumPassengersWaiting ( 20 )\n\t\t)\n",
    "\t\tCarSpawnerItem (\n" + _P + "\t\t)\n",
    "\t\tPickupItem (\n" + _P + "\t\t)\n",
    "\t\tHazzardItem (\n" + _P + "\t\t)\n",
    "\t\tEmptyItem (\n\t\t\tTrItemId ( {i} )\n\t\t)\n",
)


def make(items: int, out: Path, source: Path = DK24_TDB, rdata_first: bool = False) -> int:
    text = source.read_text(encoding="ascii")
    m = re.search(r"\n\tTrItemTable \( (\d+)\n", text)
    assert m, "not a DK24-like .tdb"
    body = text[m.end() :]
    own = re.findall(r"\t\t[A-Za-z]+Item \(\n.*?\n\t\t\)\n", body, flags=re.S)
    parts = []
    for i in range(items):
        k = i % (len(own) + len(EXTRA) * 40)
        if k < len(own):
            parts.append(re.sub(r"TrItemId \( \d+ \)", f"TrItemId ( {i} )", own[k]))
        else:
            tpl = EXTRA[(k - len(own)) % len(EXTRA)]
            if rdata_first:
                tpl = tpl.replace(_P, _P_RFIRST)
            parts.append(
                tpl.format(i=i, j=i + 1, k=i % 97, d=12.5 + i % 500, x=-978.9 + i % 900, z=-568.2 + i % 700)
            )
    with open(out, "w", encoding="ascii", newline="\n") as f:
        f.write(text[: m.start()])
        f.write(f"\n\tTrItemTable ( {items}\n")
        f.write("".join(parts))
        f.write("\t)\n)\n")
    return items


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--items", type=int, default=3000)
    ap.add_argument(
        "--rdata-first", action="store_true", help="TrItemRData before TrItemPData (as some editors write)"
    )
    args = ap.parse_args()
    if not DK24_TDB.is_file():
        print(f"DK24 not found at {DK24_TDB}", file=sys.stderr)
        return 2
    make(args.items, args.out, rdata_first=args.rdata_first)
    print(f"{args.out}: {args.items} items, {args.out.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
