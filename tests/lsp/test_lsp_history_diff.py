"""`aider-lsp.history.diff` over a real server: a past run's files as they were before the run and
after its last edit, what the editor's Runs view opens in the diff editor. The runs are recorded
on disk the way the executors record an Aider edit (no Aider needed), then the server reads them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aider_lsp_testing.lsp_session import execute
from aider_lsp_testing.recorded_edits import record_edit

LINES = "".join(f"line {n}\n" for n in range(1, 11))


def by_path(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["path"]: item for item in result["notes"]["files"]}


async def test_a_past_runs_files_before_and_after_it_even_after_a_later_run_and_its_undo(
    lsp: Any, tmp_path: Path
) -> None:
    (tmp_path / "a.py").write_text(LINES)
    (tmp_path / "gone.py").write_text("keep me\n")
    older = record_edit(
        tmp_path,
        "shout line 1",
        {"a.py": LINES.replace("line 1\n", "ONE\n").encode(), "new.py": b"x = 1\n", "gone.py": None},
    )
    after_older = (tmp_path / "a.py").read_text()
    record_edit(tmp_path, "shout line 8", {"a.py": after_older.replace("line 8\n", "EIGHT\n").encode()})
    async with lsp(tmp_path) as client:
        listed = await execute(client, "aider-lsp.history.list", {})
        assert [run["label"] for run in listed["notes"]["runs"]] == ["shout line 8", "shout line 1"]
        assert listed["notes"]["runs"][1]["id"] == older

        whole = await execute(client, "aider-lsp.history.diff", {"run_id": older})
        assert whole["status"] == "COMPLETE", whole["content"]
        files = by_path(whole)
        assert sorted(files) == ["a.py", "gone.py", "new.py"]
        assert (files["a.py"]["before"], files["a.py"]["after"]) == (LINES, after_older)
        assert files["new.py"]["existed_before"] is False and files["new.py"]["after"] == "x = 1\n"
        assert files["gone.py"]["before"] == "keep me\n" and files["gone.py"]["exists_after"] is False
        assert whole["notes"]["run"]["label"] == "shout line 1"

        # undone, and the file changed by the later run since: the diff is still the run's own
        assert (await execute(client, "aider-lsp.workflow.undo", {"run_id": older}))["status"] == "COMPLETE"
        one = await execute(client, "aider-lsp.history.diff", {"run_id": older, "path": "a.py"})
        assert [(f["path"], f["before"], f["after"]) for f in one["notes"]["files"]] == [
            ("a.py", LINES, after_older)
        ]
        assert one["notes"]["run"]["undone"] is not None


async def test_a_binary_file_is_named_not_shown_and_bad_requests_say_why(lsp: Any, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(LINES)
    (tmp_path / "logo.bin").write_bytes(b"\x00\x01old")
    run = record_edit(tmp_path, "edit", {"a.py": b"changed\n", "logo.bin": b"\x00\x02new"})
    async with lsp(tmp_path) as client:
        binary = await execute(client, "aider-lsp.history.diff", {"run_id": run, "path": "logo.bin"})
        assert binary["notes"]["files"] == [
            {
                "path": "logo.bin",
                "before": None,
                "after": None,
                "existed_before": True,
                "exists_after": True,
                "binary": True,
            }
        ]
        unknown = await execute(client, "aider-lsp.history.diff", {"run_id": "no-such-run"})
        assert unknown["status"] == "FAILED" and "no run 'no-such-run'" in unknown["content"]
        for odd in ["x" * 5000, "a\x00b"]:  # no folder can have these names: no such run, no traceback
            for command in ("aider-lsp.history.diff", "aider-lsp.workflow.undo"):
                answer = await execute(client, command, {"run_id": odd})
                assert answer["notes"]["error"]["reason"] == "input_validation_failure", answer["content"]
        other = await execute(client, "aider-lsp.history.diff", {"run_id": run, "path": "b.py"})
        assert other["status"] == "FAILED"
        assert "did not change 'b.py'" in other["content"] and "a.py, logo.bin" in other["content"]
