"""The tools the registry runs: the one registry (registry.py: canonical ids such as
`aider:automatic` and their provider-safe aliases) and the direct tools it holds, executors
that run without an LLM template (aider.py: `aider:automatic`, `aider:interactive`;
context.py: `system:get_context`; system.py: `system:read_files`,
`system:execute_shell_command`).

Each executor validates its argument with the tool's model in models/args.py (the same model gives
the schema offered to an LLM) and answers a TaskResult; files that reach a model pass
`FileAccessManager.model_safe_files`."""
