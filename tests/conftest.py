"""Shared pytest fixtures: real engines for integration tests, canary secrets.

Engines come from ``bash .ci/setup-engines.sh``. When one is missing, the
fixture fails the test under CI=true and skips it elsewhere (see
``engines.engine_missing``). Helpers for leak checks (``encodings``,
``assert_no_leak``) live in ``tests/engine_fixtures.py``; ``pytest.ini`` puts
``tests/`` on sys.path, so tests can ``from engine_fixtures import assert_no_leak``.
"""

from __future__ import annotations

import pytest

import engine_fixtures as engines
from cli_runner import run_cli
from plan_factory import plan_from


def pytest_configure(config):
    # Also declared in pytest.ini; repeated here so the markers exist even when
    # pytest is started with another ini file.
    for name, text in (
        ("docker", "needs the Docker daemon and the local primus-test/* images"),
        ("slurm", "needs the local two-node Slurm cluster (n1, n2)"),
        ("mlflow", "needs the MLflow server from /opt/primus-mlflow"),
    ):
        config.addinivalue_line("markers", f"{name}: {text} (bash .ci/setup-engines.sh)")
    config.addinivalue_line("markers", "podman: runs against rootful Podman's API (bash .ci/setup-podman.sh)")
    config.addinivalue_line(
        "markers",
        "engines(*kinds): the engines a test using `engine_host` runs against (default: docker and podman)",
    )


def pytest_generate_tests(metafunc):
    # A test that uses `engine_host` runs once per engine; @pytest.mark.engines("docker")
    # on the test (or on one of its pytest.param cases) narrows it: the Podman run of the
    # suite is a representative subset, see the test files.
    if "engine_host" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("engines")
        kinds = marker.args if marker else engines.ENGINE_KINDS
        metafunc.parametrize("engine_host", kinds, indirect=True, ids=list(kinds))


_FIXTURE_MARKERS = {
    "docker_client": "docker",
    "busybox_image": "docker",
    "python_image": "docker",
    "noshell_image": "docker",
    "slurm_cluster": "slurm",
    "mlflow_server": "mlflow",
}


def pytest_collection_modifyitems(config, items):
    # A test that uses an engine fixture carries that engine's marker, so
    # `-m "not docker"` etc. select correctly even if the test forgot it.
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        for fixture, marker in _FIXTURE_MARKERS.items():
            if fixture in names and item.get_closest_marker(marker) is None:
                item.add_marker(marker)
    kept, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        kind = callspec.params.get("engine_host") if callspec is not None else None
        marker = item.get_closest_marker("engines")  # a pytest.param's own marks count here
        if kind is not None and marker is not None and kind not in marker.args:
            dropped.append(item)
            continue
        if kind == "podman":
            item.add_marker("podman")
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


# ------------------------------------------------------------------ docker


@pytest.fixture(scope="session")
def docker_client():
    """docker.DockerClient (API version negotiated) that answers ping."""
    client = engines.docker_client_or_missing()
    yield client
    client.close()


@pytest.fixture(scope="session")
def busybox_image(docker_client) -> str:
    """'primus-test/busybox:latest': static busybox, /bin/sh and the usual applets."""
    return engines.require_image(docker_client, engines.BUSYBOX_IMAGE)


@pytest.fixture(scope="session")
def python_image(docker_client) -> str:
    """'primus-test/python:bookworm': Debian minbase with python3, venv, pip."""
    return engines.require_image(docker_client, engines.PYTHON_IMAGE)


@pytest.fixture(scope="session")
def noshell_image(docker_client) -> str:
    """'primus-test/noshell:latest': no /bin/sh; /busybox-bin/{busybox,env,echo,...}, PATH=/busybox-bin."""
    return engines.require_image(docker_client, engines.NOSHELL_IMAGE)


# ------------------------------------------------------------------ docker or podman


_ENGINE_HOSTS: dict[str, engines.EngineHost] = {}


@pytest.fixture
def engine_host(request, monkeypatch) -> engines.EngineHost:
    """The engine this run of the test targets (parametrised: docker, podman).

    The runner gets ``engine_host.env`` (tests add it to their Workspace's env); the
    ``docker`` CLI the helpers call reaches the same engine (``DOCKER_HOST`` is set
    for the test's own subprocesses too).
    """
    kind = getattr(request, "param", "docker")
    if kind not in _ENGINE_HOSTS:
        _ENGINE_HOSTS[kind] = engines.podman_or_missing() if kind == "podman" else engines.docker_or_missing()
    target = _ENGINE_HOSTS[kind]
    if target.host:
        monkeypatch.setenv("DOCKER_HOST", target.host)
    else:
        monkeypatch.delenv("DOCKER_HOST", raising=False)
    return target


# ------------------------------------------------------------------ slurm


@pytest.fixture(scope="session")
def slurm_cluster() -> engines.SlurmCluster:
    """SlurmCluster(partition='debug', nodes=('n1', 'n2'), states={...}), both nodes up."""
    return engines.slurm_cluster_or_missing()


# ------------------------------------------------------------------ mlflow


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    """URI 'http://127.0.0.1:PORT' of a fresh MLflow tracking server (sqlite
    backend, artifacts served over HTTP); a str with .port, .log_path,
    .artifacts and .db. Stopped at the end of the session."""
    uri, proc = engines.start_mlflow_server(tmp_path_factory.mktemp("mlflow"))
    try:
        yield uri
    finally:
        engines.stop_process_group(proc)


# ------------------------------------------------------------------ the CLI and the plan


@pytest.fixture
def cli(tmp_path):
    """``cli(*ARGS, cwd=DIR, env={...}, home=DIR)`` runs ``sys.executable -P -m runner ARGS`` and returns
    ``(rc, stdout, stderr)`` (a CliResult: also ``.returncode``/``.stdout``/``.stderr``). ``cwd``
    defaults to ``tmp_path``, ``home`` to ``cwd``; the environment is this one without the runner's,
    the trackers' and CI's variables, HOME and XDG_* inside the test's directory (tests/cli_runner.py)."""

    def run(*args: str, cwd=None, **kw):
        return run_cli(cwd or tmp_path, *args, **kw)

    return run


@pytest.fixture
def make_plan(tmp_path, monkeypatch):
    """``make_plan(config, command=("true",), host={...}, flags=["--gpu", "none"], name=...)``: the
    ``Planned`` that ``build_plan`` gives for ``config`` (a dict or YAML text, written as
    ``.primus.yaml``) and the flags as ``plan`` parses them, in a project directory that is also
    HOME and the current directory (tests/plan_factory.py)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".cache"))
    monkeypatch.chdir(tmp_path)

    def make(config, command=("true",), **kw):
        return plan_from(tmp_path, config, command, **kw)

    return make


# ------------------------------------------------------------------ secrets


@pytest.fixture
def clone(tmp_path):
    """A freshly cloned repository (``tmp_path/repo``, with ``.git``) and a home beside it
    (``run_in_clone``'s layout): nothing of the user's is inside the clone."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    return repo


@pytest.fixture
def canary() -> dict[str, str]:
    """Fresh unique fake secrets: {'WANDB_API_KEY': 'canary-wandb-api-key-<hex>', 'HF_TOKEN': ...,
    'DATABRICKS_TOKEN': ..., 'MLFLOW_TRACKING_PASSWORD': ..., 'MLFLOW_TRACKING_TOKEN': ...}."""
    return engines.make_canary()


@pytest.fixture
def servers():
    """``servers(answer, tls=None, host_name="127.0.0.1")``: a new hostile server
    (``loopback_servers.Server``), each closed after the test."""
    from loopback_servers import Server

    made: list[Server] = []

    def make(answer, tls=None, host_name="127.0.0.1"):
        made.append(Server(answer, tls, host_name))
        return made[-1]

    yield make
    for server in made:
        server.close()
