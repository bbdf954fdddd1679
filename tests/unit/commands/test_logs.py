"""``logs RUN|NAME|JOB``: a recorded run's output from the run store (any engine, any directory),
else the engine's ``logs`` verb for a name no run has."""

from __future__ import annotations

from runner.cli import main


def test_a_recorded_runs_output_is_shown_without_asking_an_engine(verbs, work, capfd):
    assert main(["up", "--engine", "process", "--name", "logged-job", "--", "sh", "-c", "echo marker-7f3; exit 3"]) == 3
    capfd.readouterr()
    assert main(["logs", "logged-job", "--engine", "toyverbs"]) == 0
    assert "marker-7f3" in capfd.readouterr().out
    assert verbs == []  # the run store answered


def test_a_name_no_run_has_goes_to_the_engines_logs_verb(verbs):
    assert main(["logs", "toy-9", "--tail", "5", "--node", "1", "--engine", "toyverbs"]) == 12
    [(verb, sel)] = verbs
    assert (verb, sel.names, sel.tail, sel.node, sel.follow) == ("logs", ("toy-9",), 5, "1", False)


def test_an_id_the_engine_claims_reaches_it_without_engine(verbs):
    assert main(["logs", "toy-9", "-f"]) == 12
    [(verb, sel)] = verbs
    assert verb == "logs" and sel.follow is True and sel.engine is None


def test_an_empty_name_is_a_usage_error_not_an_internal_one(verbs, capsys):
    # `logs "$RUN"` with RUN unset: what logs takes, not a crash to report
    assert main(["logs", "", "--engine", "toyverbs"]) == 2
    err = capsys.readouterr().err
    assert "`logs` needs a run id, a job or container name, or a Slurm job id" in err and "internal error" not in err
    assert verbs == []
