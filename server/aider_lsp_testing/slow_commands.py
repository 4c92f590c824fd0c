"""Test commands that stay busy, for the tests of what happens when the editor goes away
while they run (shutdown, stdin closed): every process they start must be gone after."""

from __future__ import annotations

import sys
from pathlib import Path


def slow_test_command(pid_file: Path) -> str:
    """A test command that writes its pid, starts a grandchild, and sleeps ten minutes: longer
    than any test waits, so a process still there at a test's cap was not ended by the server."""
    script = (
        "import os, subprocess, sys, time; "
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
        "time.sleep(600)"
    )
    return f'{sys.executable} -c "{script}"'
