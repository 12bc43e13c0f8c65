"""The runner the mutant tools share: each mutant (file, text, replacement) is planted
alone, the given tests run, and the file is restored whatever happens. A mutant the tests
do not fail SURVIVED; the exit status is 1 when any survived or was not found."""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
from collections.abc import Sequence

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run(mutants: Sequence[tuple[str, str, str]], tests: Sequence[str], only: Sequence[int] = ()) -> int:
    """Plant each mutant (those numbered in ``only``, when given) and run ``tests``."""
    bad = 0
    for k, (f, a, b) in enumerate(mutants):
        if only and k not in only:
            continue
        p = ROOT / f
        src = p.read_text()
        if src.count(a) != 1:
            print(k, "NOT FOUND/AMBIGUOUS", f, "|", a[:60], flush=True)
            bad += 1
            continue
        p.write_text(src.replace(a, b))
        try:
            cmd = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-x", "-p", "no:cacheprovider", *tests]
            r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        finally:
            p.write_text(src)
        failed = [
            x.split(" - ")[0].replace("FAILED ", "") for x in r.stdout.splitlines() if x.startswith("FAILED")
        ]
        bad += r.returncode == 0
        verdict = "KILLED" if r.returncode else "SURVIVED"
        print(k, verdict, f.split("/")[-1], "|", a[:60], "->", failed[:1], flush=True)
    return 1 if bad else 0


def selected(doc: str | None, argv: Sequence[str] | None = None) -> list[int]:
    """The mutant numbers given on the command line (all when none); ``--help`` prints
    the tool's docstring."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("numbers", nargs="*", type=int, help="only these mutants (their numbers as printed)")
    return parser.parse_args(argv).numbers
