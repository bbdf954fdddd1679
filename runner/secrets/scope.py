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
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from runner.secrets.masker import Masker
from runner.secrets.value import Secret

_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:([^/\s@]+)@")


def url_passwords(value: str) -> list[Secret]:
    """Passwords embedded in URLs (``https://user:PASSWORD@host``) in a public value such as
    ``MLFLOW_TRACKING_URI`` or ``HTTPS_PROXY``: not secret by name, masked all the same."""
    found: list[Secret] = []
    for match in _URL_PASSWORD.finditer(value or ""):
        found.append(Secret(match.group(1)))
        decoded = urllib.parse.unquote(match.group(1))
        if decoded != match.group(1):
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
