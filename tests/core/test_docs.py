"""The docs held to the code (issue 54): README.md and docs/*.md cannot drift from what they describe.

- every relative link and image resolves (a file in the repository; an `#anchor` names a heading
  of the Markdown file it points at);
- every setting of the settings model (settings.py) and every setting the VS Code extension
  contributes (editor-client/package.json) has its line in docs/configuration.md, and every
  setting the docs name exists (with the variable the code derives for it);
- every LSP command the server registers has its row in the command table of docs/lsp.md, with
  the fields its argument model offers, and every command the docs name exists;
- the landing page keeps its two set-up commands and links every guide; the doctor's lines and
  the benches each have their place in their guide.

The lists come from the code (the settings model, pygls' command registry, package.json, the
doctor's checks, bench/), never from a list kept here.
"""

from __future__ import annotations

import ast
import json
import re
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from pydantic import AliasChoices, BaseModel
from pydantic.alias_generators import to_camel

from aider_lsp.config.settings import ENV_PREFIX, SECTION, Settings, setting_name
from aider_lsp.lsp.commands import COMMANDS
from aider_lsp.lsp.server import server as language_server

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
CONFIGURATION = DOCS / "configuration.md"
COMMAND_TABLE = DOCS / "lsp.md"
TROUBLESHOOTING = DOCS / "troubleshooting.md"
BENCHMARKS = DOCS / "benchmarks.md"
PACKAGE_JSON = ROOT / "editor-client" / "package.json"
# where a documented AIDER_LSP_* variable that is not a setting must be read (the scripts, the
# extension, the end-to-end suite, the benches)
CODE_DIRS = (
    "server",
    "editor-client/src",
    "editor-client/e2e",
    "editor-client/test",
    "scripts",
    "bench",
    ".ci",
)
CODE_SUFFIXES = {".py", ".ts", ".mjs", ".js", ".sh", ""}
README_MAX_LINES = 150


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)


def prose(text: str) -> str:
    """The text without its fenced code blocks (a `# comment` there is no heading, a `[x](y)` no link)."""
    return FENCE.sub("", text)


# ---------------------------------------------------------------------------------------------
# (a) links, images and anchors

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces → `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(prose(path.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def links(path: Path) -> list[str]:
    return LINK.findall(prose(path.read_text(encoding="utf-8")))


def broken_link(source: Path, target: str) -> str | None:
    """Why `target` (as written in `source`) does not resolve, or None."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # https:, mailto: …
        return None
    where, _, anchor = target.partition("#")
    file = (source.parent / where).resolve() if where else source
    if not file.is_relative_to(ROOT):
        return f"{target}: outside the repository"
    if not file.exists():
        return f"{target}: no such file"
    if anchor:
        if file.suffix != ".md":
            return f"{target}: an anchor into a file that is not Markdown"
        if anchor not in anchors(file):
            return f"{target}: no heading #{anchor} in {relative(file)}"
    return None


@pytest.mark.parametrize("path", markdown_files(), ids=relative)
def test_every_relative_link_and_image_resolves(path: Path) -> None:
    broken = [problem for target in links(path) if (problem := broken_link(path, target))]
    assert broken == [], f"{relative(path)}: {broken}"


def test_the_link_check_sees_links_images_and_anchors() -> None:
    """The check above passes vacuously if it finds nothing: it finds the README's picture and
    links, a guide's anchors, and it catches what is broken."""
    readme_targets = links(README)
    assert any(target.startswith("docs/images/") for target in readme_targets)
    assert "docs/configuration.md" in readme_targets
    assert "the-settings" in anchors(CONFIGURATION)
    assert slug("Commands (`workspace/executeCommand`)") == "commands-workspaceexecutecommand"
    assert slug("Neovim, avante.nvim") == "neovim-avantenvim"
    assert broken_link(README, "docs/nowhere.md")
    assert broken_link(README, "docs/configuration.md#nowhere")
    assert broken_link(README, "docs/configuration.md#the-settings") is None
    assert broken_link(README, "https://example.invalid/x") is None


def test_the_readme_is_a_landing_page_that_links_every_guide() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    linked = {(README.parent / target.partition("#")[0]).resolve() for target in links(README)}
    unlinked = [relative(guide) for guide in sorted(DOCS.glob("*.md")) if guide.resolve() not in linked]
    assert unlinked == [], "guides the README does not link"
    assert any(target.startswith("docs/images/") and target.endswith(".png") for target in links(README))


def test_the_readme_keeps_its_two_set_up_commands() -> None:
    """A newcomer on a fresh machine runs one command for the main job and one for every test;
    CI (.ci/run) runs that same test command."""
    blocks = re.findall(r"^```sh\n(.*?)^```", README.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)
    commands = [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]
    assert "./scripts/run" in commands and "./scripts/test" in commands
    assert "bash scripts/test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for script in ("run", "test"):
        assert (ROOT / "scripts" / script).is_file()


# ---------------------------------------------------------------------------------------------
# (b) settings

SETTING_ROW = re.compile(r"^\|\s*`([A-Za-z]\w*)`\s*\|\s*`(" + ENV_PREFIX + r"\w+)`\s*\|", re.MULTILINE)
CLIENT_SETTING_ROW = re.compile(r"^\|\s*`" + SECTION + r"\.([\w.]+)`\s*\|", re.MULTILINE)
SETTING_MENTION = re.compile(SECTION + r"\.([A-Za-z][\w.]*\w)")
VARIABLE_MENTION = re.compile(ENV_PREFIX + r"[A-Z0-9][A-Z0-9_]*[A-Z0-9]")


def server_settings() -> dict[str, str]:
    """Each setting of the model as the editor names it (`baseUrl`) → its field (`base_url`)."""
    return {
        setting_name(name, "editor").removeprefix(SECTION + "."): name
        for name, field in Settings.model_fields.items()
        if not field.exclude
    }


def contributed_settings() -> list[str]:
    """The extension's settings, without the section: `model`, `server.path`, …"""
    configuration = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))["contributes"]["configuration"]
    sections = configuration if isinstance(configuration, list) else [configuration]
    return [key.removeprefix(SECTION + ".") for section in sections for key in section["properties"]]


def client_only_settings() -> list[str]:
    return [key for key in contributed_settings() if key not in server_settings()]


def documented_settings() -> list[tuple[str, str]]:
    return SETTING_ROW.findall(CONFIGURATION.read_text(encoding="utf-8"))


def test_every_setting_of_the_model_has_its_line_in_the_configuration_guide() -> None:
    documented = [name for name, _ in documented_settings()]
    missing = sorted(set(server_settings()) - set(documented))
    unknown = sorted(set(documented) - set(server_settings()))
    twice = sorted({name for name in documented if documented.count(name) > 1})
    assert {"no line in docs/configuration.md": missing, "documented, not in the model": unknown} == {
        "no line in docs/configuration.md": [],
        "documented, not in the model": [],
    }
    assert twice == [], "settings documented twice"


def test_each_documented_variable_is_the_settings_own() -> None:
    fields = server_settings()
    wrong = [
        (name, variable)
        for name, variable in documented_settings()
        if name in fields and variable != setting_name(fields[name], "environment")
    ]
    assert wrong == []


def test_every_setting_the_extension_contributes_is_documented_and_real() -> None:
    """The extension contributes the server's settings (which the table above holds) and its
    own (`server.*`), which have their own rows; a documented extension setting exists."""
    text = CONFIGURATION.read_text(encoding="utf-8")
    own_rows = CLIENT_SETTING_ROW.findall(text)
    assert client_only_settings(), "the extension contributes settings of its own (server.path, …)"
    missing = sorted(set(client_only_settings()) - set(own_rows))
    unknown = sorted(set(own_rows) - set(contributed_settings()))
    assert {"no line in docs/configuration.md": missing, "documented, not in package.json": unknown} == {
        "no line in docs/configuration.md": [],
        "documented, not in package.json": [],
    }


def field_type(model: type[BaseModel], part: str) -> tuple[bool, Any]:
    """Whether `model` has the setting `part` (camel or snake), and its type."""
    for name, field in model.model_fields.items():
        if part in (name, to_camel(name)):
            return True, field.annotation
    return False, None


def nested_model(annotation: Any) -> type[BaseModel] | None:
    candidates = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def is_setting(path: list[str]) -> bool:
    """`timeouts.llm`, `aiderServer.env.MY_VAR`, `budget.maxTokens`: a path into the settings model."""
    model: type[BaseModel] | None = Settings
    for index, part in enumerate(path):
        if model is None:
            return False
        found, annotation = field_type(model, part)
        if not found:
            return False
        if typing.get_origin(annotation) is dict:  # a mapping's keys are the user's
            return True
        model = nested_model(annotation)
        if model is None and index < len(path) - 1:
            return False
    return True


def unknown_setting_mentions(text: str) -> list[str]:
    contributed = set(contributed_settings())
    return sorted(
        {
            f"{SECTION}.{mention}"
            for mention in SETTING_MENTION.findall(text)
            if mention not in contributed and not is_setting(mention.split("."))
        }
    )


@pytest.mark.parametrize("path", markdown_files(), ids=relative)
def test_every_setting_the_docs_name_exists(path: Path) -> None:
    assert unknown_setting_mentions(path.read_text(encoding="utf-8")) == []


@cache
def code_text() -> str:
    texts = []
    for folder in CODE_DIRS:
        for file in (ROOT / folder).rglob("*"):
            generated = any(part == "node_modules" or part.endswith(".egg-info") for part in file.parts)
            if file.is_file() and file.suffix in CODE_SUFFIXES and not generated:
                texts.append(file.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(texts)


def is_known_variable(variable: str) -> bool:
    """A setting's variable (`AIDER_LSP_TIMEOUTS__LLM` too), or one the code reads."""
    parts = variable.removeprefix(ENV_PREFIX).lower().split("__")
    return is_setting(parts) or re.search(re.escape(variable) + r"(?!\w)", code_text()) is not None


@pytest.mark.parametrize("path", markdown_files(), ids=relative)
def test_every_variable_the_docs_name_exists(path: Path) -> None:
    mentioned = set(VARIABLE_MENTION.findall(path.read_text(encoding="utf-8")))
    assert sorted(variable for variable in mentioned if not is_known_variable(variable)) == []


def test_the_setting_checks_see_what_is_wrong() -> None:
    assert is_setting(["timeouts", "llm"]) and is_setting(["aiderServer", "env", "MY_VAR"])
    assert is_setting(["budget", "maxTokens"]) and not is_setting(["timeouts", "nowhere"])
    assert unknown_setting_mentions("set `aiderLsp.modelName` or `aiderLsp.model`") == ["aiderLsp.modelName"]
    assert is_known_variable("AIDER_LSP_TIMEOUTS__LLM") and is_known_variable("AIDER_LSP_E2E_CACHE")
    assert not is_known_variable("AIDER_LSP_NO_SUCH_THING")


# ---------------------------------------------------------------------------------------------
# (c) LSP commands

COMMAND_ROW = re.compile(r"^\|\s*`(aider-lsp\.[\w.]+)`\s*\|(.*)\|\s*$", re.MULTILINE)
COMMAND_MENTION = re.compile(r"aider-lsp(?:\.[a-z][A-Za-z]*){2,}")
ARGUMENT = re.compile(r"^\s*`\{([^`]*)\}`")


def registered_commands() -> set[str]:
    """The command ids pygls was given (its feature manager's registry), as the server offers them
    in its initialize answer."""
    return {str(command) for command in language_server.protocol.fm.commands}


def documented_commands() -> dict[str, str]:
    rows = COMMAND_ROW.findall(COMMAND_TABLE.read_text(encoding="utf-8"))
    ids = [command for command, _ in rows]
    assert len(ids) == len(set(ids)), "a command with two rows"
    return dict(rows)


def test_every_registered_command_has_its_row_in_the_command_table() -> None:
    registered = registered_commands()
    assert "aider-lsp.workflow.run" in registered  # the registry is the one the server answers from
    documented = set(documented_commands())
    assert {
        "no row in docs/lsp.md": sorted(registered - documented),
        "not offered": sorted(documented - registered),
    } == {
        "no row in docs/lsp.md": [],
        "not offered": [],
    }


def client_commands() -> set[str]:
    package = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))
    return {command["command"] for command in package["contributes"].get("commands", [])}


@pytest.mark.parametrize("path", markdown_files(), ids=relative)
def test_every_command_the_docs_name_exists(path: Path) -> None:
    """A server command, or a client command the VS Code extension contributes."""
    known = registered_commands() | client_commands()
    mentioned = set(COMMAND_MENTION.findall(prose(path.read_text(encoding="utf-8"))))
    assert sorted(mentioned - known) == []


def documented_fields(cell: str) -> dict[str, bool]:
    """`{prompt, file_context?, a\\|b}` → {name: optional} for each name (alternatives apart)."""
    match = ARGUMENT.match(cell)
    assert match, f"the argument cell does not start with `{{…}}`: {cell[:60]}"
    fields: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in match.group(1).split(","))):
        optional = item.endswith("?")
        for name in re.split(r"\\?\|", item.removesuffix("?")):
            fields[name.strip()] = optional
    return fields


def accepted_names(model: type[BaseModel]) -> set[str]:
    names = set()
    for name, field in model.model_fields.items():
        names.add(name)
        alias = field.validation_alias
        if isinstance(alias, AliasChoices):
            names.update(choice for choice in alias.choices if isinstance(choice, str))
        elif isinstance(alias, str):
            names.add(alias)
    return names


def test_each_rows_argument_matches_the_commands_argument_model() -> None:
    """The fields a row names are fields the command takes; every field its schema offers and
    every required one is named, a required one without `?` and an optional one with it."""
    rows = documented_commands()
    problems = []
    for spec in COMMANDS:
        if spec.id not in rows:
            continue  # the test above says so
        fields = documented_fields(rows[spec.id])
        model = spec.params_model
        offered = set(model.model_json_schema().get("properties", {}))
        required = {name for name, field in model.model_fields.items() if field.is_required()}
        if unknown := set(fields) - accepted_names(model):
            problems.append(f"{spec.id}: {sorted(unknown)} not in its argument model")
        if missing := {name for name in offered | required if name not in fields}:
            problems.append(f"{spec.id}: {sorted(missing)} not named in its row")
        for name, optional in fields.items():
            if name in required and optional:
                problems.append(f"{spec.id}: {name} is required, written with ?")
            if name in model.model_fields and name not in required and not optional:
                problems.append(f"{spec.id}: {name} is optional, written without ?")
    assert problems == []


def test_the_argument_check_reads_a_row() -> None:
    assert documented_fields("`{prompt\\|query, file_context?}` — a chat") == {
        "prompt": False,
        "query": False,
        "file_context": True,
    }
    assert documented_fields("`{}` — nothing") == {}


# ---------------------------------------------------------------------------------------------
# the doctor's lines, the benches


def doctor_check_names() -> set[str]:
    """The name of every line `aider-lsp doctor` prints with a fixed name (`Check("model", …)`)."""
    tree = ast.parse((ROOT / "server/aider_lsp/cli/doctor.py").read_text(encoding="utf-8"))
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Check"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }


def test_every_line_of_the_doctor_is_in_the_troubleshooting_guide() -> None:
    names = doctor_check_names()
    assert {"model", "api key", "aider environment"} <= names
    rows = re.findall(r"^\|\s*`([^`]+)`", TROUBLESHOOTING.read_text(encoding="utf-8"), re.MULTILINE)
    assert sorted(names - set(rows)) == [], "doctor lines with no row in docs/troubleshooting.md"


def test_every_bench_is_in_the_benchmarks_guide() -> None:
    text = BENCHMARKS.read_text(encoding="utf-8")
    benches = [path for path in sorted((ROOT / "bench").iterdir()) if path.suffix == ".py" or path.is_dir()]
    benches = [path for path in benches if not path.name.startswith(("_", "."))]
    assert benches
    assert [relative(path) for path in benches if f"{relative(path)}" not in text] == []
