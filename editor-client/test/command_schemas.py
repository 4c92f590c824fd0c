"""Prints the argument schema of every server command, as the server validates it, for the
protocol test (server.test.ts) to compare with src/protocol.ts.

Run with the server's own Python, so these are the server's models (lsp/commands.py's table):
{command id: {"schema": the model's JSON schema, "aliases": {other accepted name: property}}}.
"""

import json

from pydantic import AliasChoices, BaseModel

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


print(
    json.dumps(
        {
            str(spec.id): {
                "schema": spec.params_model.model_json_schema(),
                "aliases": aliases(spec.params_model),
            }
            for spec in COMMANDS
        }
    )
)
