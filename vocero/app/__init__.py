"""Composition root: configuration, wiring of real adapters, the CLI and the HTTP app."""
