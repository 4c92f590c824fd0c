"""Workflow: the plan → edit → test → analyse loop and its checkpoints (undo)."""
