"""Images in a prompt, as an ACP client sends them (a screenshot pasted in the chat): a real
agent subprocess, a real Aider, the scripted model server seeing what Aider sends."""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from test_acp import PNG, acp_agent, link, new_session, scripted_env

from acp import image_block, text_block
from aider_lsp_testing.calc_project import BUGGY, FIXED
from aider_lsp_testing.llm_server import IS_AIDER, aider_whole

PNG_DATA = base64.b64encode(PNG).decode()
PNG_URL = f"data:image/png;base64,{PNG_DATA}"


def _image_parts(request: dict[str, Any]) -> list[str]:
    """The image URLs a chat request carries (OpenAI's `image_url` content parts)."""
    urls = []
    for message in request.get("messages", []):
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "image_url":
                image = part["image_url"]
                urls.append(image["url"] if isinstance(image, dict) else image)
    return urls


def _leftover_image_folders() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("aider-lsp-images-*")}


async def test_initialize_offers_images(tmp_path: Path, llm_server: Any) -> None:
    async with acp_agent(scripted_env(llm_server.base_url), tmp_path / "agent.log") as (conn, _, _):
        answer = await conn.initialize(protocol_version=1)
    assert answer.agent_capabilities.prompt_capabilities.image is True


@pytest.mark.aider
async def test_a_pasted_image_reaches_a_vision_model_for_its_turn_only(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}))
    calc = calc_project / "calc.py"
    env = scripted_env(llm_server.base_url, AIDER_LSP_AIDER_MODEL="openai/gpt-4o")  # litellm: reads images
    folders_before = _leftover_image_folders()
    async with acp_agent(env, tmp_path / "agent.log") as (conn, client, _):
        session_id = await new_session(conn, calc_project)
        pasted = image_block(PNG_DATA, "image/png", uri="file:///home/me/expected-output.png")
        answer = await conn.prompt(
            session_id=session_id,
            prompt=[text_block("Make calc.py give what the screenshot shows"), pasted, link(calc)],
        )
        first_reply = client.reply()
        requests_after_first = len(llm_server.chat_requests())
        await conn.prompt(session_id=session_id, prompt=[text_block("Now tidy the names"), link(calc)])
    assert answer.stop_reason == "end_turn" and calc.read_text() == FIXED
    assert "Aider changed calc.py" in first_reply and "Not given to Aider" not in first_reply
    aider_requests = [r for r in llm_server.chat_requests() if IS_AIDER(r)]
    first, later = aider_requests[0], aider_requests[-1]
    assert _image_parts(first) == [PNG_URL]  # the model saw the image, as the user pasted it
    assert "expected-output.png" in json.dumps(first)  # named after the user's file
    assert (
        len(llm_server.chat_requests()) > requests_after_first and _image_parts(later) == []
    )  # not paid again
    assert _leftover_image_folders() <= folders_before  # the saved image went with its turn
    assert not list(calc_project.rglob("*.png"))  # nothing of it in the workspace


@pytest.mark.aider
async def test_an_image_for_a_model_that_reads_none_is_refused_by_name_before_any_request(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}))
    calc = calc_project / "calc.py"
    async with acp_agent(scripted_env(llm_server.base_url), tmp_path / "agent.log") as (conn, client, _):
        session_id = await new_session(conn, calc_project)
        pasted = image_block(PNG_DATA, "image/png", uri="file:///home/me/mockup.png")
        answer = await conn.prompt(
            session_id=session_id, prompt=[text_block("Match the mock-up"), pasted, link(calc)]
        )
    reply = client.reply()
    assert answer.stop_reason == "end_turn"
    assert "mockup.png: Aider's model openai/scripted-coder does not read images" in reply
    assert "aider_chat" not in reply  # the server's sentence for the user, as it is
    assert calc.read_text() == BUGGY
    assert [r for r in llm_server.chat_requests() if IS_AIDER(r)] == []  # nothing paid for
