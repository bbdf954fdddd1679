"""Clients of what runs outside the process: the Engine API, registries, git."""
