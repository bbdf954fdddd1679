"""Commands that are not a launch: check, audit, demo."""
