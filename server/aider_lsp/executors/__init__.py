"""Direct tools: executors that the registry runs without an LLM template."""
