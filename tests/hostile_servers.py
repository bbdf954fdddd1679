"""Hostile HTTP(S) servers for the credential-origin tests: loopback only, recording every request.

``Server(answer)`` listens on 127.0.0.1 (plain http, or https with a
throw-away certificate for ``127.0.0.1`` and ``localhost`` from
:func:`make_cert`); ``answer(server, request)`` returns ``(status, headers,
body)``. Two servers on different ports (or 127.0.0.1 vs localhost) are two
origins. Requests are kept in ``server.requests`` (method, path, headers,
body) so a test can assert what each origin received.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class Cert:
    cert: Path
    key: Path


def make_cert(directory: Path) -> Cert:
    """A self-signed certificate for 127.0.0.1 and localhost (point SSL_CERT_FILE at ``cert`` to trust it)."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return Cert(cert, key)


Answer = Callable[["Server", dict], "tuple[int, dict, bytes | dict]"]


class Loopback:
    """A ``ThreadingHTTPServer`` on 127.0.0.1 (or ``address``: the Docker bridge's, for a build step to reach)
    serving ``handler`` (a request handler class) in a daemon thread: ``server``, ``port``, ``netloc``, ``url``
    (``https`` with ``tls``), ``close()``. ``Server`` and the tests' own stand-ins build on it."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], tls: Cert | None = None, host_name: str = "127.0.0.1",
                 address: str = "127.0.0.1"):
        self.server = ThreadingHTTPServer((address, 0), handler)
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls.cert, tls.key)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.netloc = f"{host_name}:{self.port}"
        self.url = f"{'https' if tls else 'http'}://{self.netloc}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Server(Loopback):
    def __init__(self, answer: Answer, tls: Cert | None = None, host_name: str = "127.0.0.1"):
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                request = {"method": self.command, "path": self.path, "headers": dict(self.headers),
                           "body": self.rfile.read(length)}
                outer.requests.append(request)
                status, headers, body = answer(outer, request)
                data = json.dumps(body).encode() if isinstance(body, dict) else body
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _answer

            def log_message(self, *args):
                pass

        super().__init__(Handler, tls, host_name)

    def raw(self) -> str:
        """Everything this server received, for a leak check."""
        return json.dumps(self.requests, default=lambda b: b.decode("utf-8", "replace"))


def json_answer(status: int = 200, body: dict | None = None) -> Answer:
    """Every request answered with ``status`` and ``body`` as JSON."""
    return lambda _server, _request: (status, {"Content-Type": "application/json"}, body or {})


def redirect_answer(target: str, status: int = 302) -> Answer:
    """Every request answered with a redirect to ``target`` + the same path."""
    return lambda _server, request: (status, {"Location": target + request["path"]}, b"")
