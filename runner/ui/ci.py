"""CI integration: GitHub Actions masks, annotations, groups and step summary; GitLab sections.

Masks: the runner masks everything it prints itself, and GitHub Actions already
hides the values of ``${{ secrets.* }}``. For values GitHub cannot know (an env
file, a secret reference resolved from a vault), ``PRIMUS_RUNNER_ADD_MASK=1``
makes the runner first print ``::add-mask::VALUE`` for each: the one place a
value is printed on purpose, for the Actions runner to consume. It is opt-in
because those lines hold the values: a step that tees its output to a file
(``… 2>&1 | tee job.log``) and uploads it would publish them. The lines go to
each stream that is not a regular file (never into a redirected file) and never
to stdout with ``--json``. Annotations go to stderr.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import time
from typing import TYPE_CHECKING, Iterable, Iterator

from runner.secrets import Secret
from runner.secrets.masker import MIN_SECRET_LEN

if TYPE_CHECKING:
    from runner.errors import Problem
    from runner.secrets import Masker

# Digests (never values) of the secrets already registered in this process.
_registered: set[bytes] = set()
_enabled = True
_json_stdout = False  # set from --json: stdout carries a JSON document only


def github_actions() -> bool:
    return _enabled and os.environ.get("GITHUB_ACTIONS", "").lower() == "true"


def gitlab_ci() -> bool:
    return _enabled and os.environ.get("GITLAB_CI", "").lower() == "true"


def in_ci() -> bool:
    """Any CI: no colour, no interactive progress, no prompts."""
    return os.environ.get("CI", "").lower() in ("true", "1") or github_actions() or gitlab_ci()


def set_json_stdout(on: bool) -> None:
    """``--json``: stdout carries one JSON document, so no ``::add-mask::`` line goes there."""
    global _json_stdout
    _json_stdout = on


def disable() -> None:
    """Turn CI integration off for this process (the Slurm node agent: its output lands in files)."""
    global _enabled
    _enabled = False


# -- masks ------------------------------------------------------------------
def register_masks(secrets: Iterable[Secret | str]) -> None:
    """Emit ``::add-mask::`` once per value, before any other output that could carry it.

    Each value is registered with its encodings (base64, URL, JSON-escaped) and,
    for multi-line values, line by line: the Actions masker matches per line.
    """
    if not add_masks_enabled():
        return
    from runner.secrets import encodings

    lines: list[str] = []
    for secret in secrets:
        value = secret.reveal() if isinstance(secret, Secret) else secret
        if not value or not value.strip() or len(value.encode("utf-8", "surrogateescape")) < MIN_SECRET_LEN:
            continue  # too short to mask: GitHub would hide every "1" or "true" in the log
        forms = {form.decode("utf-8", "surrogateescape") if isinstance(form, bytes) else form for form in encodings(value)}
        forms.update(part for part in value.splitlines() if part.strip())
        for form in sorted(forms):
            digest = hashlib.sha256(form.encode("utf-8", "surrogateescape")).digest()
            if digest in _registered:
                continue
            _registered.add(digest)
            lines.append(f"::add-mask::{_escape_data(form)}")  # the Actions runner decodes %25, %0D, %0A
    if lines:
        text = "".join(line + "\n" for line in lines)
        if _stdout_takes_masks():
            sys.stdout.write(text)
        sys.stdout.flush()
        if not _is_regular_file(sys.stderr):
            sys.stderr.write(text)
        sys.stderr.flush()


ADD_MASK_ENV = "PRIMUS_RUNNER_ADD_MASK"


def add_masks_enabled() -> bool:
    """``::add-mask::`` lines only under GitHub Actions and only when asked for (see the module doc)."""
    return github_actions() and os.environ.get(ADD_MASK_ENV, "").lower() in ("1", "true", "yes")


def _is_regular_file(stream) -> bool:
    import stat

    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


def _stdout_takes_masks() -> bool:
    return not _json_stdout and not _is_regular_file(sys.stdout)


# -- workflow commands in printed text ---------------------------------------
_ZWSP = "\u200b"  # not whitespace to the Actions runner: a line starting with it is not a command


def neutralise(text: str) -> str:
    """Under GitHub Actions, text the runner prints (a tracker's, registry's or engine's words
    among it) cannot carry a workflow command: a line starting with ``::`` (after blanks)
    and a legacy ``##[`` anywhere are broken up. Elsewhere the text is unchanged."""
    if not github_actions() or ("::" not in text and "##[" not in text):
        return text
    parts = re.split(r"(\r\n|\r|\n)", text)  # the runner reads lines as .NET does: \r ends one too
    for index in range(0, len(parts), 2):
        line = parts[index]
        stripped = line.lstrip()
        if stripped.startswith("::"):
            line = line[: len(line) - len(stripped)] + ":" + _ZWSP + stripped[1:]
        parts[index] = line.replace("##[", "#" + _ZWSP + "#[")
    return "".join(parts)


# -- annotations ------------------------------------------------------------
def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace("##[", "#" + _ZWSP + "#[")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def split_where(where: str | None) -> tuple[str | None, int | None]:
    """``file:line`` -> (file relative to the workspace when inside it, line)."""
    if not where:
        return None, None
    path, sep, line = where.rpartition(":")
    if not sep or not line.isdigit():
        path, line = where, ""
    if path.startswith("command line") or not path:
        return None, None
    base = os.environ.get("GITHUB_WORKSPACE") or os.environ.get("CI_PROJECT_DIR") or os.getcwd()
    try:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(base))
        if not rel.startswith(".."):
            path = rel
    except ValueError:
        pass
    return path, int(line) if line else None


def annotation(level: str, message: str, where: str | None = None, title: str | None = None) -> str:
    """One GitHub workflow command: ``::error file=F,line=L,title=T::message``."""
    props = []
    path, line = split_where(where)
    if path:
        props.append(f"file={_escape_property(path)}")
        if line:
            props.append(f"line={line}")
    if title:
        props.append(f"title={_escape_property(title)}")
    head = f"::{level} {','.join(props)}::" if props else f"::{level}::"
    return head + _escape_data(message)


def annotate(level: str, message: str, where: str | None = None, title: str | None = None) -> bool:
    """Print an annotation under GitHub Actions (stderr); False elsewhere, so callers print plainly."""
    if not github_actions():
        return False
    sys.stdout.flush()
    print(annotation(level, message, where, title), file=sys.stderr, flush=True)
    return True


def report_problems(problems: Iterable["Problem"], masker: "Masker | None" = None) -> bool:
    """Config problems as ``::error file=…,line=…::`` annotations; False when not under Actions."""
    if not github_actions():
        return False
    mask = masker.mask if masker else (lambda s: s)
    for problem in problems:
        text = problem.message + (f" (fix: {problem.hint})" if problem.hint else "")
        annotate("error", mask(text), problem.where, "primus-runner")
    return True


# -- groups / sections -------------------------------------------------------
_SECTION_RE = re.compile(r"[^a-z0-9_.-]+")


@contextlib.contextmanager
def group(title: str, stream=None) -> Iterator[None]:
    """Fold long output (the job's) into a collapsible group in the CI log.

    GitHub: ``::group::``/``::endgroup::``; GitLab: ``section_start``/``section_end``.
    Written to ``stream`` (default stdout, where job output goes) so markers and
    output stay in order.
    """
    stream = stream or sys.stdout
    title = title.replace("\r", " ").replace("\n", " ")
    name = ""
    if github_actions():
        _write(stream, f"::group::{title}\n")
    elif gitlab_ci():
        name = (_SECTION_RE.sub("_", title.lower()).strip("_") or "primus")[:40] + f"_{os.getpid()}"
        _write(stream, f"\x1b[0Ksection_start:{int(time.time())}:{name}[collapsed=true]\r\x1b[0K{title}\n")
    try:
        yield
    finally:
        if github_actions():
            _write(stream, "\n::endgroup::\n")
        elif gitlab_ci():
            _write(stream, f"\n\x1b[0Ksection_end:{int(time.time())}:{name}\r\x1b[0K\n")


def _write(stream, text: str) -> None:
    for other in (sys.stdout, sys.stderr):
        other.flush()
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        buffer.write(text.encode())
        buffer.flush()
    else:
        stream.write(text)
        stream.flush()


# -- step summary -------------------------------------------------------------
def safe_link(url: str) -> str:
    """A run link without credentials (``https://user:pass@host`` -> ``https://host``)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.username is not None or parts.password is not None:
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return url
