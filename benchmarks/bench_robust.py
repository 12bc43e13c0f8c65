"""Reliability benchmarks of issue 32: the signal-script compiler's cost against the script's
size and its number of errors, and the warm load of a route with a tolerated defect.

    python benchmarks/bench_robust.py scripts [--sizes 0.25,1,4]
    python benchmarks/bench_robust.py errors [--bad 20,200]
    python benchmarks/bench_robust.py cache COPIES OUT_DIR

Each measurement runs in a child process of the interpreter running this file (so the
code measured is the one on its PYTHONPATH: compare two checkouts by running this file with
each) and reports the child's CPU seconds and peak resident memory.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DK24 = HERE.parent.parent / "shared" / "routes" / "DK24"
SIGSCR = DK24 / "ROUTES" / "OR_DK24" / "sigscr.dat"


def _child(code: str, *args: str) -> dict:
    """Run ``code`` in a child interpreter; its CPU seconds and peak RSS (MB), and which
    tdbtools it ran."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    # cwd: a neutral folder, so that ``-c`` (which puts the cwd first on sys.path) imports the
    # tdbtools of PYTHONPATH, not a checkout the command was started in.
    r = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=tempfile.gettempdir(),
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"child failed ({r.returncode}): {r.stderr[-2000:]}")
    return {
        "cpu_s": round((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), 3),
        "wall_s": round(wall, 3),
        "peak_mb": round(after.ru_maxrss / 1024.0, 1),
        "out": r.stdout.strip()[-120:],
        "module": (r.stdout.splitlines() or [""])[0],
    }


def _dk24_script_text() -> str:
    raw = SIGSCR.read_bytes()
    return raw[2:].decode("utf-16-le") if raw[:2] == b"\xff\xfe" else raw.decode("utf-8", "replace")


def big_script(megabytes: float, bad: int = 0) -> str:
    """DK24's scripts repeated (renamed) to about ``megabytes``; ``bad`` lines spread over
    it made syntax errors."""
    base = _dk24_script_text()
    out, k = [], 0
    size = 0
    while size < megabytes * 1e6:
        part = re.sub(r"(?im)^(\s*SCRIPT\s+)(\S+)", lambda m, k=k: f"{m.group(1)}{m.group(2)}_{k}", base)
        out.append(part)
        size += len(part)
        k += 1
    text = "\n".join(out)
    if bad:
        lines = text.split("\n")
        body = [i for i, ln in enumerate(lines) if ln.strip().endswith(";") and "=" in ln]
        step = max(1, len(body) // bad)
        for i in body[::step][:bad]:
            lines[i] = lines[i].replace("=", "= ( 1 +", 1)
        text = "\n".join(lines)
    return text


READ = (
    "import sys, time, tdbtools; print(tdbtools.__file__)\n"
    "from tdbtools.signals.script import read_scripts\n"
    "t = time.process_time(); f = read_scripts(sys.argv[1])\n"
    "print(len(f.scripts), f.errors, round(time.process_time() - t, 3))\n"
)


def scripts(sizes: list[float]) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mb in sizes:
            p = Path(tmp) / f"s{mb}.dat"
            p.write_text(big_script(mb), encoding="utf-8")
            res = _child(READ, str(p))
            rows.append({"MB": round(p.stat().st_size / 1e6, 2), **res})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def one_script(megabytes: float, bad: int) -> str:
    """One script of about ``megabytes`` (assignments and if/else blocks), ``bad`` of its
    lines spread over it made syntax errors (the issue's "1 MB script with 200 bad lines")."""
    lines = ["SCRIPT BIG", "float a;", "float b;"]
    size, k = 0, 0
    while size < megabytes * 1e6:
        chunk = f"if (a == {k}) {{ b = a * 2 + {k}; }} else {{ b = b - 1; }}"
        lines.append(chunk)
        size += len(chunk) + 1
        k += 1
    step = max(1, (len(lines) - 3) // max(bad, 1))
    for i in range(3, len(lines), step)[:bad]:
        lines[i] = lines[i].replace("b = a", "b = ( a", 1)
    lines.append("state = b;")
    return "\n".join(lines) + "\n"


def errors(bad: list[int], megabytes: float = 1.0, one: bool = False) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in bad:
            p = Path(tmp) / f"e{n}.dat"
            p.write_text(one_script(megabytes, n) if one else big_script(megabytes, n), encoding="utf-8")
            res = _child(READ, str(p))
            rows.append({"MB": round(p.stat().st_size / 1e6, 2), "one_script": one, "bad_lines": n, **res})
            print(json.dumps(rows[-1]), flush=True)
    return rows


INFO = (
    "import sys, tdbtools; print(tdbtools.__file__)\n"
    "from tdbtools.cli import main\n"
    "try:\n    main(['info', sys.argv[1]], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
)


def cache(copies: int, out: Path) -> list[dict]:
    """Warm ``tdbtools info`` on N× DK24 and on the same route with one unknown section id."""
    sys.path.insert(0, str(HERE))
    import big_route

    clean = big_route.make_route(copies, out / "clean")
    bad = big_route.make_route(copies, out / "defect")
    tdb = bad / "DK24.tdb"
    if not (bad / ".defect").exists():
        text = tdb.read_text(encoding="utf-16") if tdb.read_bytes()[:2] == b"\xff\xfe" else tdb.read_text()
        # One vector section of the first node gets a section id tsection.dat lacks.
        m = re.search(r"TrVectorSections \( \d+ (\d+)", text)
        assert m is not None
        text = text[: m.start(1)] + "999999" + text[m.end(1) :]
        tdb.write_text(text, encoding="utf-8")
        (bad / ".defect").write_text("one unknown section id\n")
    os.environ["TDBTOOLS_CACHE_DIR"] = str(out / "cache")
    rows = []
    for name, folder in (("clean", clean), ("defective", bad)):
        _child(INFO, str(folder))  # cold: writes the entry
        for k in range(3):
            res = _child(INFO, str(folder))
            rows.append({"route": f"{copies}x {name}", "run": k, **res})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("scripts")
    s.add_argument("--sizes", default="0.25,1,4")
    e = sub.add_parser("errors")
    e.add_argument("--bad", default="20,200")
    e.add_argument("--mb", type=float, default=1.0)
    e.add_argument("--one", action="store_true", help="one big script (else DK24's, repeated)")
    c = sub.add_parser("cache")
    c.add_argument("copies", type=int)
    c.add_argument("out", type=Path)
    args = ap.parse_args(argv)
    print(f"load {open('/proc/loadavg').read().split()[:3]}")
    if args.what == "scripts":
        scripts([float(x) for x in args.sizes.split(",")])
    elif args.what == "errors":
        errors([int(x) for x in args.bad.split(",")], args.mb, args.one)
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        cache(args.copies, args.out)
    print(f"load {open('/proc/loadavg').read().split()[:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
