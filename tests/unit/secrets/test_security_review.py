"""Security review, the pure modules: one test per leak or robustness item.

Every canary here is a value only the path under test could print: a YAML or env-file
literal that is NOT in the environment, or a value given to the masker alone. Resource
bounds are memory (the child's peak RSS from ``wait4``, ``tracemalloc``) and operation
counts, never wall-clock time.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
import tracemalloc
import urllib.parse
import uuid
from pathlib import Path

import pytest

from cli_memory import measured
from engine_fixtures import assert_no_leak
from plan_factory import plan_from

MiB = 1 << 20


def fresh(tag: str) -> str:
    return f"zz-{tag}-{uuid.uuid4().hex}"


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".primus.yaml").write_text("container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n")
    return tmp_path


# Peak RSS of `plan` on a small config is ~60-90 MB; reading a 512 MiB file, or a bomb, is far above.
RSS_BOUND = 250 * MiB


# ------------------------------------------------------------------ item 1: config errors quote no value

CONFIG_CASES = {
    "env-as-mapping": ("container:\n  options:\n    env: {{HF_TOKEN: {v}}}\n", "container.options.env", 3),
    "env-as-string": ("container:\n  options:\n    env: \"{v}\"\n", "container.options.env", 3),
    "env-item-mapping": ("container:\n  options:\n    env:\n      - {{K: {v}}}\n", "container.options.env[0]", 4),
    "required-mapping": ("passthrough:\n  required: {{X: {v}}}\n", "passthrough.required", 2),
    "enum": ("container:\n  gpu: {v}\n", "container.gpu", 2),
    "secrets-via-enum": ("container:\n  secrets_via: {v}\n", "container.secrets_via", 2),
    "integer": ("slurm:\n  nodes: {v}\n", "slurm.nodes", 2),
    "bad-tag": ("slurm:\n  nodes: !!int {v}\n", "bad.yaml:2", 2),
    "bad-env-name": ("container:\n  options:\n    env: [\"{v}\"]\n", "container.options.env", 3),
    "bad-required-name": ("passthrough:\n  required: [\"{v}\"]\n", "passthrough.required", 2),
}


@pytest.mark.parametrize("case", sorted(CONFIG_CASES))
def test_config_errors_name_path_type_and_line_never_the_value(project, case):
    doc, path, line = CONFIG_CASES[case]
    canary = fresh("yaml-" + case)
    if case.startswith("bad-") and case.endswith("-name"):
        canary = "sk-" + canary  # '-' makes it an invalid name: a bare token pasted into a list of names
    (project / "bad.yaml").write_text(doc.format(v=canary))
    code, out, err, _ = measured(project, "--config", "bad.yaml", "plan", "--", "true")
    assert code == 2, err
    assert "Traceback" not in err
    assert f"bad.yaml:{line}" in err and path in err, err
    assert_no_leak(out + err, {"YAML literal": canary}, f"config error ({case})")


def test_config_errors_under_github_actions_annotate_without_the_value(project):
    canary = fresh("yaml-gha")
    (project / "bad.yaml").write_text(f"container:\n  options:\n    env: {{HF_TOKEN: {canary}}}\n")
    code, out, err, _ = measured(project, "--config", "bad.yaml", "plan", "--", "true",
                                 env={"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(project)})
    assert code == 2
    assert "::error" in out + err
    assert_no_leak(out + err, {"YAML literal": canary}, "GitHub annotation")


# ------------------------------------------------------------------ item 5: env file lines

@pytest.mark.parametrize("line", ["{v}", "bad-name={v}", "  {v}  "])
def test_env_file_bad_line_is_named_by_number_not_text(project, line):
    canary = "sk-" + fresh("envline")
    (project / "e.env").write_text("GOOD=1\n# comment\n" + line.format(v=canary) + "\n")
    code, out, err, _ = measured(project, "--env-file", "e.env", "plan", "--", "true")
    assert code == 2, err
    assert "e.env:3" in err, err
    assert len(error_lines(err)) == 1, err
    assert_no_leak(out + err, {"env-file line": canary}, "env file error")


# ------------------------------------------------------------------ item 7: hostile YAML

def test_merge_key_bomb_is_refused_with_bounded_memory(project):
    # Anchors defined inside the merge list: flattening multiplies before any value is counted.
    chain = "&a {k: v}"
    for prev, name in zip("abcdefgh", "bcdefghi"):
        chain += f", &{name} {{<<: [" + ", ".join([f"*{prev}"] * 10) + "]}"
    (project / "bomb.yaml").write_text(f"main:\n  debug: false\nx: {{<<: [{chain}]}}\n")
    code, out, err, rss = measured(project, "--config", "bomb.yaml", "plan", "--", "true")
    assert code == 2, err[-2000:]
    assert "bomb.yaml:3" in err and "Traceback" not in err, err[-2000:]
    assert rss < RSS_BOUND, f"peak RSS {rss >> 20} MiB"


@pytest.mark.parametrize("doc", ["main: " + "[" * 25000 + "]" * 25000 + "\n", "main: " + "{a: " * 25000 + "1" + "}" * 25000 + "\n",
                                 "main:\n" + "- " * 25000 + "x\n"], ids=["flow-seq", "flow-map", "block-seq"])
def test_25k_deep_nesting_is_refused_not_a_crash(project, doc):
    (project / "deep.yaml").write_text(doc)
    code, out, err, rss = measured(project, "--config", "deep.yaml", "plan", "--", "true")
    assert code == 2, (code, err[-2000:])  # 139 (SIGSEGV) inside libyaml before the fix
    assert "deep.yaml:" in err and "nested" in err, err[-2000:]
    assert rss < RSS_BOUND


@pytest.mark.parametrize("where", ["--config", ".primus.yaml", "home"])
def test_oversized_file_is_refused_before_anything_reads_it(project, where):
    """A 512 MiB sparse file: read by anyone (the early secret scan too), the peak RSS shows it."""
    target = {"--config": project / "huge.yaml", ".primus.yaml": project / "sub" / ".primus.yaml", "home": project / ".primus.yaml"}[where]
    target.parent.mkdir(exist_ok=True)
    with open(target, "wb") as f:
        f.truncate(512 * MiB)
    cwd_args = ["--config", str(target)] if where == "--config" else []
    run_in = target.parent
    code, out, err, rss = measured(run_in, *cwd_args, "plan", "--", "true")
    assert code == 2, err
    assert "limit" in err and target.name in err, err
    assert rss < RSS_BOUND, f"peak RSS {rss >> 20} MiB: the file was read"


def test_merge_key_with_override_loads(project):
    (project / "m.yaml").write_text(
        "container:\n  gpu: none\n  options:\n    <<: &base {image: primus-test/busybox:latest, ipc: host}\n    ipc: private\n"
    )
    code, out, err, _ = measured(project, "--json", "--config", "m.yaml", "plan", "--", "true")
    assert code == 0, err
    data = json.loads(out)
    assert data["image"] == "primus-test/busybox:latest"
    assert data["ipc"] == "private"


def test_merge_key_alias_override_loads():
    from runner.config.yamlsource import parse_yaml

    doc = "base: &b {a: 1, b: 2}\nuse:\n  <<: *b\n  b: 3\nmulti:\n  <<: [{a: 9, c: 1}, *b]\n"
    data = parse_yaml(doc, "t.yaml").data
    assert data["use"] == {"a": 1, "b": 3}
    assert data["multi"] == {"a": 9, "c": 1, "b": 2}  # the earlier mapping in a merge list wins


# ------------------------------------------------------------------ item 8: values that cannot be masked

def test_public_look_alike_keeps_plan_json_valid(project):
    code, out, err, _ = measured(project, "--json", "plan", "--", "true", env={"HF_HUB_DISABLE_IMPLICIT_TOKEN": "false"})
    assert code == 0, err
    data = json.loads(out)  # '"privileged": ***' before the fix
    assert data["privileged"] is False


def test_too_short_secret_is_warned_by_name_and_garbles_nothing(project):
    code, out, err, _ = measured(project, "--json", "plan", "--env", "MY_SERVICE_TOKEN", "--", "true", env={"MY_SERVICE_TOKEN": "1"})
    assert code == 0, err
    data = json.loads(out)
    assert "***" not in json.dumps({k: v for k, v in data.items() if k != "env"})
    assert "MY_SERVICE_TOKEN" in err and "too short" in err, err
    code, out, err, _ = measured(project, "plan", "--", "true", env={"MY_SERVICE_TOKEN": "1"})
    assert code == 0, err
    assert "***" not in out, out  # '1' is in ordinary text everywhere


def test_json_output_masks_values_not_the_serialised_text(capsys):
    from runner.secrets import Masker
    from runner.ui import Output

    secret = fresh("json")
    masker = Masker([("A_TOKEN", secret), ("B_TOKEN", 'quote"in/side-' + secret[:8])])
    Output(json_mode=True, masker=masker).json({"a": f"x {secret} y", "n": 1, "t": True, "l": [secret, 'quote"in/side-' + secret[:8]]})
    out = capsys.readouterr().out
    data = json.loads(out)
    assert data == {"a": "x *** y", "n": 1, "t": True, "l": ["***", "***"]}
    assert secret not in out
    # A secret that is also a number in the object: masked as a string, the JSON stays valid.
    Output(json_mode=True, masker=Masker([("PIN_TOKEN", "73914268")])).json({"port": 73914268, "other": 5})
    assert json.loads(capsys.readouterr().out) == {"port": "***", "other": 5}


# ------------------------------------------------------------------ item 9: non-UTF-8 secret values

@pytest.mark.parametrize(("command", "code"), [(["plan", "--", "true"], 0), (["--json", "plan", "--", "true"], 0),
                                             (["check", "--engine", "docker"], 1)])  # check: 1, the engine is a dead socket
def test_non_utf8_secret_value_masks_and_does_not_crash(project, command, code):
    tail = uuid.uuid4().hex.encode()
    value = b"abc\xffdef" + tail
    base = {k.encode(): v.encode() for k, v in os.environ.items()
            if not k.startswith(("PRIMUS_", "WANDB", "MLFLOW", "HF_", "NCCL_", "GITHUB_"))}
    base.update({b"HOME": str(project).encode(), b"XDG_CACHE_HOME": str(project / ".cache").encode(), b"NO_COLOR": b"1",
                 b"HF_TOKEN": value, b"LOG_ECHO": b"prefix " + value, b"DOCKER_HOST": b"unix:///nonexistent/docker.sock"})
    (project / ".primus.yaml").write_text(
        "container:\n  gpu: none\n  options:\n    image: primus-test/busybox:latest\n    env: [LOG_ECHO]\n")
    result = subprocess.run([sys.executable, "-m", "runner", *command], cwd=project, env=base, capture_output=True, timeout=120)
    both = result.stdout + result.stderr
    assert b"Traceback" not in both and b"internal error" not in both, both.decode("utf-8", "replace")
    assert result.returncode == code, both.decode("utf-8", "replace")
    assert value not in both and tail not in both


def test_masker_masks_non_utf8_values_as_bytes():
    from runner.secrets import Masker

    value = os.fsdecode(b"abc\xffdef" + uuid.uuid4().hex.encode())  # how os.environ holds it
    raw = os.fsencode(value)
    masker = Masker([("HF_TOKEN", value)])
    assert masker.mask_bytes(b"x " + raw + b" y") == b"x *** y"
    assert masker.mask("x " + value + " y") == "x *** y"
    stream = masker.stream()
    assert stream.feed(b"x " + raw[:5]) + stream.feed(raw[5:] + b"\n") + stream.flush() == b"x ***\n"


# ------------------------------------------------------------------ item 10: prefixes and default patterns

@pytest.mark.parametrize("prefixes", ['[""]', '["P"]', '["A"]', "['  ']"])
def test_empty_or_too_broad_prefix_is_refused(project, prefixes):
    (project / "p.yaml").write_text(f"passthrough:\n  prefixes: {prefixes}\n")
    code, out, err, _ = measured(project, "--config", "p.yaml", "plan", "--", "true")
    assert code == 2, err
    assert "p.yaml:2" in err and "prefix" in err, err


def test_prefix_matching_most_of_the_environment_is_refused(project):
    env = {f"ZQX_VAR_{i}": "x" for i in range(400)}
    (project / "p.yaml").write_text("passthrough:\n  prefixes: [ZQX]\n")
    code, out, err, _ = measured(project, "--config", "p.yaml", "plan", "--", "true", env=env)
    assert code == 2, err
    assert "p.yaml:2" in err and "passthrough.prefixes" in err, err


@pytest.mark.parametrize("name", ["OPENAI_KEY", "GITHUB_PAT", "GCP_CREDENTIALS", "SSH_PRIVATE_KEY", "MY_PRIVATE_KEY_PEM",
                                  "DOCKER_LOGIN_KEY", "PRIMUS_SIGNING_KEY"])
def test_default_patterns_cover_real_credentials(work, name):
    from runner.config import load_config
    from runner.policy import Classifier

    assert Classifier.from_config(load_config()).is_secret(name)


@pytest.mark.parametrize("name", ["HF_HUB_DISABLE_IMPLICIT_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS"])
def test_known_public_look_alikes_are_public(work, name):
    from runner.config import load_config
    from runner.policy import Classifier

    assert not Classifier.from_config(load_config()).is_secret(name)


def test_public_marker_cannot_unsecret_a_listed_secret(work):
    from runner.config import load_config
    from runner.policy import Classifier

    (work / ".primus.yaml").write_text("passthrough:\n  secrets: ['!HF_TOKEN', '!*_TOKEN', '!*']\n")
    classifier = Classifier.from_config(load_config())
    assert classifier.is_secret("HF_TOKEN") and classifier.is_secret("GITHUB_TOKEN") and classifier.is_secret("X_PASSWORD")


# ------------------------------------------------------------------ item 11: the masker is linear

def _build_peak(value: str) -> int:
    from runner.secrets import Masker

    tracemalloc.start()
    try:
        Masker([("BIG_KEY", value)])
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_building_the_masker_is_linear_in_memory():
    small = _build_peak(os.urandom(512).hex())  # 1 KiB
    big = _build_peak(os.urandom(4096).hex())  # 8 KiB: 8x the length
    assert big < 16 * small + 2 * MiB, (small, big)  # quadratic: ~64x and hundreds of MiB


def _line_events(masker, writes: list[bytes]) -> int:
    """Python lines executed in the masker module while streaming ``writes``."""
    import runner.secrets.masker as module

    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        if frame.f_code.co_filename == module.__file__:
            if event == "line":
                count += 1
            return tracer
        return None

    stream = masker.stream()
    sys.settrace(tracer)
    try:
        for w in writes:
            stream.feed(w)
        stream.flush()
    finally:
        sys.settrace(None)
    return count


def test_masking_work_per_write_does_not_grow_with_secret_length():
    from runner.secrets import Masker

    writes = [f"step {i} loss 1.{i:03d} lr 3e-4 tokens/s 12345\n".encode() for i in range(200)]
    short = _line_events(Masker([("A_TOKEN", os.urandom(16).hex())]), writes)
    long = _line_events(Masker([("PEM_PRIVATE_KEY", os.urandom(8192).hex())]), writes)
    assert long < 2 * short + 200, (short, long)  # the old per-write tail loop ran ~16k times per write


# ------------------------------------------------------------------ item 12: masker and render gaps

def _independent_forms(value: str) -> dict[str, str]:
    """Encodings a job prints, computed here, not by the masker."""
    def percent(safe: str, hexfmt: str) -> str:
        return "".join(c if c.isascii() and (c.isalnum() or c in safe) else "".join(hexfmt % b for b in c.encode()) for c in value)

    return {
        "percent-lower": percent("-_.~", "%%%02x"),
        "quote-default": urllib.parse.quote(value),
        "encodeURIComponent": percent("-_.!~*'()", "%%%02X"),
        "json-slash": json.dumps(value)[1:-1].replace("/", "\\/"),
        "percent-upper": percent("-_.~", "%%%02X"),
    }


@pytest.mark.parametrize("form", ["percent-lower", "quote-default", "encodeURIComponent", "json-slash"])
def test_masker_knows_more_encodings(form):
    from runner.secrets import Masker

    value = "p@ss/w:rd?" + uuid.uuid4().hex[:10] + "é!'()"
    text = _independent_forms(value)[form]
    masked = Masker([value]).mask(f"url={text} end")
    assert masked == "url=*** end", (form, masked)


@pytest.mark.parametrize("length", [6, 7, 8, 12])  # 6 and 7: the old aligned-only forms missed them at offset 2
@pytest.mark.parametrize("offset", [0, 1, 2])
def test_masker_finds_short_secrets_in_base64_at_any_offset(length, offset):
    from runner.secrets import Masker

    value = uuid.uuid4().hex[:length]
    blob = base64.b64encode(b"u:"[:offset] + value.encode() + b"@h").decode()
    start, end = -(-8 * offset // 6), (8 * (offset + length)) // 6  # the characters only the value decides
    stable = blob[start:end]
    masked = Masker([value]).mask("Basic " + blob)
    assert stable not in masked and "***" in masked, (stable, masked)


def test_flush_masks_a_held_back_partial_secret():
    from runner.secrets import Masker

    secret = "canary-" + uuid.uuid4().hex
    masker = Masker([secret])
    stream = masker.stream()
    out = stream.feed(b"x " + secret[:20].encode()) + stream.flush()  # the job printed 20 of 39 bytes, then died
    assert secret[:20].encode() not in out and secret[7:20].encode() not in out, out
    assert out == b"x ***"
    assert masker.mask_bytes(b"cut: " + secret[:20].encode()) == b"cut: ***"  # text cut before masking
    stream = masker.stream()
    assert stream.feed(b"ok can") + stream.flush() == b"ok can"  # a short tail reveals nothing: printed


def test_table_masks_before_it_cuts(work):
    from rich.console import Console

    from runner.plan import LaunchFlags
    from runner.ui.render import plan_tables
    from runner.secrets import Masker

    password = fresh("urlpass")
    host = {"TRACKING_URI": f"https://user:{password}@tracking.example.com/some/long/path/that/wraps"}
    plan = plan_from(work, "container:\n  options:\n    image: busybox\n    env: [TRACKING_URI]\n", host=host,
                     flags=LaunchFlags(gpu="none")).plan
    masker = Masker([("TRACKING_URI (password in URL)", password)])
    buffer = io.StringIO()
    console = Console(file=buffer, width=40, force_terminal=False)
    for table in plan_tables(plan, masker):
        console.print(table)
    text = buffer.getvalue()
    assert_no_leak(masker.mask(text), {"URL password": password}, "narrow table")
    assert_no_leak(text.replace("\n", "").replace("│", "").replace(" ", ""), {"URL password": password}, "table, joined")


def test_direct_env_refuses_secret_literals(project):
    canary = fresh("direct")
    (project / "d.yaml").write_text(f"direct:\n  env:\n    - PLAIN=1\n    - HF_TOKEN={canary}\n")
    code, out, err, _ = measured(project, "--config", "d.yaml", "plan", "--", "true")
    assert code == 2, err
    assert "d.yaml:4" in err and "HF_TOKEN is a secret" in err, err
    assert_no_leak(out + err, {"YAML literal": canary}, "direct.env error")
