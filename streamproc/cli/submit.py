"""The ``spark-submit`` entry file of ``streamproc process``.

``spark-submit --master spark://127.0.0.1:7077 $(python -c 'import streamproc.cli.submit as m; print(m.__file__)')
--plan plan.json --store s3://bucket/staging --topology myapp.topology:build`` runs the same command as
``streamproc process``; the master and ``--conf`` settings are spark-submit's (client deploy mode: Python apps cannot
use cluster mode on a standalone master).
"""

from __future__ import annotations

import sys

from streamproc.cli import main as streamproc_main


def main(argv: list[str] | None = None) -> None:
    """``streamproc process ARGS`` (``--output``/``-v`` may come first, as for ``streamproc``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    leading = []
    while args and (args[0].startswith("-v") or args[0].startswith("--output")):
        leading.append(args.pop(0))
        if leading[-1] == "--output" and args:
            leading.append(args.pop(0))
    streamproc_main.main([*leading, "process", *args], prog_name="streamproc process")


if __name__ == "__main__":
    main()
