"""The allowlist of what an untrusted project file may set, driven from outside: a cloned
repository's ``.primus.yaml`` and ``./.env``, the CLI run in it, a hostile TLS server on
127.0.0.1 that records every request."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from cli_runner import run_in_clone
from engine_fixtures import assert_no_leak
from loopback_servers import make_cert

from runner.config import untrusted

DOCS = Path(__file__).resolve().parents[3] / "docs" / "security.md"


def run(repo: Path, *args: str, env: dict | None = None):
    return run_in_clone(repo, *args, env={"DOCKER_HOST": "unix:///nonexistent/docker.sock", **(env or {})})


def _schema_leaves(node: dict, path: tuple = ()):
    """Every key path the schema defines down to a value (``[]`` for a list's items, ``*`` for any key)."""
    if "properties" in node:
        for key, child in node["properties"].items():
            yield from _schema_leaves(child, path + (key,))
    elif isinstance(node.get("additionalProperties"), dict):
        yield from _schema_leaves(node["additionalProperties"], path + ("*",))
    elif node.get("type") == "array":
        yield path + ("[]",)
    else:
        yield path


def _sample(path: tuple):
    """A document that sets ``path`` (``*`` as a made-up key, ``[]`` as a one-item list)."""
    value: object = "x"
    for part in reversed(path):
        value = [value] if part == "[]" else {("some_key" if part == "*" else part): value}
    return value


def test_every_key_of_the_schema_is_on_the_table_or_an_ask(tmp_path):
    """By construction: a key the schema gains is an ask until the table lists it."""
    schema = json.loads((Path(untrusted.__file__).parents[1] / "_policies" / "config.schema.json").read_text())
    listed = [tuple(p.replace("[]", ".[]").split(".")) for p in untrusted.ALLOWED]

    def on_the_table(path):
        return any(len(p) == len(path) and all(a in (b, "*") for a, b in zip(p, path)) for p in listed)

    at = untrusted.Where(tmp_path / ".primus.yaml", tmp_path)
    leaves = list(_schema_leaves(schema))
    assert len(leaves) > 100
    for path in leaves:
        asked = [why for _, why in untrusted.asks(_sample(path), at)]
        if not on_the_table(path):
            assert asked == [untrusted.NOT_LISTED], path
        else:
            assert untrusted.NOT_LISTED not in asked, path


def test_the_documented_table_is_the_module_table():
    text = DOCS.read_text()
    section = text.split("| key | kind of value |", 1)[1].split("\n\n", 1)[0]  # the table, to its blank line
    rows = dict(re.findall(r"^\| `([^`]+)` \| (.+?) \|$", section, re.M))
    assert rows == {pattern: kind for pattern, kind in untrusted.table()}


def test_trust_show_lists_every_key_outside_the_allowlist_with_its_line(clone):
    (clone / ".primus.yaml").write_text(
        "container:\n"
        "  secrets_via: env\n"                          # 2
        "  options:\n"
        "    image: busybox\n"
        "    env: [HF_TOKEN, 'MLFLOW_TRACKING_INSECURE_TLS=true', PRIMUS_RUNNER_TRUST_PROJECT]\n"  # 5
        "cache:\n"
        "  dir: ~/.ssh\n"                                # 7
        "slurm:\n"
        "  allow_env_in_accounting: true\n"              # 9
        "secrets:\n"
        "  HF_TOKEN: 'cmd:./steal'\n")                   # 11
    shown = run(clone, "--json", "trust", "--show")
    assert shown.returncode == 0, shown.stderr
    asks = json.loads(shown.stdout)["files"][0]["asks"]
    where = str(clone / ".primus.yaml")
    expected = {"container.secrets_via": 2, "container.options.env[1]": 5, "container.options.env[2]": 5,
                "cache.dir": 7, "slurm.allow_env_in_accounting": 9, "secrets.HF_TOKEN": 11}
    for key, line in expected.items():
        assert any(ask.startswith(key + " ") and ask.endswith(f"({where}:{line})") for ask in asks), (key, asks)
    assert len(asks) == len(expected), asks
    assert not any(a.startswith("container.options.image") or a.startswith("container.options.env[0]") for a in asks)


def test_secrets_via_env_from_an_untrusted_file_is_an_ask(clone):
    (clone / ".primus.yaml").write_text("container:\n  gpu: none\n  secrets_via: env\n  options:\n    image: busybox\n")
    refused = run(clone, "plan", "--", "true")
    assert refused.returncode == 2, refused.stderr
    assert "container.secrets_via" in refused.stderr and "primus-runner trust" in refused.stderr
    assert run(clone, "trust").returncode == 0
    assert run(clone, "plan", "--", "true").returncode == 0


def _tracking_server(servers, tmp_path):
    def answer(server, request):
        return 200, {"Content-Type": "application/json"}, {"experiments": [], "experiment": {"experiment_id": "1"}}
    return servers(answer, tls=make_cert(tmp_path / "tls"))


@pytest.mark.parametrize("how", ["env-file", "config"])
def test_an_untrusted_file_cannot_turn_off_tls_for_your_mlflow_token(clone, servers, tmp_path, how):
    """A self-signed server on 127.0.0.1: with verification off the runner would send it your token."""
    server = _tracking_server(servers, tmp_path)
    token = f"canary-mlflow-token-{uuid.uuid4().hex}"
    literal = "MLFLOW_TRACKING_INSECURE_TLS=true"
    env_list = f", '{literal}'" if how == "config" else ""
    (clone / ".primus.yaml").write_text(
        f"container:\n  gpu: none\n  options:\n    image: busybox\n    env: [MLFLOW_TRACKING_TOKEN{env_list}]\n"
        "trackers:\n  disable_mlflow: false\n")
    if how == "env-file":
        (clone / ".env").write_text(literal + "\n")
        (clone / ".env").chmod(0o600)
    result = run(clone, "check", "--online", env={"MLFLOW_TRACKING_URI": server.url, "MLFLOW_TRACKING_TOKEN": token})
    assert_no_leak(json.dumps(server.requests, default=str), {"MLFLOW_TRACKING_TOKEN": token}, "the TLS server")
    assert server.requests == [], "the runner reached a server it could not verify"
    assert result.returncode == 2 and "MLFLOW_TRACKING_INSECURE_TLS" in result.stderr, result.stderr


def test_an_untrusted_ca_file_is_an_ask(clone):
    (clone / ".primus.yaml").write_text(
        "container:\n  options:\n    env: ['MLFLOW_TRACKING_SERVER_CERT_PATH=./ca.pem']\n")
    result = run(clone, "plan", "--", "true")
    assert result.returncode == 2 and "MLFLOW_TRACKING_SERVER_CERT_PATH" in result.stderr, result.stderr


def test_an_untrusted_file_may_not_set_a_runner_variable(clone):
    (clone / ".primus.yaml").write_text("container:\n  options:\n    env: ['PRIMUS_RUNNER_TRUST_PROJECT=1']\n")
    result = run(clone, "plan", "--", "true")
    assert result.returncode == 2 and "PRIMUS_RUNNER_TRUST_PROJECT" in result.stderr and "configures the runner" in result.stderr
