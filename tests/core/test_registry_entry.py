"""The ACP Registry entry (registry/aider-lsp/: the registry names an agent's folder after its
id): valid against the registry's schema (a data file kept outside the project, in
../shared/acp-registry/), its version in lockstep with the package's, the `uvx` distribution
pinned to that version and starting the ACP agent, its icon the 16×16 `currentColor` SVG the
registry asks for."""

from __future__ import annotations

import json
import tomllib
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import jsonschema

from aider_lsp import __version__

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "registry" / "aider-lsp"
SCHEMA = ROOT.parent / "shared" / "acp-registry" / "agent.schema.json"


def entry() -> dict[str, object]:
    return json.loads((REGISTRY / "agent.json").read_text(encoding="utf-8"))


def test_the_entry_is_valid_against_the_registrys_schema() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.validate(entry(), schema)
    assert REGISTRY.name == entry()["id"]  # the folder is named after the id
    assert (REGISTRY / str(entry()["icon"])).is_file()


def test_its_version_and_package_move_with_the_packages() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    agent = entry()
    assert agent["version"] == project["version"] == __version__
    assert agent["distribution"] == {
        "uvx": {"package": f"{project['name']}=={project['version']}", "args": ["acp"]}
    }
    assert agent["license"] == project["license"]


def test_the_icon_is_16_by_16_in_the_editors_colour() -> None:
    svg = ElementTree.parse(REGISTRY / "icon.svg").getroot()
    assert svg.get("width") == "16" and svg.get("height") == "16" and svg.get("viewBox") == "0 0 16 16"
    text = (REGISTRY / "icon.svg").read_text(encoding="utf-8")
    assert "currentColor" in text and "#" not in text  # no fixed colour: the editor's theme colours it
