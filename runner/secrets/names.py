"""What an environment variable name is: the one pattern every layer checks names with."""

from __future__ import annotations

import re

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
