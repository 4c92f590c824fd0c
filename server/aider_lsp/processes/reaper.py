"""The run's reaper: a small supervisor process between the server and a command, so that
nothing the command starts outlives its run, not even a grandchild that left its session
(`setsid`, a daemonising test helper, a server a test starts). Linux only.

How: the supervisor makes itself a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`), so every
process of the run whose parent dies is re-parented to it instead of to init. When the command
exits, or the server closes the control pipe (the timeout, a cancel, or the server died), it
kills every process below it, reaps them and writes a report (what it ended) to the server.

Why a subreaper, not a cgroup: a cgroup v2 needs a writable, delegated cgroupfs. This machine
has a v1 hierarchy; a desktop user's editor runs in a systemd scope it may not write to, an ssh
session in a root-owned one, and containers (devcontainers, CI) mount cgroupfs read-only. The
subreaper needs no privilege on any Linux since 3.4. What it cannot catch: a process that
re-parents itself outside the run (e.g. asked systemd to start it); a cgroup could not either
without systemd's help.

Why a supervisor process, not the server as the subreaper: then every process of the run ends
up below the supervisor and nothing else does, so "below the supervisor" is exactly "the run's".
The server's own children (the Aider MCP server, the index process) and their orphans are never
re-parented to the server, and no zombie of a run is left for the server to reap.

Elsewhere (macOS, Windows) the command runs without a supervisor, as before: in its own process
group, killed as a group; a descendant that left the group outlives the run there.

The contract, `python -I -S reaper.py CONTROL_FD REPORT_FD ARGV...`: ARGV runs in the
supervisor's directory and environment with its stdio; the report is lines of text:
`returncode N`, `spawn_error ERRNO FILE`, `ended PID COMMAND` (one per process ended).
This file runs as a script on every test run: it imports nothing from the package and only
the lightest of the standard library (its start is most of the supervisor's cost, ~25 ms).
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
SUPERVISED = sys.platform.startswith("linux")
REAP_WAIT_S = 1.0  # the longest the supervisor waits for what it killed to be gone (twice)
REPORT_WAIT_S = 0.2  # the longest the server waits for a report not written yet
MAX_REPORTED = 50  # processes named in the report (it must fit in the pipe: the server reads it late)
COMMAND_CHARS = 120


class Report:
    """What the supervisor says about a run (an empty one when there was no supervisor)."""

    __slots__ = ("ended", "returncode", "spawn_error")

    def __init__(
        self, returncode: int | None = None, ended: tuple[str, ...] = (), spawn_error: OSError | None = None
    ) -> None:
        self.returncode = returncode
        self.ended = ended
        self.spawn_error = spawn_error


# ---------------------------------------------------------------- the server's end


class Supervision:
    """The server's end of one run: the argv that starts the supervisor, the fds it inherits,
    the control pipe whose closing ends the run, and the report it leaves. When not `enabled`
    (not Linux) the command runs as it is and every method does nothing."""

    def __init__(self, enabled: bool = SUPERVISED) -> None:
        self.enabled = enabled
        self._control_r, self._control_w = os.pipe() if enabled else (-1, -1)
        self._report_r, self._report_w = os.pipe() if enabled else (-1, -1)

    def argv(self, argv: list[str]) -> list[str]:
        if not self.enabled:
            return argv
        script = os.path.abspath(__file__)
        return [sys.executable, "-I", "-S", script, str(self._control_r), str(self._report_w), *argv]

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return (self._control_r, self._report_w) if self.enabled else ()

    def spawned(self) -> None:
        """Close the supervisor's ends here, so the report pipe reads EOF once it is gone."""
        self._control_r = _close(self._control_r)
        self._report_w = _close(self._report_w)

    def end(self) -> None:
        """Ask the supervisor to end the run now (idempotent)."""
        self._control_w = _close(self._control_w)

    def finish(self) -> Report:
        """The report, once the supervisor has exited (an empty one if it left none); closes
        every fd this run holds."""
        self.spawned()
        self.end()
        if self._report_r < 0:
            return Report()
        data = _read_report(self._report_r)
        self._report_r = _close(self._report_r)
        return parse_report(data.decode("utf-8", errors="replace"))


def _read_report(fd: int) -> bytes:
    """What the supervisor wrote (in one write, before it exited). The pipe may not read EOF
    yet: a child another thread of the server forked meanwhile holds its write end until it
    closes its inherited fds; what was written is the report all the same. Nothing written
    after REPORT_WAIT_S: the supervisor still runs (it missed its grace), no report."""
    os.set_blocking(fd, False)
    data = b""
    deadline = time.monotonic() + REPORT_WAIT_S
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            if data.endswith(b"\n") or time.monotonic() > deadline:
                return data
            select.select([fd], [], [], 0.02)
            continue
        if not chunk:
            return data
        data += chunk


def parse_report(text: str) -> Report:
    returncode: int | None = None
    ended: list[str] = []
    spawn_error: OSError | None = None
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "returncode" and value.lstrip("-").isdigit():
            returncode = int(value)
        elif key == "ended":
            ended.append(value)
        elif key == "spawn_error":
            number, _, filename = value.partition(" ")
            spawn_error = OSError(int(number), os.strerror(int(number)), filename)
    return Report(returncode, tuple(ended), spawn_error)


def _close(fd: int) -> int:
    if fd >= 0:
        os.close(fd)
    return -1


# ---------------------------------------------------------------- the supervisor


def set_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants; False when the kernel refuses."""
    import ctypes  # here: the server never needs it

    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


def _process_table() -> dict[int, tuple[int, str]]:
    """pid → (parent pid, state) for every process visible in /proc."""
    table: dict[int, tuple[int, str]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:  # no /proc (a bare chroot): nothing to find, the command's code still reported
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()  # the name may hold spaces and parentheses
        table[int(entry)] = (int(fields[1]), fields[0].decode())
    return table


def live_descendants(root: int) -> list[int]:
    """The processes below `root` that still run (zombies excluded), parents first."""
    children: dict[int, list[int]] = {}
    states: dict[int, str] = {}
    for pid, (parent, state) in _process_table().items():
        children.setdefault(parent, []).append(pid)
        states[pid] = state
    found: list[int] = []
    queue = list(children.get(root, ()))
    while queue:
        pid = queue.pop(0)
        if states[pid] != "Z":
            found.append(pid)
        queue.extend(children.get(pid, ()))
    return found


def describe(pid: int) -> str:
    """'PID COMMAND' as a user would recognise it in `ps`."""
    command = ""
    for name, brackets in (("cmdline", False), ("comm", True)):  # comm: a zombie meanwhile
        try:
            with open(f"/proc/{pid}/{name}", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if command:
            command = f"[{command}]" if brackets else command
            break
    if len(command) > COMMAND_CHARS:
        command = command[: COMMAND_CHARS - 1] + "…"
    return f"{pid} {command or '?'}"


def end_descendants(root: int, leader: int | None = None) -> tuple[list[str], int | None]:
    """SIGKILL everything below `root` until nothing runs there (a process may fork while its
    siblings are killed: scan again); the names of what was ended, and `leader`'s return code
    when it was collected here (a code reaped and dropped would be waited for in vain)."""
    ended: dict[int, str] = {}
    code = None
    deadline = time.monotonic() + REAP_WAIT_S
    while (alive := live_descendants(root)) and time.monotonic() < deadline:
        for pid in alive:
            if pid not in ended:
                ended[pid] = describe(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        reaped = reap(leader)
        code = reaped if reaped is not None else code
        time.sleep(0.005)  # let the kills land before scanning again
    return list(ended.values()), code


def reap(leader: int | None) -> int | None:
    """Collect every child that has exited; the leader's return code if it was among them."""
    code = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return code
        if pid == 0:
            return code
        if pid == leader:
            code = os.waitstatus_to_exitcode(status)


def wait_for_leader(leader: int, control: int, wake: int) -> int | None:
    """Reap orphans as they come until the leader exits (its return code) or the control pipe
    becomes readable: the server ended the run or died (None)."""
    while True:
        code = reap(leader)
        if code is not None:
            return code
        ready, _, _ = select.select([control, wake], [], [])
        if control in ready:
            return None
        os.read(wake, 512)


def spawn(argv: list[str]) -> int:
    """Start the command as Popen would (PATH searched, SIGPIPE and SIGXFSZ back to default)."""
    restored = [signal.SIGPIPE, getattr(signal, "SIGXFSZ", signal.SIGPIPE)]
    return os.posix_spawnp(argv[0], argv, os.environ, setsigdef=restored)


def supervise(control: int, argv: list[str]) -> list[str]:
    """Run `argv` to its end, then end what it left; the report's lines."""
    set_subreaper()  # without it (a kernel before 3.4) the orphans escape, the rest is ended
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)  # never a word on the command's stderr
    signal.signal(signal.SIGCHLD, lambda *_: None)
    try:
        leader = spawn(argv)
    except OSError as exc:
        return [f"spawn_error {exc.errno} {argv[0]}"]
    code = wait_for_leader(leader, control, wake_r)
    ended, reaped = end_descendants(os.getpid(), leader)
    code = reaped if code is None else code
    deadline = time.monotonic() + REAP_WAIT_S
    while code is None and time.monotonic() < deadline:  # the leader was just killed
        code = reap(leader)
        time.sleep(0.005)
    reap(None)
    if len(ended) > MAX_REPORTED:
        ended[MAX_REPORTED - 1 :] = [f"… and {len(ended) - MAX_REPORTED + 1} more"]
    return [f"returncode {'' if code is None else code}", *(f"ended {line}" for line in ended)]


def main(args: list[str]) -> int:
    control, report = int(args[0]), int(args[1])
    os.set_inheritable(control, False)  # the command gets neither
    os.set_inheritable(report, False)
    lines = supervise(control, args[2:])
    os.write(report, "".join(line + "\n" for line in lines).encode())
    code = parse_report("\n".join(lines)).returncode
    if code is None:
        return 127 if lines[0].startswith("spawn_error") else 1
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
