"""The trackers: config (pure), overrides, the run clients."""
