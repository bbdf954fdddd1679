"""One launch from options to exit code: prepare, pipeline, report."""
