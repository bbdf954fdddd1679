"""What W&B reads: where its files are (its directory, named after the job) and, for an offline run,
the exact ``wandb sync`` that uploads it."""

from __future__ import annotations

from types import SimpleNamespace

from runner.trackers.wandb_settings import SETTINGS


def plan(env=None, settings=None, mode="online"):
    return SimpleNamespace(job=SimpleNamespace(public_env=lambda: dict(env or {}),
                                               trackers=SimpleNamespace(settings=dict(settings or {}), wandb_mode=mode)))


def test_the_wandb_directory_is_an_output_named_by_what_set_it():
    assert SETTINGS.outputs(plan({"WANDB_DIR": "/out"}, {"wandb_save_dir": "/out"})) == [("trackers.wandb_save_dir", "/out")]
    assert SETTINGS.outputs(plan({"WANDB_DIR": "/out"})) == [("WANDB_DIR", "/out")]
    assert SETTINGS.outputs(plan()) == []


def test_an_offline_run_is_named_with_its_sync_command(tmp_path):
    older = tmp_path / "wandb" / "offline-run-20260101_000000-abc12345"
    newer = tmp_path / "wandb" / "offline-run-20260102_000000-abc12345"
    older.mkdir(parents=True)
    newer.mkdir()
    (tmp_path / "wandb" / "offline-run-20260103_000000-other999").mkdir()
    assert SETTINGS.after_line(tmp_path, plan(mode="offline"), "abc12345") == (
        f"W&B offline run abc12345: {newer}; upload it with: wandb sync {newer}")
    assert SETTINGS.after_line(tmp_path, plan(mode="dryrun"), "zzz") == (
        f"W&B: no offline run zzz under {tmp_path / 'wandb'} (the job did not start W&B)")
    assert SETTINGS.after_line(tmp_path, plan(mode="offline"), None) == (
        f"W&B: no offline run under {tmp_path / 'wandb'} (the job did not start W&B)")


def test_an_online_run_names_its_files():
    assert SETTINGS.after_line("/host/out", plan(mode="online"), "abc12345") == "W&B files: /host/out"


def test_a_requeued_job_resumes_its_run():
    assert SETTINGS.run_id == "WANDB_RUN_ID" and SETTINGS.requeue_env == {"WANDB_RESUME": "allow"}
