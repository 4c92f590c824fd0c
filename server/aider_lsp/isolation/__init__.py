"""Isolated workflow runs: each in a worktree of its own (trees.py), kept on disk (store.py),
applied onto the user's files by three-way merge (apply.py), run and decided on (runs.py)."""
