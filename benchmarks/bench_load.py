"""Parsing and loading speed on a real route, as ratios measured in one run.

    python benchmarks/bench_load.py [ROUTE_FOLDER] [--repeat N] [--naive]

Compares tdbtools against a plain ``re``-tokenizer tree builder (baseline.py) on the
same files: DK24.tdb and the install's global tsection.dat into the typed model
(target ≤ 1.5x the tokenizer; issue 16 asks for ≤ 1.2x), a cold
``load_route`` of the whole route (≤ 2x the tokenizer over the same files), and a
warm, cached load (≥ 30x faster than cold). ``--naive`` also times a textbook Lark
LALR grammar (one token per word, a Lark parse tree) for reference. Each figure is
the best of N runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# BENCH_SRC: another checkout whose tdbtools to measure (old and new code side by side)
sys.path.insert(0, os.environ.get("BENCH_SRC", str(HERE.parent)))

import baseline  # noqa: E402

from tdbtools.formats import find_route_files, load_route, read_tdb, read_tsection_file  # noqa: E402
from tdbtools.stf import parse_file  # noqa: E402

DEFAULT = HERE.parent.parent / "shared" / "routes" / "DK24" / "ROUTES" / "OR_DK24"

NAIVE_GRAMMAR = r"""
start: item*
?item: block | WORD | STRING
block: WORD "(" item* ")"
WORD: /[^\s()"]+/
STRING: /"(?:[^"\\]|\\.)*"/
%ignore /\s+/
"""


def best_of(fns: dict, repeat: int) -> dict:
    """The best time of each function over ``repeat`` rounds, the functions taking turns
    within each round so that a busy or slowing machine affects all of them alike."""
    best = {k: float("inf") for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("route", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--naive", action="store_true", help="also time a naive Lark LALR parse tree")
    args = ap.parse_args()
    if not args.route.is_dir():
        print(f"route folder not found: {args.route}", file=sys.stderr)
        return 2
    os.environ["TDBTOOLS_CACHE_DIR"] = tempfile.mkdtemp(prefix="tdbtools-bench-")

    files = find_route_files(args.route)
    route = load_route(args.route, cache=False)
    tdb = Path(route.tdb.path)
    sources = [Path(p) for p in route.sources]  # trk, tdb, tsection files (with includes), rdb
    # The install's global tsection.dat itself (the route's OPENRAILS file only includes it).
    gts = next(p for p in sources if p.name.lower() == "tsection.dat" and p.parent.name.lower() == "global")
    mb_gts = gts.stat().st_size / 1e6
    mb_tdb = tdb.stat().st_size / 1e6
    mb_all = sum(p.stat().st_size for p in sources) / 1e6
    r = args.repeat

    load_route(args.route)  # fill the cache
    t = best_of(
        {
            "base_tdb": lambda: baseline.parse(tdb),
            "generic_tdb": lambda: parse_file(tdb),
            "typed_tdb": lambda: read_tdb(tdb),
            "base_gts": lambda: baseline.parse(gts),
            "typed_gts": lambda: read_tsection_file(gts, local=False),
            "base_all": lambda: [baseline.parse(p) for p in sources],
            "cold": lambda: load_route(args.route, cache=False),
            "warm": lambda: load_route(args.route),
        },
        r,
    )
    base_tdb, generic_tdb, typed_tdb = t["base_tdb"], t["generic_tdb"], t["typed_tdb"]
    base_all, cold, warm = t["base_all"], t["cold"], t["warm"]
    base_gts, typed_gts = t["base_gts"], t["typed_gts"]

    rows = [
        ("files", f"{tdb.name} {mb_tdb:.2f} MB; route {len(sources)} files {mb_all:.2f} MB", ""),
        ("baseline: re tokenizer tree, tdb", f"{base_tdb * 1000:8.1f} ms", f"{mb_tdb / base_tdb:6.1f} MB/s"),
        (
            "baseline: re tokenizer tree, route files",
            f"{base_all * 1000:8.1f} ms",
            f"{mb_all / base_all:6.1f} MB/s",
        ),
        (
            "tdbtools: generic tree, tdb",
            f"{generic_tdb * 1000:8.1f} ms",
            f"{generic_tdb / base_tdb:5.2f}x baseline",
        ),
        (
            "tdbtools: typed model, tdb",
            f"{typed_tdb * 1000:8.1f} ms",
            f"{typed_tdb / base_tdb:5.2f}x baseline (target <= 1.5x)",
        ),
        ("baseline: re tokenizer tree, global tsection", f"{base_gts * 1000:8.1f} ms", f"{mb_gts:.2f} MB"),
        (
            "tdbtools: typed model, global tsection",
            f"{typed_gts * 1000:8.1f} ms",
            f"{typed_gts / base_gts:5.2f}x baseline (target <= 1.5x)",
        ),
        (
            "tdbtools: load_route cold",
            f"{cold * 1000:8.1f} ms",
            f"{cold / base_all:5.2f}x baseline (target <= 2x)",
        ),
        (
            "tdbtools: load_route warm (cache)",
            f"{warm * 1000:8.1f} ms",
            f"{cold / warm:5.1f}x faster than cold (target >= 30x)",
        ),
    ]
    if args.naive:
        from lark import Lark

        parser = Lark(NAIVE_GRAMMAR, parser="lalr")
        text = baseline.read_text(tdb)
        text = text[text.find("\n") + 1 :]
        naive = best_of({"naive": lambda: parser.parse(text)}, 1)["naive"]
        rows.append(
            (
                "naive Lark LALR parse tree, tdb",
                f"{naive * 1000:8.1f} ms",
                f"{mb_tdb / naive:6.2f} MB/s, {naive / base_tdb:5.2f}x baseline",
            )
        )
    print(f"route {route.name} ({files.folder}); best of {r} runs; Python {sys.version.split()[0]}")
    w = max(len(a) for a, _, _ in rows)
    for a, b, c in rows:
        print(f"  {a:<{w}}  {b:>12}  {c}")
    ok = (
        typed_tdb / base_tdb <= 1.5
        and typed_gts / base_gts <= 1.5
        and cold / base_all <= 2
        and cold / warm >= 30
    )
    print("targets met" if ok else "TARGETS NOT MET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
