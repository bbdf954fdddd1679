"""TensorBoard as a tracker: where the job writes its event files, the line after the job, and nothing contacted."""

from __future__ import annotations

from types import SimpleNamespace

from runner.trackers import tensorboard
from runner.trackers.base import Handshake


def plan(framework="megatron", settings=None):
    return SimpleNamespace(job=SimpleNamespace(trackers=SimpleNamespace(framework=framework, settings=dict(settings or {}))))


def test_where_the_event_files_go():
    outputs = tensorboard.SETTINGS.outputs
    assert outputs(plan(settings={"tensorboard_dir": "/out/tb"})) == [("trackers.tensorboard_dir", "/out/tb")]
    assert outputs(plan()) == []
    assert outputs(plan("torchtitan", {"metrics": {"save_tb_folder": "runs/tb"}})) == [("trackers.metrics.save_tb_folder", "runs/tb")]
    assert outputs(plan("torchtitan", {"tensorboard_dir": "/ignored"})) == [("trackers.metrics.save_tb_folder", "tb")]


def test_the_line_after_the_job(tmp_path):
    after = tensorboard.SETTINGS.after_line
    assert after(tmp_path, None, None) == "TensorBoard: the job wrote no event files"
    (tmp_path / "run1").mkdir()
    (tmp_path / "run1" / "events.out.tfevents.1700000000.host").write_bytes(b"")
    assert after(tmp_path, None, None) == f"TensorBoard events: {tmp_path} (tensorboard --logdir {tmp_path})"


def test_nothing_is_contacted_or_opened():
    assert tensorboard.check(plan(), 5) == {"tracker": "tensorboard", "status": "skipped",
                                            "detail": "writes local event files; nothing to contact"}
    hs = Handshake()
    assert tensorboard.begin(plan(), None, hs) is None and hs.env == {} and hs.links == {}
