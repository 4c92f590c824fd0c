"""The workspace's test suite, as the workflow sees it: which command tests it (detect.py),
which command a run uses and the user's one-time confirmation (choose.py), its output read
into findings on file:line (findings.py), and a run narrowed to the tests that failed
(narrow.py). Nothing here runs a process: shell.py's CommandExecutor does."""
