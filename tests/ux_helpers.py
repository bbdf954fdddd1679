"""Constants the CLI tests share: the repository's root and an engine address nothing answers on.
(Tests run the CLI with ``run_cli`` from tests/cli_runner.py, or the ``cli`` fixture.)"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NO_DOCKER = "unix:///nonexistent/docker.sock"
