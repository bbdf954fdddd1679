"""The secret scope: every secret value a command may hold, gathered in one place.

``secret_scope`` is the only function that decides which values are secret for
masking and auditing, and the only place a ``Masker`` is built. Every surface
the runner prints or writes (job output on the host and on each Slurm node,
errors, CI masks, image scans, audit, reports) takes the scope's masker, so
they cannot disagree about what must never appear.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Callable, Iterable, Mapping

from dataclasses import dataclass, field
from runner.secrets.masker import Masker
from runner.secrets.names import TOKEN_PREFIXES
from runner.secrets.value import Secret

_URL_START = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_NETLOC = re.compile(r"[^/?#\s\"'<>]*")


def _looks_like_token(user: str) -> bool:
    return user.startswith(TOKEN_PREFIXES) or len(user) >= 16


def url_credentials(value: str) -> list[str]:
    """The credential of every URL in ``value``, its userinfo parsed as ``urllib`` does.

    The password of ``user:password@`` (everything after the first colon, up to
    the last ``@``: ``alice:p@ss@host`` is ``p@ss``), or the user name when
    there is no password and it looks like a token (``https://ghp_…@github.com``:
    a known token prefix, or 16 characters and more), not a login such as
    ``git@`` or ``alice@``.
    """
    found = []
    for start in _URL_START.finditer(value or ""):
        netloc = _NETLOC.match(value, start.end()).group(0)
        userinfo, at, _ = netloc.rpartition("@")
        if not at or not userinfo:
            continue
        user, colon, password = userinfo.partition(":")
        credential = password if colon else (user if _looks_like_token(user) else "")
        if credential:
            found.append(credential)
    return found


def url_passwords(value: str) -> list[Secret]:
    """Credentials embedded in URLs (``https://user:PASSWORD@host``, ``https://TOKEN@host``) in a
    public value such as ``MLFLOW_TRACKING_URI`` or ``HTTPS_PROXY``: not secret by name, masked all the same."""
    found: list[Secret] = []
    for credential in url_credentials(value):
        found.append(Secret(credential))
        decoded = urllib.parse.unquote(credential)
        if decoded != credential:
            found.append(Secret(decoded))
    return found


@dataclass(frozen=True)
class SecretScope:
    """The named secret values in scope and the one masker built from them."""

    named: tuple[tuple[str, Secret], ...] = ()
    masker: Masker = field(default_factory=Masker)

    def values(self) -> list[Secret]:
        return [value for _, value in self.named]

    def names(self) -> list[str]:
        return sorted({name for name, _ in self.named})

    def __bool__(self) -> bool:
        return bool(self.named)


def secret_scope(
    sources: Iterable[Mapping[str, str]] = (),
    is_secret: Callable[[str], bool] = lambda name: False,
    *,
    public: Iterable[tuple[str, str]] = (),
    extra: Iterable[tuple[str, Secret | str]] = (),
) -> SecretScope:
    """Every secret value in scope, and the masker for them.

    - ``sources`` (the process environment, the env file): each variable whose
      name ``is_secret``, and the password of every URL in any of their values;
    - ``public``: other (NAME, value) pairs that will be shown or forwarded as
      public (config literals, computed variables): their URL passwords;
    - ``extra``: secrets known by other means (tracker and registry credentials,
      resolved secret references, a Slurm node's forwarded secrets).
    """
    named: dict[tuple[str, str], Secret] = {}

    def add(name: str, value: Secret | str) -> None:
        secret = value if isinstance(value, Secret) else Secret(value)
        if secret.reveal():
            named.setdefault((name, secret.reveal()), secret)

    def add_url_passwords(name: str, value: str) -> None:
        if value and "@" in value:
            for password in url_passwords(value):
                add(f"{name} (password in URL)", password)

    for source in sources:
        for name, value in source.items():
            if not value:
                continue
            if is_secret(name):
                add(name, value)
            add_url_passwords(name, value)
    for name, value in public:
        if isinstance(value, str):
            add_url_passwords(name, value)
    for name, value in extra:
        add(name, value)
    pairs = tuple((name, secret) for (name, _), secret in named.items())
    return SecretScope(pairs, Masker(pairs))
