"""What undo keeps: each edit's before and after (checkpoints.py), one change taken back by a
three-way merge (revert.py), and the history as the user meets it (runs.py)."""
