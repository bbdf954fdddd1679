"""``__complete KIND`` (``runner.cli.complete_names``): what TAB offers after ``logs``/``status``/``cancel``/
``down``: run ids and names from the run store, Slurm job ids from the job directories, the user's
runner containers from the engine; never an error, whatever is broken."""

from __future__ import annotations

import json
import os

from ux_helpers import NO_DOCKER

from runner.cli.complete_names import job_ids

NO_ENGINE = {"DOCKER_HOST": NO_DOCKER, "CONTAINER_HOST": "unix:///nonexistent/podman.sock"}


def _job_dirs(root):
    for name, job, when in (("a", "12", 1000), ("b", "34_2", 2000), ("c", "x", 3000)):
        out = root / "primus-runs" / name / f"slurm-{job}.out"
        out.parent.mkdir(parents=True)
        out.write_text("")
        os.utime(out, (when, when))


def test_job_ids_of_the_job_directories_newest_first(tmp_path):
    _job_dirs(tmp_path)
    assert job_ids([tmp_path / "primus-runs", tmp_path / "missing"]) == ["34_2", "12"]  # slurm-x.out is no job's


def test_jobs_and_names_through_the_cli(cli, tmp_path):
    _job_dirs(tmp_path)
    assert cli("up", "--engine", "process", "--name", "tab-job", "--", "true").rc == 0
    [run] = json.loads(cli("--json", "runs").stdout)
    rc, out, err = cli("__complete", "jobs", env=NO_ENGINE)
    assert (rc, out) == (0, "34_2\n12\n"), err
    rc, out, err = cli("__complete", "names", env=NO_ENGINE)
    assert rc == 0 and out.splitlines() == [run["id"], "tab-job", "34_2", "12"], err


def test_no_engine_is_no_containers_and_no_error(cli):
    rc, out, err = cli("__complete", "containers", env=NO_ENGINE)
    assert (rc, out, err) == (0, "", "")


def test_a_broken_run_store_still_completes_the_job_directories(cli, tmp_path):
    _job_dirs(tmp_path)
    store = tmp_path / ".local" / "state" / "primus-runner" / "runs.db"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"not a database at all" * 100)
    rc, out, err = cli("__complete", "names", env=NO_ENGINE)
    assert (rc, out) == (0, "34_2\n12\n") and "Traceback" not in err, err
