"""The Aider environment: a private venv with aider-chat and an mcp 1.x beside it.

aider-chat pins exact versions that cannot be installed beside mcp 2.x and pydantic-ai 2.x,
so the bundled Aider MCP server (package `aider_mcp`) runs in its own venv in a per-user
cache folder. `aider-lsp setup-aider` creates it once (a stamp file makes reruns instant);
`doctor` and the bridge's launch configuration (aider/launch.py) ask `is_ready()` /
`aider_python()` / `server_command()`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import venv
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

from ..processes.process_start import ISOLATED, SAFE_PATH, neutral_folder

AIDER_VERSION = "0.86.2"
MCP_REQUIREMENT = "mcp>=1.9,<2"
REQUIREMENTS = (f"aider-chat=={AIDER_VERSION}", MCP_REQUIREMENT)
STAMP_NAME = "aider-lsp-ready"
CREATED_NAME = "aider-lsp-venv-created"  # written once the venv itself (python + pip) is complete
ENV_OVERRIDE = "AIDER_LSP_AIDER_ENV"


def cache_root() -> Path:
    """Per-user cache folder: $XDG_CACHE_HOME/aider-lsp or ~/.cache/aider-lsp."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "aider-lsp"


def env_dir() -> Path:
    """Where the Aider venv lives; `AIDER_LSP_AIDER_ENV` overrides (CI caches, tests)."""
    override = os.environ.get(ENV_OVERRIDE)
    if override:
        return Path(override).expanduser()
    return cache_root() / f"aider-env-{AIDER_VERSION}"


def _bin_dir(root: Path) -> Path:
    return root / ("Scripts" if os.name == "nt" else "bin")


def aider_python(root: Path | None = None) -> Path:
    """The Aider venv's interpreter (may not exist yet: check `is_ready()`)."""
    root = env_dir() if root is None else root
    return _bin_dir(root) / ("python.exe" if os.name == "nt" else "python")


def aider_executable(root: Path | None = None) -> Path:
    """The `aider` CLI inside the venv (used by the benchmark's CLI baseline)."""
    root = env_dir() if root is None else root
    return _bin_dir(root) / ("aider.exe" if os.name == "nt" else "aider")


def _stamp(root: Path) -> Path:
    return root / STAMP_NAME


def _stamp_text() -> str:
    return "\n".join(REQUIREMENTS) + "\n"


def is_ready(root: Path | None = None) -> bool:
    """True when the venv exists and was completed with the current requirements."""
    root = env_dir() if root is None else root
    stamp = _stamp(root)
    try:
        return aider_python(root).exists() and stamp.read_text() == _stamp_text()
    except OSError:
        return False


def package_parent() -> Path:
    """The directory that contains the `aider_mcp` package: beside `aider_lsp` in the same
    distribution. Found from this file, never imported: an import would search `sys.path`,
    where a workspace's own `aider_mcp/` could come first."""
    return Path(__file__).resolve().parents[2]


def sync_server_package(root: Path | None = None) -> Path:
    """Copy `aider_mcp` (a few small files) into the Aider env; returns the PYTHONPATH entry.

    Why a copy: putting this distribution's own site-packages on the Aider env's PYTHONPATH
    would shadow its mcp 1.x / pydantic with ours. The copy lives in a folder named after its
    content, so two versions of aider-lsp (or two checkouts) sharing one Aider env never
    replace each other's server while it runs.
    """
    root = env_dir() if root is None else root
    source = package_parent() / "aider_mcp"
    wanted = {p.name: p.read_bytes() for p in sorted(source.glob("*.py"))}
    digest = hashlib.sha256()
    for name, data in wanted.items():
        digest.update(name.encode() + b"\0" + data + b"\0")
    target_parent = root / "aider-lsp-server" / digest.hexdigest()[:16]
    target = target_parent / "aider_mcp"
    if not target.is_dir():
        staging = target_parent / f".aider_mcp.{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for name, data in wanted.items():
            (staging / name).write_bytes(data)
        try:
            os.replace(staging, target)
        except OSError:  # another process made the same copy at the same moment
            shutil.rmtree(staging, ignore_errors=True)
    return target_parent


def server_command(root: Path | None = None) -> tuple[str, list[str], dict[str, str]]:
    """(command, args-before-options, extra env) that starts the bundled server.

    Callers append `--cwd DIR --model MODEL`.
    """
    return (
        str(aider_python(root)),
        [SAFE_PATH, "-m", "aider_mcp"],  # the workspace (its current folder) never on its path
        {"PYTHONPATH": str(sync_server_package(root))},
    )


def describe() -> str:
    """One line for `doctor`."""
    root = env_dir()
    if is_ready(root):
        return f"Aider environment ready at {root} (aider-chat {AIDER_VERSION})"
    return f"Aider environment missing at {root}: run `aider-lsp setup-aider`"


def stream_command(
    command: list[str], log: Callable[[str], None], keep: int = 30
) -> subprocess.CompletedProcess[str]:
    """Run `command`, each output line (stdout and stderr) to `log` as it comes: pip's minutes
    of "Collecting …" / "Installing …" are the set-up's progress for whoever watches (the VS Code
    extension shows the latest line). The result's stdout is the last `keep` lines."""
    tail: deque[str] = deque(maxlen=keep)
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        cwd=neutral_folder(),  # never a workspace: nothing there is imported (process_start.py)
    ) as proc:
        assert proc.stdout is not None  # PIPE asked for
        for raw in proc.stdout:
            line = raw.rstrip()
            if line:
                tail.append(line)
                log(line)
    return subprocess.CompletedProcess(command, proc.returncode, stdout="\n".join(tail), stderr="")


def setup(
    *,
    force: bool = False,
    root: Path | None = None,
    log: Callable[[str], None] = print,
) -> Path:
    """Create (or complete) the Aider venv; instant when the stamp says it is done. One set-up
    at a time per environment, across processes (a lock file beside it): a second one started
    meanwhile (another editor's agent, the extension) waits, then finds it done.

    Raises RuntimeError with pip's tail when the install fails.
    """
    root = env_dir() if root is None else root
    root.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(root.parent / f"{root.name}.lock", log):
        return _setup(root, force=force, log=log)


@contextlib.contextmanager
def _exclusive(lock_path: Path, log: Callable[[str], None]) -> Iterator[None]:
    """Hold the set-up's lock (where the OS has advisory locks), saying so when it must wait."""
    try:
        import fcntl
    except ImportError:  # no advisory locks here: set-ups are not serialised
        yield
        return
    with lock_path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("Another set-up of the Aider environment is running: waiting for it ...")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _setup(root: Path, *, force: bool, log: Callable[[str], None]) -> Path:
    if force and root.exists():
        shutil.rmtree(root)
    if is_ready(root):
        log(f"Aider environment already set up at {root}")
        return root
    created = root / CREATED_NAME
    if not (aider_python(root).exists() and created.exists()):
        # (re)created whole: a creation cut short (no pip yet) is never taken for a venv
        log(f"Creating the Aider environment at {root} ...")
        venv.EnvBuilder(with_pip=True, clear=True).create(root)
        created.touch()
    python = str(aider_python(root))
    log(f"Installing {' '.join(REQUIREMENTS)} (this takes a few minutes) ...")
    command = [
        python,
        ISOLATED,
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        *REQUIREMENTS,
    ]
    proc = stream_command(command, log)
    if proc.returncode != 0:
        raise RuntimeError(f"pip install failed in {root}:\n{proc.stdout}")
    check = subprocess.run(
        [python, ISOLATED, "-c", "import aider, mcp, mcp.server.fastmcp; print(aider.__version__)"],
        capture_output=True,
        text=True,
        cwd=neutral_folder(),
    )
    if check.returncode != 0:
        raise RuntimeError(f"the Aider environment does not import: {check.stderr[-2000:]}")
    sync_server_package(root)
    _stamp(root).write_text(_stamp_text())
    log(f"Aider environment ready at {root} (aider {check.stdout.strip()})")
    return root
