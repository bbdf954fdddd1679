"""``node-agent PLAN`` / ``node-agent --cleanup JOB``: the Slurm node agent through the CLI; outside
a job step it refuses, and a cleanup takes only a Slurm job id."""

from __future__ import annotations

from ux_helpers import NO_DOCKER


def test_the_agent_outside_a_job_step_is_a_usage_error(cli, tmp_path):
    (tmp_path / "job.plan").write_text("{}")
    rc, _, err = cli("node-agent", str(tmp_path / "job.plan"))
    assert rc == 2 and "node-agent runs inside a Slurm job step" in err, err


def test_cleanup_takes_only_a_slurm_job_id(cli):
    # the --cleanup body: the id is checked before any engine is asked (none answers here)
    rc, _, err = cli("node-agent", "--cleanup", "12;rm", env={"DOCKER_HOST": NO_DOCKER})
    assert rc == 2 and "'12;rm' is not a Slurm job id" in err, err


def test_cleanup_of_a_job_asks_the_engine(cli):
    rc, _, err = cli("node-agent", "--cleanup", "1234", env={"DOCKER_HOST": NO_DOCKER, "CONTAINER_HOST": "unix:///nonexistent/podman.sock"})
    assert rc == 1 and "Traceback" not in err, err  # no engine answers: the contract's exit 1


def test_an_empty_cleanup_job_is_refused_as_no_job_id(cli):
    # `--cleanup ""` is the cleanup asked with no id, not the agent's run
    rc, _, err = cli("node-agent", "--cleanup", "", env={"DOCKER_HOST": NO_DOCKER})
    assert rc == 2 and "'' is not a Slurm job id" in err, err
