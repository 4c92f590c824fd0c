"""The processes the server starts: the test command (shell.py) under a supervisor that lets
nothing outlive its run (reaper.py), a start finished whole (child_start.py), and our own
Python processes never started with a workspace on their import path (process_start.py)."""
