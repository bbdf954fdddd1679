"""The trackers' HTTP: one request with same-origin redirects only, TLS settings, the one
unwrap of a tracker credential into an ``Authorization`` header, failures in one shape."""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass
from functools import cache

from runner import __version__
from runner.secrets import Secret

BEGIN_TIMEOUT = 15.0  # seconds per request while creating / closing a run


UPLOAD_TIMEOUT = 60.0


@dataclass(frozen=True)
class Endpoint:
    """Where a tracker answers and how to authenticate; ``display`` is safe to print."""

    tracker: str
    base: str  # scheme://host[:port][/prefix], no credentials
    display: str
    scheme: str = "basic"  # basic | bearer | none
    user: str = ""
    secret: Secret | None = None
    insecure_tls: bool = False
    cafile: str | None = None


class HTTPFailure(Exception):
    """The tracker answered with an HTTP error (``status``) or not at all (``status`` 0)."""

    def __init__(self, status: int, detail: str, code: str = "", redirect: str = ""):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.code = code  # MLflow's error_code, e.g. RESOURCE_DOES_NOT_EXIST
        self.redirect = redirect  # scheme://host:port of a refused cross-origin redirect


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the scheme's default port filled in: what credentials are bound to."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port


def show_origin(url: str) -> str:
    scheme, host, port = origin(url)
    return f"{scheme}://{host}" + (f":{port}" if port else "")


@cache
def _handler_classes() -> tuple[type, type]:
    """The two urllib handlers, defined on first use: ``urllib.request`` (with ``ssl`` and ``http.client``)
    loads only in a command that talks to a tracker, not in every ``plan`` that reads tracker settings."""
    import urllib.request

    class SameOriginRedirects(urllib.request.HTTPRedirectHandler):
        """Follow a redirect only within the configured origin; urllib would resend Authorization anywhere (https -> http too)."""

        def redirect_request(self, req, fp, code, msg, headers, newurl):
            target = urllib.parse.urljoin(req.full_url, newurl)
            if origin(target) != origin(req.full_url):
                raise HTTPFailure(
                    code,
                    f"HTTP {code}: redirected to another origin, {show_origin(target)}; credentials are only sent to "
                    f"{show_origin(req.full_url)} (set the tracker URL to the address that answers, if you trust it)",
                    redirect=show_origin(target),
                )
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    class NoDefaultContentType(urllib.request.BaseHandler):
        """Drop the form Content-Type urllib adds to a body sent without one (after its own handler, order 500):
        a signed upload URL may have been signed without any."""

        handler_order = 900

        def http_request(self, req):
            req.unredirected_hdrs.pop("Content-type", None)
            return req

        https_request = http_request

    return SameOriginRedirects, NoDefaultContentType


def tls_context(ep: Endpoint) -> "ssl.SSLContext":
    import ssl

    context = ssl.create_default_context(cafile=ep.cafile) if ep.cafile else ssl.create_default_context()
    if ep.insecure_tls:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def authorization(ep: Endpoint) -> dict[str, str]:
    """THE unwrap of an endpoint's credential, into a header for a same-origin request."""
    if ep.secret is not None and ep.scheme == "bearer":
        return {"Authorization": "Bearer " + ep.secret.reveal()}
    if ep.secret is not None and ep.scheme == "basic":
        import base64

        pair = f"{ep.user}:{ep.secret.reveal()}".encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode()}
    return {}


def http_error(exc: "urllib.error.HTTPError") -> HTTPFailure:
    # Not cut short here: a secret the server echoes must reach the masker whole (it masks at print).
    text = exc.read(64 << 10).decode("utf-8", "replace") if exc.fp else ""
    code, message = "", text.strip()
    try:
        answer = json.loads(text)
        code, message = answer.get("error_code", ""), answer.get("message", message)
    except (ValueError, AttributeError):
        pass
    return HTTPFailure(exc.code, f"HTTP {exc.code}" + (f": {message}" if message else ""), code)


def request(ep: Endpoint, method: str, path: str, *, body=None, raw: bytes | None = None, timeout: float = BEGIN_TIMEOUT,
            headers: dict[str, str] | None = None, json_answer: bool = True):
    """One HTTP call; returns the decoded JSON answer (or ``{}``). ``headers`` replace the defaults (a signed
    upload URL takes exactly the headers it was signed with: ``{"Content-Type": ""}`` sends none)."""
    url = ep.base.rstrip("/") + path
    sent = {"User-Agent": f"primus-runner/{__version__}", "Accept": "application/json", **authorization(ep)}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        sent["Content-Type"] = "application/json"
    elif raw is not None:
        data = raw
        sent["Content-Type"] = "text/plain; charset=utf-8"
    sent.update(headers or {})
    headers = {k: v for k, v in sent.items() if v != ""}
    import urllib.error
    import urllib.request

    same_origin, no_default_type = _handler_classes()
    handlers: list = [same_origin()] + ([no_default_type()] if data is not None and "Content-Type" not in headers else [])
    if url.startswith("https:"):
        handlers.append(urllib.request.HTTPSHandler(context=tls_context(ep)))
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(urllib.request.Request(url, data=data, method=method, headers=headers), timeout=timeout) as response:
            payload = response.read()
    except urllib.error.HTTPError as exc:
        raise http_error(exc) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:  # refused, DNS, timeout, TLS
        reason = getattr(exc, "reason", exc)
        raise HTTPFailure(0, f"{type(reason).__name__}: {reason}" if str(reason) else type(reason).__name__) from None
    if not payload or not json_answer:
        return {}
    try:
        return json.loads(payload)
    except ValueError:
        raise HTTPFailure(200, "the answer is not JSON: is this the right URL?") from None


def truthy(value: str | None) -> bool:
    return str(value or "").strip().lower() in ("1", "true", "yes", "on")


def split_userinfo(uri: str) -> tuple[str, str, str | None]:
    """(uri without user:password@, user, password) so a URI never prints a password."""
    parts = urllib.parse.urlsplit(uri)
    if "@" not in parts.netloc:
        return uri.rstrip("/"), "", None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    clean = urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)).rstrip("/")
    return clean, urllib.parse.unquote(user), urllib.parse.unquote(password) if password else None


def status(tracker: str, status: str, detail: str) -> dict:
    return {"tracker": tracker, "status": status, "detail": detail}


def failure_status(exc: HTTPFailure) -> str:
    if exc.code == "NOT_INSTALLED":
        return "not-installed"
    return "unauthorised" if exc.status in (401, 403) else "unreachable"
