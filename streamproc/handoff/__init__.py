"""The hand-off: publish each task's results with its offsets, write state directories, purge (state.md §10)."""
