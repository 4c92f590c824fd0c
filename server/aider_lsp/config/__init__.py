"""Configuration and set-up: the settings and where they come from (the sign-in store, the
environment), the providers and their endpoints, Aider's own environment, the state folders."""
