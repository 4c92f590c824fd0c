"""What the server refuses: a path outside the workspace or a secret file (files.py), a
credential in a text bound for a model (redact.py), spend over a run's cap (budget.py)."""
