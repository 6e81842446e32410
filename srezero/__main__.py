"""``python -m srezero``: the same command line as ``srezero``."""

from srezero.cli import main

if __name__ == "__main__":
    main()
