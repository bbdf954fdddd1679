"""Hostile and broken input through the real CLI: exit 2 with ONE clear message, or correct handling.

Every case runs ``python -m runner`` in a fresh project directory with a canary
secret in the environment, and checks: the exit code, exactly one ``error:``
line that names the problem (with ``file:line`` where a file is at fault), no
traceback, and no form of the canary anywhere in the output.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from cli_runner import run_cli
from cli_memory import measured
from engine_fixtures import assert_no_leak

SECRET_NAME = "HF_TOKEN"


@pytest.fixture
def secret(canary) -> str:
    return canary[SECRET_NAME]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n")
    return tmp_path


def cli(project: Path, secret: str, *args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    result = run_cli(project, *args, env={SECRET_NAME: secret, **(env or {})}, text=False, timeout=timeout)
    assert_no_leak(result.stdout + result.stderr, [secret], f"output of {args}")
    return result


def one_error(result: subprocess.CompletedProcess, *needles: str, code: int = 2) -> str:
    """Assert exit ``code``, one ``error:`` line containing every needle, and no traceback."""
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == code, err
    assert "Traceback" not in err and "internal error" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err
    for needle in needles:
        assert needle in err, f"{needle!r} not in {err!r}"
    return err


def plan(project: Path, secret: str, *args: str, config: str | None = None, env: dict | None = None):
    glob = ["--config", config] if config else []
    return cli(project, secret, *glob, "plan", *args, "--", "true", env=env)


def write(project: Path, name: str, content: str | bytes) -> str:
    path = project / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(path)


# ------------------------------------------------------------------ YAML

def test_yaml_alias_bomb_is_refused(project, secret):
    doc = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for i, name in enumerate("bcdefghij"):
        prev = "abcdefghij"[i]
        doc += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
    one_error(plan(project, secret, config=write(project, "bomb.yaml", doc)), "bomb.yaml:", "alias bomb")


@pytest.mark.parametrize(
    "doc",
    ["main: " + "[" * 5000 + "]" * 5000 + "\n", "".join("  " * i + f"k{i}:\n" for i in range(300)) + "  " * 300 + "v\n"],
    ids=["flow", "block"],
)
def test_deep_nesting_is_refused(project, secret, doc):
    one_error(plan(project, secret, config=write(project, "deep.yaml", doc)), "deep.yaml", "nested")


def test_huge_file_is_refused_without_reading_it(project, secret):
    """A 1 GiB sparse file: reading it (the early secret scan too) would raise the peak RSS
    of the process by a gigabyte; refused by its size, the process stays small."""
    path = project / "big.yaml"
    with open(path, "wb") as f:
        f.truncate(1 << 30)
    code, _, err, rss = measured(project, "--config", str(path), "plan", "--", "true",
                                 env={SECRET_NAME: secret, "CI": "true"})  # CI: the early secret scan runs first
    assert code == 2 and "big.yaml" in err and "limit" in err, err
    assert rss < 300 << 20, f"peak RSS {rss >> 20} MiB: the file was read"


def test_binary_file_is_refused(project, secret):
    one_error(plan(project, secret, config=write(project, "bin.yaml", b"\x7fELF\x02\x01\x01\x00\x00\x00")), "bin.yaml:1", "binary")


def test_non_utf8_file_names_its_line(project, secret):
    path = write(project, "latin1.yaml", b"main:\n  debug: false  # caf\xe9\n")
    one_error(plan(project, secret, config=path), "latin1.yaml:2", "UTF-8")


def test_non_utf8_project_file_is_refused(project, secret):
    (project / ".primus.yaml").write_bytes(b"container:\n  gpu: none # \xff\xfe\n")
    one_error(plan(project, secret), ".primus.yaml:2", "UTF-8")


@pytest.mark.parametrize("flag", ["--config", "--env-file"])
def test_symlink_loop_is_refused(project, secret, flag):
    os.symlink(project / "loop-b", project / "loop-a")
    os.symlink(project / "loop-a", project / "loop-b")
    one_error(cli(project, secret, flag, str(project / "loop-a"), "plan", "--", "true"), "loop-a", "symlink loop")


@pytest.mark.parametrize("flag", ["--config", "--env-file"])
def test_directory_or_missing_file_is_refused(project, secret, flag):
    one_error(cli(project, secret, flag, str(project), "plan", "--", "true"), "not a regular file")
    one_error(cli(project, secret, flag, str(project / "nope"), "plan", "--", "true"), "does not exist")


def test_malformed_yaml_names_its_line(project, secret):
    path = write(project, "bad.yaml", "container:\n  options:\n    env: [unclosed\n")
    one_error(plan(project, secret, config=path), "bad.yaml:", "malformed YAML")


def test_duplicate_yaml_key_is_refused(project, secret):
    path = write(project, "dup.yaml", "container:\n  gpu: none\n  gpu: rocm\n")
    one_error(plan(project, secret, config=path), "dup.yaml:3", "duplicate key 'gpu'")


def test_unknown_key_suggests_the_known_one(project, secret):
    path = write(project, "typo.yaml", "container:\n  options:\n    devices: [/dev/kfd]\n")
    one_error(plan(project, secret, config=path), "typo.yaml:3", "unknown key 'devices'", "did you mean 'device'")


@pytest.mark.parametrize(
    "key,value,line_text",
    [("cpus", "abc", "cpus"), ("privileged", "maybe", "privileged"), ("shm-size", "[1, 2]", "shm-size")],
)
def test_wrong_type_names_file_line_and_key(project, secret, key, value, line_text):
    path = write(project, "types.yaml", f"container:\n  options:\n    {key}: {value}\n")
    one_error(plan(project, secret, config=path), "types.yaml:3", line_text)


def test_cpus_flag_that_is_not_a_number(project, secret):
    one_error(plan(project, secret, "--cpus", "abc"), "cpus")


def test_literal_secret_in_yaml_is_refused_with_file_line_and_no_value(project, secret):
    literal = f"yaml-only-{uuid.uuid4().hex}"  # not in the environment: no masker knows it, only the message can hide it
    path = write(project, "lit.yaml", f'container:\n  options:\n    env:\n      - PLAIN\n      - "WANDB_API_KEY={literal}"\n')
    err = one_error(plan(project, secret, config=path), "lit.yaml:5", "WANDB_API_KEY is a secret")
    assert_no_leak(err, {"YAML literal": literal}, "error message")


def test_literal_secret_matched_by_pattern_is_refused(project, secret):
    literal = f"yaml-only-{uuid.uuid4().hex}"
    path = write(project, "lit.yaml", f"container:\n  options:\n    env: [MY_SERVICE_TOKEN={literal}]\n")
    err = one_error(plan(project, secret, config=path), "lit.yaml:3", "MY_SERVICE_TOKEN is a secret")
    assert_no_leak(err, {"YAML literal": literal}, "error message")


# ------------------------------------------------------------------ env names and values

@pytest.mark.parametrize("name", ["1BAD", "A-B", "A B", "$(id)", "=x", ""])
def test_invalid_env_name_in_yaml(project, secret, name):
    path = write(project, "names.yaml", f'container:\n  options:\n    env:\n      - {json.dumps(name)}\n')
    one_error(plan(project, secret, config=path), "names.yaml:4", "invalid environment variable name")


@pytest.mark.parametrize("name", ["1BAD", "A-B", "`id`"])
def test_invalid_env_name_on_the_command_line(project, secret, name):
    one_error(plan(project, secret, "--env", name), "--env", "invalid environment variable name")


def test_invalid_name_in_env_file(project, secret):
    path = write(project, "bad.env", "GOOD=1\nA-B=2\n")
    os.chmod(path, 0o600)
    err = one_error(cli(project, secret, "--env-file", path, "plan", "--", "true"), "bad.env:2", "line 2")
    assert "A-B" not in err  # the line is named by number: its text may be a pasted secret


WEIRD = "a\"b'c $(id) `id` ${HOME} ; rm -rf / | && \\n \\ \t tab\nsecond line\n"


def test_weird_values_are_forwarded_exactly_in_the_plan(project, secret):
    result = cli(project, secret, "--json", "plan", "--env", "PLAIN_WEIRD", "--", "true", env={"PLAIN_WEIRD": WEIRD, "PRIMUS_WEIRD": WEIRD})
    assert result.returncode == 0, result.stderr
    env = json.loads(result.stdout)["env"]
    assert env["PLAIN_WEIRD"] == WEIRD and env["PRIMUS_WEIRD"] == WEIRD


def test_weird_literal_in_yaml_is_kept_verbatim(project, secret):
    path = write(project, "lit.yaml", f"container:\n  options:\n    env:\n      - {json.dumps('LIT=' + WEIRD)}\n")
    result = cli(project, secret, "--config", path, "--json", "plan", "--", "true")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["env"]["LIT"] == WEIRD


def test_nul_in_a_literal_value_is_refused(project, secret):
    path = write(project, "nul.yaml", 'container:\n  options:\n    env: ["LIT=a\\0b"]\n')
    one_error(plan(project, secret, config=path), "NUL")


def test_nul_in_env_file_is_refused(project, secret):
    path = write(project, "nul.env", b"PLAIN=a\x00b\n")
    os.chmod(path, 0o600)
    one_error(cli(project, secret, "--env-file", path, "plan", "--", "true"), "nul.env", "NUL")


def test_env_file_duplicates_and_export_prefix(project, secret):
    other = secret[::-1]
    path = write(project, "dup.env", f"export PLAIN=first\nPLAIN=second\nexport WANDB_API_KEY={other}\nexport QUOTED='a b # not a comment'\n")
    os.chmod(path, 0o600)
    result = cli(project, secret, "--env-file", path, "--json", "plan", "--env", "PLAIN", "--env", "QUOTED", "--", "true")
    assert_no_leak(result.stdout + result.stderr, [other], "plan with an env file")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["env"]["PLAIN"] == "second"  # the last value wins ...
    assert doc["env"]["QUOTED"] == "a b # not a comment"
    assert doc["env"]["WANDB_API_KEY"] == "***" and "WANDB_API_KEY" in doc["secrets"]
    assert "dup.env:2: PLAIN is set again (first at line 1)" in result.stderr.decode()  # ... and it is said


# ------------------------------------------------------------------ volumes

def test_volume_with_dotdot_resolves_and_checks_the_real_source(project, secret):
    (project / "data").mkdir()
    result = cli(project, secret, "--json", "plan", "-v", "sub/../data:/in/../data:ro", "--", "true")
    assert result.returncode == 0, result.stderr
    mount = json.loads(result.stdout)["mounts"][0]
    assert {k: mount.get(k) for k in ("source", "target", "mode")} == {"source": str(project / "data"), "target": "/data", "mode": "ro"}
    assert not mount.get("named_volume")  # a host path, not a Docker named volume


def test_volume_escaping_to_a_missing_source(project, secret):
    one_error(plan(project, secret, "-v", "../../no-such-dir-xyz:/x"), "does not exist")


def test_volume_missing_relative_source(project, secret):
    one_error(plan(project, secret, "-v", "./missing:/x"), str(project / "missing"), "does not exist")


@pytest.mark.parametrize("spec,needle", [("/tmp:relative", "absolute"), ("/tmp:/x:bogus", "unknown option"), ("/a:/b:/c:/d", "SRC[:DST[:OPTS]]"), (":/x", "SRC[:DST[:OPTS]]")])
def test_bad_volume_specs(project, secret, spec, needle):
    one_error(plan(project, secret, "-v", spec), needle)


def test_volume_in_yaml_names_its_line(project, secret):
    path = write(project, "vol.yaml", "container:\n  options:\n    volume:\n      - ./missing:/x\n")
    one_error(plan(project, secret, config=path), "vol.yaml:4", "does not exist")


# ------------------------------------------------------------------ images

@pytest.mark.parametrize("image", ["x; rm -rf /", "$(id)", "`id`", "x y", "UPPER/case", "--privileged", "x:tag:tag", "x\n", "a|b"])
def test_image_injection_is_refused_before_any_engine_call(project, secret, image):
    # DOCKER_HOST points at nothing: reaching the engine would be exit 1, not 2.
    result = cli(project, secret, "up", f"--image={image}", "--", "true", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    one_error(result, "not a valid image reference")


def test_image_injection_from_yaml_names_its_line(project, secret):
    path = write(project, "img.yaml", "container:\n  options:\n    image: 'busybox; id'\n")
    one_error(plan(project, secret, config=path), "img.yaml:3", "not a valid image reference")


@pytest.mark.parametrize("image", ["busybox", "rocm/primus:v26.5", "localhost:5000/team/img:1.0-rc1", "nvcr.io/nvidia/pytorch:24.01-py3", "busybox@sha256:" + "a" * 64])
def test_valid_image_references_are_accepted(project, secret, image):
    result = cli(project, secret, "--json", "plan", "--image", image, "--", "true")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["image"] == image


def test_command_is_never_interpreted_by_a_shell_in_the_plan(project, secret):
    result = cli(project, secret, "--json", "plan", "--", "echo", "$(id)", "`id`", "a;b")
    assert json.loads(result.stdout)["command"] == ["echo", "$(id)", "`id`", "a;b"]
