"""Where a credential may travel: origins (scheme, host, port) and the rules for sending one.

A credential is bound to the origin the user configured. A server's answer
(a redirect, a token realm, an artifact location) is data the server controls,
so it may move the request elsewhere only under these rules:

- a redirect keeps the credential only when it stays on the same origin;
- nothing is ever sent over plain http once the configured server was https
  (no downgrade), and plain http at all only between loopback addresses when
  the configured server is itself plain http on loopback.
"""

from __future__ import annotations

import ipaddress
import urllib.parse

DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the scheme's default port filled in."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port


def show_origin(url: str) -> str:
    scheme, host, port = origin(url)
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}" + (f":{port}" if port else "")


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (``host`` without a port, brackets allowed)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def same_origin(a: str, b: str) -> bool:
    return origin(a) == origin(b)


def transport_refusal(configured: str, url: str) -> str | None:
    """Why ``url`` may not receive a credential configured for ``configured`` (None: it may).

    https anywhere is fine (a token realm on another https host is normal);
    plain http only from a plain-http loopback server to a loopback address.
    """
    scheme, host, _ = origin(url)
    if scheme == "https":
        return None
    first_scheme, first_host, _ = origin(configured)
    if scheme != "http":
        return f"{show_origin(url)} is not an http(s) address"
    if first_scheme == "https":
        return f"{show_origin(url)} is plain http and {show_origin(configured)} was reached over https (no downgrade)"
    if not (is_loopback(first_host) and is_loopback(host)):
        return f"{show_origin(url)} is plain http; credentials travel over plain http only on loopback"
    return None
