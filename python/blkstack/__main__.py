"""``python -m blkstack``: the same as the ``blkstack`` command."""

from blkstack.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
