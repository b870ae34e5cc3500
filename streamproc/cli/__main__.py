"""``python -m streamproc.cli``: the ``streamproc`` command without its console script."""

from streamproc.cli import main

main()
