"""`build --secret NAME` and `build --file PATH` on the real daemon: a user Dockerfile's
`RUN --mount=type=secret` step gets the exact value (its checksum is written into the
image) and the value is nowhere else — not in `docker save`, `docker history
--no-trunc`, `docker inspect`, the build output, or any file the runner wrote.

Canaries: HF_TOKEN from the environment (secret by name) and PRIVATE_INDEX_URL
from the env file, a name no policy calls secret: only `--secret` puts it in scope.
"""

from __future__ import annotations

import json
import subprocess
import tarfile
import tempfile
import uuid
from pathlib import Path

import pytest

from docker_helpers import Workspace
from engine_fixtures import assert_no_leak, sha
from loopback_servers import Server

pytestmark = pytest.mark.docker

DOCKERFILE = """FROM {base}
COPY app.txt /app.txt
RUN --mount=type=secret,id=HF_TOKEN sha256sum /run/secrets/HF_TOKEN | cut -c1-64 > /hf.sha256
RUN --mount=type=secret,id=PRIVATE_INDEX_URL sha256sum /run/secrets/PRIVATE_INDEX_URL | cut -c1-64 > /index.sha256
"""




@pytest.fixture
def project(tmp_path, busybox_image, canary):
    """A user's project: Dockerfile at the top, .env beside it (kept out by .dockerignore)."""
    index = f"https://builder:pw-{uuid.uuid4().hex}@index.example.com/simple"
    secrets = {"HF_TOKEN": canary["HF_TOKEN"], "PRIVATE_INDEX_URL": index, "INDEX_PASSWORD": index.split(":")[2].split("@")[0]}
    ws = Workspace(tmp_path / "ws", {"HF_TOKEN": canary["HF_TOKEN"]}, config="container:\n  gpu: none\n")
    (ws.cwd / "Dockerfile").write_text(DOCKERFILE.format(base=busybox_image))
    # Unique per run: BuildKit caches a secret step by its instruction, not the secret's value.
    (ws.cwd / "app.txt").write_text(f"the user's code {uuid.uuid4().hex}\n")
    (ws.cwd / ".env").write_text(f"PRIVATE_INDEX_URL={index}\n")
    (ws.cwd / ".dockerignore").write_text(".env\n")
    tag = f"primus-test/secret-build:{uuid.uuid4().hex[:8]}"
    yield ws, secrets, tag
    subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)


def _scan_save(tag: str, secrets: dict, tmp_path: Path, cli: list[str] = ["docker"]) -> int:
    saved = tmp_path / "saved.tar"
    subprocess.run([*cli, "save", "-o", str(saved), tag], check=True)
    assert_no_leak(saved.read_bytes(), secrets, "docker save")
    layers = 0
    with tarfile.open(saved) as outer:
        for member in outer:
            if member.isfile():
                data = outer.extractfile(member).read()
                assert_no_leak(data, secrets, f"docker save member {member.name}")
                if member.name.endswith("layer.tar") or member.name.endswith(".tar"):
                    layers += 1
                    with tarfile.open(fileobj=__import__("io").BytesIO(data)) as layer:
                        for item in layer:
                            if item.isfile():
                                assert_no_leak(layer.extractfile(item).read(), secrets, f"layer file {item.name}")
    saved.unlink()
    return layers


def test_secret_mount_gets_the_exact_value_and_leaves_no_trace(project, tmp_path, engine_host):
    """On Docker (BuildKit through the docker CLI) and on Podman (podman build)."""
    ws, secrets, tag = project
    ws.env.update(engine_host.env)
    cli = engine_host.cli
    temp_before = set(Path(tempfile.gettempdir()).glob("primus-build-*"))
    try:
        proc = ws.run("--json", "build", "--file", "Dockerfile", "--secret", "HF_TOKEN", "--secret", "PRIVATE_INDEX_URL", "--tag", tag, timeout=300)
        assert proc.returncode == 0, proc.stderr.decode()[-3000:]
        result = json.loads(proc.stdout)
        assert result["builder"] == ("podman" if engine_host.kind == "podman" else "buildkit") and result["tag"] == tag
        assert_no_leak(proc.stdout + proc.stderr, secrets, "build output")

        # The steps saw the exact values.
        shown = subprocess.run([*cli, "run", "--rm", tag, "cat", "/hf.sha256", "/index.sha256"], capture_output=True, text=True)
        assert shown.stdout.split() == [sha(secrets["HF_TOKEN"]), sha(secrets["PRIVATE_INDEX_URL"])], shown.stderr

        # Same provenance labels as the project's recipes.
        inspect = subprocess.run([*cli, "inspect", tag], capture_output=True, check=True).stdout
        labels = json.loads(inspect)[0]["Config"]["Labels"]
        for key in ("org.opencontainers.image.revision", "org.opencontainers.image.created", "org.opencontainers.image.source", "io.primus-runner.recipe-hash"):
            assert labels.get(key), key
        assert "io.primus-runner.flavor" not in labels  # a user's image, not a project recipe

        # Nowhere else: inspect, history, the saved image and every file in it, the runner's files.
        assert_no_leak(inspect, secrets, "docker inspect")
        history = subprocess.run([*cli, "history", "--no-trunc", "--format", "{{json .}}", tag], capture_output=True, check=True).stdout
        assert b"sha256sum" in history  # the steps are recorded, their secrets not
        assert_no_leak(history, secrets, "docker history --no-trunc")
        assert _scan_save(tag, secrets, tmp_path, cli) >= 2
        written = {path: data for path, data in ws.written_files().items() if not path.endswith("/project/.env")}
        for path, data in written.items():
            assert_no_leak(data, secrets, f"file {path}")
        assert set(Path(tempfile.gettempdir()).glob("primus-build-*")) <= temp_before  # nothing left behind
    finally:
        subprocess.run([*cli, "rmi", "-f", tag], capture_output=True)


def test_the_env_file_stays_out_of_the_default_context(project):
    ws, secrets, tag = project
    proc = ws.run("--json", "build", "--file", "Dockerfile", "--secret", "PRIVATE_INDEX_URL", "--tag", tag, "--dry-run")
    assert proc.returncode == 0, proc.stderr.decode()
    spec = json.loads(proc.stdout)
    assert ".env" not in spec["files"] and {"Dockerfile", "app.txt"} <= set(spec["files"]) and spec["context"] == str(ws.cwd)
    assert spec["secrets"] == ["PRIVATE_INDEX_URL"]
    assert spec["builder"]["kind"] == "buildkit"
    assert "--secret id=PRIVATE_INDEX_URL,env=PRIVATE_INDEX_URL" in spec["builder"]["command"]
    assert_no_leak(proc.stdout + proc.stderr, secrets, "dry-run output")
    text = ws.run("build", "--file", "Dockerfile", "--secret", "PRIVATE_INDEX_URL", "--secret", "HF_TOKEN", "--tag", tag, "--dry-run")
    out = text.stdout.decode()
    assert text.returncode == 0 and "builder:    buildkit" in out and "secrets:    PRIVATE_INDEX_URL, HF_TOKEN" in out
    assert "PRIVATE_INDEX_URL=<from env>" in out
    assert_no_leak(text.stdout + text.stderr, secrets, "dry-run text")


def test_missing_secrets_exit_2_before_anything_is_built(project, docker_client):
    ws, secrets, tag = project
    proc = ws.run("build", "--file", "Dockerfile", "--secret", "HF_TOKEN", "--secret", "NOT_SET_ONE", "--secret", "NOT_SET_TWO", "--tag", tag)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "NOT_SET_ONE" in err and "NOT_SET_TWO" in err and "HF_TOKEN" not in err  # all missing at once, only those
    assert "Traceback" not in err
    assert_no_leak(proc.stdout + proc.stderr, secrets, "refusal")
    from docker.errors import ImageNotFound

    with pytest.raises(ImageNotFound):
        docker_client.images.get(tag)
    # No daemon contact either: the same refusal with the daemon unreachable.
    offline = ws.run("build", "--file", "Dockerfile", "--secret", "NOT_SET_ONE", "--tag", tag, env={"DOCKER_HOST": "unix:///nonexistent.sock"})
    assert offline.returncode == 2


def test_a_secret_build_arg_is_refused_with_the_secret_mount_fix(project):
    ws, secrets, tag = project
    note = f"plain-{uuid.uuid4().hex}"  # a value under a name no policy calls secret: in scope only by --secret
    with open(ws.cwd / ".env", "a") as fh:
        fh.write(f"DEPLOY_NOTE={note}\n")
    secrets = {**secrets, "DEPLOY_NOTE": note}
    args = ["build", "--file", "Dockerfile", "--tag", tag, "--build-arg", f"HF_TOKEN={secrets['HF_TOKEN']}", "--build-arg", f"NOTE=x{note}"]
    proc = ws.run(*args, "--secret", "DEPLOY_NOTE")
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "use --secret HF_TOKEN and RUN --mount=type=secret,id=HF_TOKEN" in err
    assert "--build-arg NOTE: its value contains the value of a secret in scope" in err
    assert_no_leak(proc.stdout + proc.stderr, secrets, "refusal")
    assert "--build-arg NOTE" not in ws.run(*args).stderr.decode()  # without --secret the value is not a secret


# ------------------------------------------------------------------ the project's recipe, private index as a secret

def _wheel(path: Path) -> None:
    """A minimal pure-Python wheel: tinypkg 1.0."""
    import zipfile

    files = {
        "tinypkg/__init__.py": "VERSION = '1.0'\n",
        "tinypkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
        "tinypkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + "tinypkg-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as whl:
        for name, text in {**files, "tinypkg-1.0.dist-info/RECORD": record}.items():
            whl.writestr(name, text)


@pytest.fixture
def private_index(tmp_path):
    """A package index on the docker bridge that wants Basic credentials; records what it was sent."""
    import base64

    wheel = tmp_path / "tinypkg-1.0-py3-none-any.whl"
    _wheel(wheel)
    password = f"pw-{uuid.uuid4().hex}"
    expected = "Basic " + base64.b64encode(f"builder:{password}".encode()).decode()
    seen: list[bool] = []

    def answer(_server, request):
        ok = request["headers"].get("Authorization") == expected
        seen.append(ok)
        if not ok:
            return 401, {"WWW-Authenticate": 'Basic realm="index"'}, b""
        if request["path"].rstrip("/").endswith("/simple/tinypkg"):
            page = f'<html><body><a href="/files/{wheel.name}">{wheel.name}</a></body></html>'.encode()
            return 200, {"Content-Type": "text/html"}, page
        if request["path"].endswith(wheel.name):
            return 200, {"Content-Type": "application/octet-stream"}, wheel.read_bytes()
        return 404, {}, b""

    server = Server(answer, host_name="172.17.0.1", address="172.17.0.1")  # the build step reaches the bridge
    yield f"http://builder:{password}@{server.netloc}/simple", password, seen
    server.close()


def test_recipe_installs_from_a_private_index_given_as_a_secret(tmp_path, python_image, private_index, canary):
    url, password, seen = private_index
    recipes = tmp_path / "recipes"
    import shutil

    shutil.copytree(Path(__file__).resolve().parents[3] / "images", recipes)
    # Unique per run: BuildKit caches the install step by its inputs, never by the secret's value.
    (recipes / "common" / "requirements.txt").write_text(f"# {uuid.uuid4().hex}\ntinypkg==1.0\n")
    ws = Workspace(tmp_path / "ws", canary, config=f"container:\n  gpu: none\nimages:\n  dir: {recipes}\n")
    (ws.cwd / ".env").write_text(f"PIP_INDEX_URL={url}\n")  # the credentials live in the env file only
    secrets = {**canary, "PIP_INDEX_URL": url, "INDEX_PASSWORD": password}
    tag = f"primus-test/private-index:{uuid.uuid4().hex[:8]}"
    try:
        proc = ws.run("--json", "build", "--flavor", "rocm", "--base", python_image, "--tag", tag, "--secret", "PIP_INDEX_URL",
                   "--build-arg", "TRACKERS=tinypkg", "--build-arg", "PIP_TRUSTED_HOST=172.17.0.1", timeout=300)
        assert proc.returncode == 0, proc.stderr.decode()[-3000:]
        assert json.loads(proc.stdout)["builder"] == "buildkit"
        assert seen and all(seen)  # pip sent the exact credentials, and only those
        version = subprocess.run(["docker", "run", "--rm", tag, "python3", "-c", "import tinypkg; print(tinypkg.VERSION)"], capture_output=True, text=True)
        assert version.stdout.strip() == "1.0", version.stderr
        assert_no_leak(proc.stdout + proc.stderr, secrets, "build output")
        assert_no_leak(subprocess.run(["docker", "inspect", tag], capture_output=True, check=True).stdout, secrets, "docker inspect")
        assert_no_leak(subprocess.run(["docker", "history", "--no-trunc", tag], capture_output=True, check=True).stdout, secrets, "docker history")
        _scan_save(tag, secrets, tmp_path)
        for path, data in ws.written_files().items():
            if not path.endswith("/project/.env"):
                assert_no_leak(data, secrets, f"file {path}")
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)


def test_a_step_that_copies_a_secret_into_a_layer_is_caught_and_the_image_removed(project, docker_client):
    """The post-build layer scan: the value is in no config or history entry, only in a layer's file."""
    ws, secrets, tag = project
    (ws.cwd / "Dockerfile").write_text((ws.cwd / "Dockerfile").read_text() + "RUN --mount=type=secret,id=HF_TOKEN cp /run/secrets/HF_TOKEN /baked\n")
    proc = ws.run("build", "--file", "Dockerfile", "--secret", "HF_TOKEN", "--secret", "PRIVATE_INDEX_URL", "--tag", tag, timeout=300)
    err = proc.stderr.decode()
    assert proc.returncode == 3, err[-3000:]
    assert "held the value of a secret in scope (layer sha256:" in err and "it was removed" in err
    assert_no_leak(proc.stdout + proc.stderr, secrets, "failure output")
    from docker.errors import ImageNotFound

    with pytest.raises(ImageNotFound):
        docker_client.images.get(tag)


def test_the_builders_output_is_masked(project):
    """A step that prints its secret and fails: the full BuildKit log is shown, the value masked."""
    ws, secrets, tag = project
    (ws.cwd / "Dockerfile").write_text((ws.cwd / "Dockerfile").read_text() + "RUN --mount=type=secret,id=HF_TOKEN echo \"token=$(cat /run/secrets/HF_TOKEN)\"; exit 7\n")
    proc = ws.run("--verbose", "build", "--file", "Dockerfile", "--secret", "HF_TOKEN", "--secret", "PRIVATE_INDEX_URL", "--tag", tag, timeout=300)
    err = proc.stderr.decode()
    assert proc.returncode == 3, err[-3000:]
    assert "token=***" in err and "exit code: 7" in err
    assert_no_leak(proc.stdout + proc.stderr, secrets, "build output")
