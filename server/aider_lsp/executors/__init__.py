"""Direct tools: executors that the registry runs without an LLM template.

Each validates its argument with the tool's model in models.py (the same model gives the
schema offered to an LLM) and answers a TaskResult; files that reach a model pass
`FileAccessManager.model_safe_files`."""
