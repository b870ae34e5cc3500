"""``python -m streamproc_dev``: see :mod:`streamproc_dev.cli`."""

from streamproc_dev.cli import main

main()
