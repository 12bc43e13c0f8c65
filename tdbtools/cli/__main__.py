"""``python -m tdbtools.cli``: the same command line as ``tdbtools``."""

from . import main

if __name__ == "__main__":  # pragma: no cover
    main()
