"""Prints the server's JSON schemas for the protocol test (server.test.ts) to compare with the
extension's declarations: the argument of every command (src/protocol.ts) and every result model
(src/protocolResults.ts).

Run with the server's own Python, so these are the server's models:
{"arguments": {command id: {"schema": the argument model's JSON schema (lsp/commands.py's table),
                            "aliases": {other accepted name: property}}},
 "results": {model name: its JSON schema as the server writes it (serialization mode)}},
the results being every pydantic model aider_lsp.models exports, under its class name.
"""

import inspect
import json

from pydantic import AliasChoices, BaseModel

from aider_lsp import models
from aider_lsp.lsp.commands import COMMANDS


def aliases(model: type[BaseModel]) -> dict[str, str]:
    """Names a property is also accepted under (e.g. interactive's `prompt` for `query`); the
    schema names the property by its first choice."""
    found: dict[str, str] = {}
    for field in model.model_fields.values():
        if isinstance(field.validation_alias, AliasChoices):
            choices = [choice for choice in field.validation_alias.choices if isinstance(choice, str)]
            for other in choices[1:]:
                found[other] = choices[0]
    return found


def result_models() -> dict[str, type[BaseModel]]:
    """The models the server's answers are made of, by class name (what the client declares)."""
    return {
        name: value
        for name, value in vars(models).items()
        if inspect.isclass(value) and issubclass(value, BaseModel)
    }


print(
    json.dumps(
        {
            "arguments": {
                str(spec.id): {
                    "schema": spec.params_model.model_json_schema(),
                    "aliases": aliases(spec.params_model),
                }
                for spec in COMMANDS
            },
            "results": {
                name: model.model_json_schema(mode="serialization") for name, model in result_models().items()
            },
        }
    )
)
