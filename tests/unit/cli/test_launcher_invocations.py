"""Every `primus-cli …` invocation of the Primus documentation, run as `primus-runner --dry-run …`.

The table is ../shared/reference/primus-cli-invocations.md (a copy in tests/fixtures). Each form's
dry run must show what the form means to the launcher (its scripts: runner/primus-cli,
primus-cli-container.sh, primus-cli-slurm.sh, primus-cli-direct.sh): the image, the mounts, the
env, the Slurm flags as given and the Primus command. A form the runner deliberately does not
take exits 2 with the reason and the supported spelling (`fix:`); none exits 0 meaning
something else. Placeholders (`<partition>`, `$NNODES`, `$(date …)`) get sample values, as a
shell and a user would fill them in.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from runner.cli import main

ROOT = Path(__file__).resolve().parents[3]
TABLE = next(p for p in (ROOT.parent / "shared" / "reference" / "primus-cli-invocations.md",
                         ROOT / "tests" / "fixtures" / "primus-cli-invocations.md") if p.exists())
DEFAULT_IMAGE = "rocm/primus:v26.5"
SAMPLES = {"<partition>": "gpu", "<nodes>": "2", "<NNODES>": "2", "<good-nnodes>": "2", "<HH:MM:SS>": "01:00:00",
           "<name>": "my-job", "<logfile>": "train.log", "<yaml>": "exp.yaml", "<exp>": "exp", "<exp.yaml>": "exp.yaml"}
# Forms the runner refuses on purpose, and the word the reason must hold.
# Forms the runner refuses on purpose: (what the reason says, the supported spelling it gives).
REFUSED = {
    "HF_TOKEN=": ("is a secret", "--env HF_TOKEN"),  # a literal secret value on the command line
    "--mount /data:/data": ("type=bind,source=SRC,target=DST", "use --volume "),  # docker's --mount syntax
}


def invocations() -> list[tuple[str, str]]:
    rows = []
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| `([^`]+)` \| `(.*)` \|$", line)
        if m and "primus-cli" in m.group(2):
            rows.append((m.group(1), m.group(2)))
    return rows


def argv_of(form: str, data: Path) -> list[str]:
    """The form as a shell would hand it over, with primus-cli spelled primus-runner."""
    text = form.replace("\\|", "|")
    m = re.match(r'^SRUN="(.*)"$', text)
    text = m.group(1) if m else text
    text = re.sub(r"\$\([^)]*\)", "20260101-000000", text)
    for key, value in SAMPLES.items():
        text = text.replace(key, value)
    text = text.replace("$SLURM_NNODES", "2").replace("$NNODES", "2").replace("$EXP", "exp.yaml")
    text = text.replace("$DATA_PATH", str(data)).replace("/path/to/your/data", str(data))
    text = text.rstrip("`").replace(" 2>&1", "")
    if text.count("'") % 2:
        text = text.rstrip("'")
    tokens = [t for t in shlex.split(text) if t != ">"]
    start = next(i for i, t in enumerate(tokens) if t.endswith("primus-cli"))
    tokens = tokens[start + 1:]
    # a volume whose source is the docs' /data: a directory of this test (the runner wants the source to exist)
    return [f"{data}:{t.split(':', 1)[1]}" if t.startswith("/data:") else t for t in tokens]


def meaning(argv: list[str]) -> dict:
    """What the launcher makes of the form: mode, image, volumes, env, direct options, Slurm flags, Primus args."""
    i = 0
    while argv[i] in ("--dry-run", "--debug", "--config"):
        i += 2 if argv[i] == "--config" else 1
    mode, rest = argv[i], argv[i + 1:]
    got = {"mode": mode, "image": DEFAULT_IMAGE, "volumes": [], "env": [], "direct": [], "slurm": [], "primus": [], "entry": None}
    if "--help" in rest[:rest.index("--") if "--" in rest else len(rest)]:
        got["mode"] = "help"
        return got
    if mode == "direct":
        cut = rest.index("--") if "--" in rest else len(rest)
        before, got["primus"] = rest[:cut], rest[cut + 1:]
        j = 0
        while j < len(before):
            if before[j] == "--env" and re.match(r"^[A-Za-z_]\w*(=|$)", before[j + 1]):
                got["env"].append(before[j + 1])
                j += 2
            elif before[j] in ("--script", "--log_file", "--patch", "--env"):
                got["direct"] += before[j:j + 2]
                j += 2
            else:
                got["direct"].append(before[j]) if before[j] != "--debug" else None
                j += 1
        return got
    if mode == "slurm":
        cut = rest.index("--")
        got["slurm"] = [t for t in rest[:cut] if t not in ("srun", "sbatch", "--dry-run")]
        rest = rest[cut + 1:]
        if rest and rest[0] in ("container", "direct"):
            got["entry"], rest = rest[0], rest[1:]
    _container(rest, got)
    return got


def _container(rest: list[str], got: dict) -> None:
    j = 0
    while j < len(rest) and rest[j] != "--" and rest[j].startswith("--"):
        name, value = rest[j][2:], rest[j + 1]
        key = {"image": "image", "volume": "volumes", "env": "env", "log_file": "direct"}.get(name)
        if key == "image":
            got["image"] = value
        elif key == "direct":
            got["direct"] += [rest[j], value]
        elif key:
            got[key].append(value)
        j += 2
    rest = rest[j + 1:] if j < len(rest) and rest[j] == "--" else rest[j:]
    if "--" in rest:  # the direct launcher's options, then its --
        cut = rest.index("--")
        for k in range(0, cut, 2):
            (got["env"] if rest[k] == "--env" else got["direct"]).extend([rest[k + 1]] if rest[k] == "--env" else rest[k:k + 2])
        rest = rest[cut + 1:]
    got["primus"] = rest


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(["--json", "--dry-run", *argv])
    except SystemExit as exc:  # argparse's help and usage errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def home(work, monkeypatch):
    for name in list(__import__("os").environ):
        if name.startswith(("PRIMUS_", "SLURM_", "NCCL_", "HF_", "WANDB_", "MLFLOW_")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    (work / "data").mkdir()
    (work / "my_maxtext_config.yaml").write_text("container:\n  options:\n    image: rocm/jax-training:maxtext-v26.5\n")
    monkeypatch.setenv("DATA_PATH", str(work / "data"))
    return work


ROWS = invocations()


def test_the_table_is_the_whole_list():
    assert len(ROWS) == 261


@pytest.mark.parametrize("doc, form", ROWS, ids=[f"{i:03d}" for i in range(len(ROWS))])
def test_each_invocation_means_what_the_launcher_means(doc, form, home, capsys):
    argv = argv_of(form, home / "data")
    code, out, err = run(argv, capsys)
    refused = next((why for key, why in REFUSED.items() if key in form), None)
    if argv[-1] == "--":  # a fragment of the docs (a prefix for other commands): nothing to run
        refused = ("no Primus arguments given", "put them after --")
    if refused:
        assert code == 2, (form, out, err)
        reason, spelling = refused
        assert reason in err and spelling in err, err
        return
    want = meaning(argv)
    if want["mode"] == "help":
        assert code == 0, err
        return
    assert code == 0, (form, err)
    doc_ = json.loads(out)
    request = doc_.get("request") or doc_
    if want["mode"] == "slurm":
        assert request["sbatch"][4:-1] == want["slurm"], form  # sbatch's argv: the user's flags exactly as given
        if want["entry"] == "direct":  # no container: each node runs the direct launcher, and only that
            assert request["node_command"] == request["job_command"] == ["primus-cli", "direct", *want["direct"], "--", *want["primus"]]
        else:
            assert request["image"] == (want["image"] if "my_maxtext" not in form else "rocm/jax-training:maxtext-v26.5")
        command = request["job_command"]
        assert command == doc_["command"]
    elif want["mode"] == "container":
        expected_image = "rocm/jax-training:maxtext-v26.5" if "my_maxtext" in form else want["image"]
        assert doc_["image"] == expected_image
        targets = {m["target"] for m in doc_["mounts"]}
        assert {v.split(":")[1] if ":" in v else v for v in want["volumes"]} <= targets
        command = doc_["command"]
        argv = request["argv"]  # docker run …: the image, then the job's command
        assert argv[len(argv) - len(command) - 1:] == [expected_image, *command], form
    else:
        command = doc_["command"]
    for entry in want["env"]:
        name, _, value = entry.partition("=")
        if want["mode"] == "slurm":
            assert f"PRIMUS_RUNNER_ENV_{name}" in request["export"], (form, entry)  # the value travels on sbatch's stdin, by name
        else:
            assert doc_["env"].get(name) == (value or home.joinpath("data").as_posix()), (form, entry)
    assert command == ["primus-cli", "direct", *want["direct"], "--", *want["primus"]], form


def test_the_readme_scenario_uses_the_image_and_the_env(home, capsys):
    """runner/README.md: `slurm -N 4 --nodelist … -- --image rocm/primus:v26.5 -- --env NCCL_DEBUG=INFO -- train pretrain …`."""
    code, out, err = run(["slurm", "-N", "4", "--nodelist", "node[01-04]", "--", "--image", "rocm/primus:v26.5", "--",
                          "--env", "NCCL_DEBUG=INFO", "--", "train", "pretrain", "--config", "exp.yaml"], capsys)
    assert code == 0, err
    doc = json.loads(out)["request"]
    assert doc["image"] == "rocm/primus:v26.5" and "rocm/primus:v26.5" in doc["node_command"]
    assert doc["job_command"] == ["primus-cli", "direct", "--", "train", "pretrain", "--config", "exp.yaml"]
    assert "PRIMUS_RUNNER_ENV_NCCL_DEBUG" in doc["export"]
    assert doc["sbatch"][4:-1] == ["-N", "4", "--nodelist", "node[01-04]"]


def test_an_image_without_a_second_separator_is_the_container_entrys(home, capsys):
    code, out, err = run(["slurm", "srun", "-N", "2", "--", "--image", "rocm/other:1", "train", "pretrain", "--config", "c.yaml"], capsys)
    assert code == 0, err
    doc = json.loads(out)["request"]
    assert doc["image"] == "rocm/other:1" and doc["job_command"][-4:] == ["train", "pretrain", "--config", "c.yaml"]
    assert "--image" not in doc["job_command"]


def test_log_file_given_to_container_is_the_direct_launchers(home, capsys):
    code, out, err = run(["container", "--log_file", "/tmp/p.log", "--", "train", "pretrain", "--config", "e.yaml"], capsys)
    assert code == 0, err
    assert json.loads(out)["command"] == ["primus-cli", "direct", "--log_file", "/tmp/p.log", "--", "train", "pretrain", "--config", "e.yaml"]
