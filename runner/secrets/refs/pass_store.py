"""``pass:path``: the first line of ``pass show path`` (the standard unix password store)."""

from __future__ import annotations

import os

from runner.secrets.refs.failures import Missing
from runner.secrets.refs.programs import first_line, output

FORM = "pass:path"


def target_problem(target: str) -> str | None:
    return None


def fetch(ref, lookup, timeout: float) -> str:
    # `pass show FOLDER` lists the folder and exits 0: its first line would pass for the value.
    store = os.environ.get("PASSWORD_STORE_DIR") or os.path.expanduser("~/.password-store")
    entry = os.path.join(store, ref.target.strip("/"))
    if os.path.isdir(entry) and not os.path.isfile(entry + ".gpg"):
        raise Missing("a folder of the password store, not an entry")
    # "--": a path starting with "-" is a path, not an option.
    return first_line(output(["pass", "show", "--", ref.target], timeout, "pass show"))
