"""``python -m tdbtools``: the same command line as ``tdbtools``."""

from .cli import main

if __name__ == "__main__":
    main(prog_name="tdbtools")
