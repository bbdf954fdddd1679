"""No secret value on the builder's command line: a proxy password travels by name, and every argv is
checked against the scope before it runs.

The builder program is a stand-in ``docker`` first on PATH (the runner's spawn is under test, not
Docker): it records its own command line and whether HTTPS_PROXY reached its environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from engine_fixtures import assert_no_leak
from runner.errors import ConfigError
from runner.images import recipe as build_recipe
from runner.secrets import Masker
from runner.secrets.argv import refuse_secret_argv

FAKE_DOCKER = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "Docker version 20.10.0, build x"; exit 0; fi
printf '%s\\n' "$@" > "$RECORD_ARGV"
[ -n "$HTTPS_PROXY" ] && echo yes > "$RECORD_ARGV.env"
while [ $# -gt 0 ]; do if [ "$1" = "--iidfile" ]; then echo "sha256:$(printf %064d 0)" > "$2"; fi; shift; done
cat > /dev/null
exit 0
"""


def test_a_proxy_password_never_reaches_the_builder_command_line(tmp_path):
    password = f"canary-proxy-{uuid.uuid4().hex}"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "Dockerfile").write_text("FROM scratch\nRUN --mount=type=cache,target=/c true\n")
    record = tmp_path / "argv.txt"
    env = {**os.environ, "HOME": str(tmp_path), "NO_COLOR": "1", "PATH": f"{bin_dir}:{os.environ['PATH']}",
           "HTTPS_PROXY": f"http://bob:{password}@127.0.0.1:3128", "RECORD_ARGV": str(record)}
    result = subprocess.run([sys.executable, "-m", "runner", "build", "--file", str(context / "Dockerfile"), "--context", str(context),
                             "--tag", "primus-security/argv:1", "--pull", "never"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert record.exists(), result.stderr[-2000:]  # the stand-in builder ran
    argv = record.read_text().splitlines()
    assert_no_leak("\n".join(argv), [password], "the builder's command line")
    assert "HTTPS_PROXY" in argv, argv  # by name: the CLI takes the value from its environment
    assert (tmp_path / "argv.txt.env").exists(), "the proxy reached the builder's environment"
    assert_no_leak(result.stdout + result.stderr, [password], "build output")


def test_an_argv_holding_a_secret_is_refused_before_it_runs():
    secret = f"canary-argv-{uuid.uuid4().hex}"
    with pytest.raises(ConfigError) as info:
        refuse_secret_argv(["docker", "build", f"--label=x={secret}"], Masker([secret]), "docker")
    assert "argument 2" in str(info.value)
    assert_no_leak(str(info.value) + str(info.value.hint), [secret], "the refusal")


def test_builder_command_holds_names_and_its_env_the_values():
    from runner.images.builder import Builder, render_command
    from runner.secrets import Secret

    spec = build_recipe.BuildSpec(None, "/ctx", "Dockerfile", None, "me/app:1", (("A", "1"),), (), ("Dockerfile",), None, "h", secrets=("HF_TOKEN",))
    builder = Builder("buildkit", "/usr/bin/docker")
    argv = builder.command(spec, {"l": "v"}, "/tmp/iid")
    assert argv[:2] == ["/usr/bin/docker", "build"] and argv[-1] == "-"
    assert "--secret" in argv and "id=HF_TOKEN,env=HF_TOKEN" in argv and "--progress=plain" in argv
    env = builder.env([("HF_TOKEN", Secret("canary-value-123456"))], base={"PATH": "/bin"})
    assert env == {"PATH": "/bin", "DOCKER_BUILDKIT": "1", "HF_TOKEN": "canary-value-123456"}
    assert "canary-value-123456" not in " ".join(argv)
    shown = render_command(builder, argv, spec.secrets)
    assert shown.startswith("DOCKER_BUILDKIT=1 HF_TOKEN=<from env> /usr/bin/docker build") and "canary" not in shown
    podman = Builder("podman", "/usr/bin/podman").command(spec, {}, "/tmp/iid")
    assert "id=HF_TOKEN,env=HF_TOKEN" in podman and "--progress=plain" not in podman
