"""Command line: `aider-lsp serve | acp | run | demo | undo | history | apply | discard | keep |
doctor | context | login | setup-aider`.

The parser and the dispatch only: each subcommand lives in its own module of this package
(serve.py, acp.py, run.py, history.py (history and undo), runs.py (apply, discard and keep an
isolated run), demo.py, doctor.py, context.py, login.py, setup_aider.py), imported when it runs,
so `aider-lsp serve` loads none of the others."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from .. import __version__

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable


def _setup_logging(level: str) -> None:
    """Logs go to stderr only: stdout belongs to JSON-RPC."""
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("pygls").setLevel(logging.WARNING)  # it logs every message at INFO


def build_parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(prog="aider-lsp", description=__doc__)
    parser.add_argument("--version", action="version", version=f"aider-lsp {__version__}")
    parser.add_argument(
        "--log-level",
        default=os.environ.get("AIDER_LSP_LOG_LEVEL"),
        help="log level on stderr (default INFO; WARNING for run, demo and undo, "
        "which show their own progress)",
    )
    commands = parser.add_subparsers(dest="command")
    serve_parser = commands.add_parser("serve", help="run the language server on stdio")
    serve_parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP (debugging)")
    serve_parser.add_argument("--stdio", action="store_true", help="stdio (the default)")
    commands.add_parser(
        "acp", help="run the Agent Client Protocol agent on stdio (Zed, JetBrains, Neovim, Emacs…)"
    )
    doctor_parser = commands.add_parser("doctor", help="check the configuration")
    doctor_parser.add_argument("--workspace", type=_folder, default=Path.cwd())
    setup_parser = commands.add_parser(
        "setup-aider", help="create the Aider environment (aider-chat + mcp 1.x) in the user cache"
    )
    setup_parser.add_argument("--force", action="store_true", help="recreate it from scratch")
    login_parser = commands.add_parser(
        "login",
        help="sign in: choose the provider and model, give the key (checked, stored outside every workspace)",
    )
    login_parser.add_argument("--provider", help="anthropic, openai, openrouter, gemini, deepseek or local")
    login_parser.add_argument("--model", help="the model's name at the provider (e.g. claude-sonnet-4-5)")
    login_parser.add_argument(
        "--aider-model", help="Aider's model, if not the same (e.g. anthropic/claude-sonnet-4-5)"
    )
    login_parser.add_argument("--base-url", help="an OpenAI-compatible server's base URL (provider local)")
    login_parser.add_argument("--with-key", action="store_true", help="read the key from standard input")
    login_parser.add_argument("--no-check", action="store_true", help="store it without the checking call")
    context_parser = commands.add_parser(
        "context", help="list the workspace files relevant to a query (with scores)"
    )
    context_parser.add_argument("query", help="what the files should be about")
    context_parser.add_argument("--workspace", type=_folder, default=Path.cwd())
    context_parser.add_argument("--json", action="store_true", help="print JSON")
    context_parser.add_argument("--limit", type=int, default=10, help="at most N files")
    context_parser.add_argument(
        "--index",
        type=_folder,
        metavar="FILE",
        help="index file (default <workspace>/.aider-lsp/index.sqlite3)",
    )
    _add_workflow_commands(commands)
    return parser


def _add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`run`: the coding workflow on a goal in a workspace."""
    run_parser = commands.add_parser(
        "run", help="run the coding workflow (plan, Aider edit, tests, analysis, retry) in a workspace"
    )
    run_parser.add_argument("--workspace", type=_folder, default=Path.cwd())
    run_parser.add_argument("--goal", required=True, help="what the code should do")
    run_parser.add_argument("--test", metavar="COMMAND", help="the test command (default: testCommand)")
    run_parser.add_argument(
        "--max-retries", type=int, metavar="N", help="Aider attempts (default: maxRetries)"
    )
    run_parser.add_argument("--context", default="", help="anything the planner should know")
    run_parser.add_argument(
        "--files", nargs="+", metavar="FILE", help="files to work on (workspace-relative)"
    )
    run_parser.add_argument(
        "--plan",
        action="store_true",
        help="ask the planner too (beside the first edit; it shapes the second)",
    )
    run_parser.add_argument(
        "--isolated",
        action="store_true",
        help="run in a git worktree of its own (a copy without git): your files stay untouched "
        "until `aider-lsp apply` (default: the isolation setting)",
    )
    run_parser.add_argument(
        "--attempts",
        type=int,
        metavar="N",
        help="N attempts at the goal at once, each in a worktree of its own; the tests choose "
        "(default: the attempts setting)",
    )
    run_parser.add_argument(
        "--choose",
        choices=["first-green", "compare"],
        help="first-green: the first attempt that passes wins, the others stop; compare: all "
        "finish and are ranked (default: the chooseAttempt setting)",
    )
    run_parser.add_argument(
        "--aider-model",
        action="append",
        metavar="MODEL",
        help="a model the attempts edit with, in turn (repeat it: one per attempt)",
    )
    run_parser.add_argument(
        "--image",
        action="append",
        type=_folder,
        metavar="FILE",
        help="an image (a screenshot, a mock-up) shown to Aider's model with each edit; the model "
        "must read images (repeat it for more)",
    )
    run_parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    run_parser.add_argument(
        "--debug",
        action="store_true",
        help="log the planning/analysis model's prompts, tools and failures on stderr",
    )


def _add_workflow_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`run`, `demo`, `undo` and `history`: the coding workflow in a terminal."""
    _add_run(commands)
    demo_parser = commands.add_parser(
        "demo", help="the workflow on the example calculator with a scripted offline model (no key needed)"
    )
    demo_parser.add_argument(
        "--example", type=_folder, help="the example project (default: the calculator shipped in the package)"
    )
    demo_parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    undo_parser = commands.add_parser(
        "undo",
        help="take back a workflow run or Aider edit (the last by default), keeping every other change",
    )
    undo_parser.add_argument("run_id", nargs="?", help="the run to undo (`aider-lsp history` lists them)")
    undo_parser.add_argument("--workspace", type=_folder, default=Path.cwd())
    undo_parser.add_argument(
        "--force",
        action="store_true",
        help="put files back as before the run even where later changes overlap its own (discards them)",
    )
    undo_parser.add_argument(
        "--files",
        nargs="+",
        metavar="FILE",
        help="take back the run's change to these files only (workspace-relative; its tests, say)",
    )
    undo_parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    history_parser = commands.add_parser(
        "history", help="the workflow runs and Aider edits undo can take back"
    )
    history_parser.add_argument("--workspace", type=_folder, default=Path.cwd())
    history_parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    _add_run_decisions(commands)


def _add_run_decisions(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`apply`, `discard` and `keep`: what the user does with a ready isolated run."""
    decisions = {
        "apply": "lay a ready isolated run's change on your files (your edits made meanwhile stay); "
        "an attempt's ready siblings are discarded with it, and a group's id applies its winner",
        "discard": "throw a ready isolated run away (its worktree and branch are removed)",
        "keep": "commit a ready isolated run to its own git branch, leaving your files alone",
    }
    for name, help_text in decisions.items():
        decision = commands.add_parser(name, help=help_text)
        decision.add_argument("run_id", help="the run (`aider-lsp history` lists the ready ones)")
        decision.add_argument("--workspace", type=_folder, default=Path.cwd())
        if name == "apply":
            decision.add_argument(
                "--force",
                action="store_true",
                help="apply anyway where you changed the same lines (the run's version of those "
                "files wins; `aider-lsp undo RUN_ID` takes it back)",
            )
        decision.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


# how editors start the server: served without building the parser (argparse and its
# sub-commands cost ~15 ms of the time to answer `initialize`; bench/startup.py)
EDITOR_LAUNCHES = (["serve"], ["serve", "--stdio"])
ACP_LAUNCH = ["acp"]


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    own_entry = argv is None  # the process's own entry, not a caller's in its own process
    if arguments in EDITOR_LAUNCHES:
        _leave_start_folder(own_entry)
        _setup_logging(os.environ.get("AIDER_LSP_LOG_LEVEL") or "INFO")
        from .serve import serve

        return serve(None)
    if arguments == ACP_LAUNCH:
        _leave_start_folder(own_entry)
        _setup_logging(os.environ.get("AIDER_LSP_LOG_LEVEL") or "INFO")
        from .acp import serve_acp

        return serve_acp()
    args = build_parser().parse_args(arguments)  # folders given are absolute from here on
    _leave_start_folder(own_entry)
    terminal = args.command in ("run", "demo", "undo", "history", "apply", "discard", "keep")
    if terminal:  # pydantic-ai's banner would break the terminal's progress display
        os.environ.setdefault("PYDANTIC_AI_NO_BANNER", "1")
    quiet = terminal and not getattr(args, "debug", False)  # `run --debug` logs at INFO
    _setup_logging(args.log_level or ("WARNING" if quiet else "INFO"))
    try:
        code = _dispatch(args)
    except Exception as exc:  # the CLI's one boundary: a bug is logged, never a bare traceback
        logging.getLogger(__name__).debug("aider-lsp %s failed", args.command, exc_info=True)
        print(
            f"aider-lsp {args.command}: internal error: {exc} (--log-level DEBUG shows where)",
            file=sys.stderr,
        )
        return 1
    if own_entry and args.command == "run":
        exit_now(code)
    return code


def _leave_start_folder(own_entry: bool) -> None:
    """The process's own entry runs from a neutral folder (process_start.py: a repository's
    modules never load in our processes); a caller of `main([...])` keeps its folder."""
    if own_entry:
        from ..processes.process_start import leave_start_folder

        leave_start_folder()


def _folder(text: str) -> Path:
    """A path argument (a folder, a file) made absolute while the start folder is still the
    current one."""
    return Path(text).expanduser().absolute()


def exit_now(code: int) -> NoReturn:
    """End the process at once with `code`, after what an orderly exit must still do: the
    atexit handlers (logging's flush among them) and the flush of stdout and stderr.

    Why: when `run` returns, its children are stopped (`Application.aclose`), its threads
    joined (`asyncio.run`) and its result printed; what is left is the interpreter tearing
    down every module and object the run loaded (pydantic-ai, the index, the models): 1 to
    3 s on a cold run, measured (bench/cold_timeline.py), that the user waited for with the
    result already on screen. Only the process's own entry does it (`main()` without argv):
    a caller of `main([...])` in its own process gets the code back."""
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more to say
            pass
    os._exit(code)


def _dispatch(args: argparse.Namespace) -> int:
    """Run the parsed subcommand (each imports its module when it runs)."""
    runner = _RUNNERS.get(args.command)
    if runner is None:
        build_parser().print_help()
        return 2
    return runner(args)


def _serve(args: argparse.Namespace) -> int:
    from .serve import serve

    return serve(args.tcp)


def _acp(args: argparse.Namespace) -> int:
    from .acp import serve_acp

    return serve_acp()


def _doctor(args: argparse.Namespace) -> int:
    from .doctor import doctor

    return doctor(args.workspace)


def _login(args: argparse.Namespace) -> int:
    from .login import login

    return login(
        args.provider,
        args.model,
        args.aider_model,
        args.base_url,
        with_key=args.with_key,
        check=not args.no_check,
    )


def _setup_aider(args: argparse.Namespace) -> int:
    from .setup_aider import setup_aider

    return setup_aider(force=args.force)


def _context(args: argparse.Namespace) -> int:
    from .context import run_context

    index_path = str(args.index) if args.index else None
    return run_context(args.workspace, args.query, as_json=args.json, limit=args.limit, index_path=index_path)


def _run(args: argparse.Namespace) -> int:
    from .run import run_workflow_command

    fields = {
        "goal": args.goal,
        "context": args.context,
        "test_command": args.test,
        "max_retries": args.max_retries,
        "file_context": args.files,
        "plan": args.plan,
        "isolation": "worktree" if args.isolated else None,
        "attempts": args.attempts,
        "choose": args.choose,
        "aider_models": args.aider_model or [],
        "images": [str(image) for image in args.image or []],
    }
    return run_workflow_command(args.workspace, fields, as_json=args.json, debug=args.debug)


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(args.example, as_json=args.json)


def _undo(args: argparse.Namespace) -> int:
    from .history import undo_command

    return undo_command(args.workspace, args.run_id, force=args.force, as_json=args.json, files=args.files)


def _history(args: argparse.Namespace) -> int:
    from .history import history_command

    return history_command(args.workspace, as_json=args.json)


def _decide(args: argparse.Namespace) -> int:
    from .runs import decide_command

    force = getattr(args, "force", False)
    return decide_command(args.command, args.workspace, args.run_id, force=force, as_json=args.json)


_RUNNERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "serve": _serve,
    "acp": _acp,
    "doctor": _doctor,
    "login": _login,
    "setup-aider": _setup_aider,
    "context": _context,
    "run": _run,
    "demo": _demo,
    "undo": _undo,
    "history": _history,
    "apply": _decide,
    "discard": _decide,
    "keep": _decide,
}
