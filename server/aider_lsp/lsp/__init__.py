"""The LSP layer: translates the protocol into Application calls."""
