"""What an environment variable name is: the one pattern every layer checks names with."""

from __future__ import annotations

import re

NAME_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")  # \Z: "$" would also match before a final newline
# Variables that configure the runner itself (PRIMUS_RUNNER_TRUST_PROJECT, …): a repository may not
# set them and no rule forwards them into a job.
RUNNER_PREFIX = "PRIMUS_RUNNER_"


def is_runner_variable(name: str) -> bool:
    return name.upper().startswith(RUNNER_PREFIX)


# Known token shapes: a key or user name starting with one is a credential pasted in the wrong place.
TOKEN_PREFIXES = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "hf_", "xoxb-", "xoxp-")
# What a config key looks like (lowercase words); anything else in a message may be a pasted secret.
_KEY_SHAPE = re.compile(r"[a-z][a-z0-9]{0,15}([_-][a-z0-9]{1,15})*")
HIDDEN_KEY = "<key not shown>"
_SHORT = 8  # a key this short is a typo, not a credential: shown whatever its shape


def shown_key(key: object) -> str:
    """A mapping key as messages and CI annotations may print it: a key shaped like a config key
    (or a variable name), else ``HIDDEN_KEY`` (a token pasted as a key must not be echoed)."""
    text = str(key)
    if text.startswith(TOKEN_PREFIXES) or not (len(text) <= _SHORT or _KEY_SHAPE.fullmatch(text) or _NAME_SHAPE.fullmatch(text)):
        return HIDDEN_KEY
    return text


_NAME_SHAPE = re.compile(r"[A-Z][A-Z0-9]{0,11}(_[A-Z0-9]{1,12})*")  # HF_TOKEN, MLFLOW_TRACKING_URI: upper-case words
