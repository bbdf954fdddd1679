"""A path inside the job on the host: through the deepest mount that holds it; none under a named volume."""

from __future__ import annotations

from types import SimpleNamespace as Mount

from runner.trackers.job_paths import covering, holds, host_path

MOUNTS = [Mount(source="/host/work", target="/workspace"), Mount(source="/host/out", target="/workspace/out/"),
          Mount(source="cache", target="/cache", named_volume=True)]


def test_the_deepest_mount_wins():
    assert covering(MOUNTS, "/workspace/out/tb").source == "/host/out"
    assert covering(MOUNTS, "/workspace/outside").source == "/host/work"  # a prefix of a name is not a parent
    assert covering(MOUNTS, "/elsewhere") is None


def test_the_host_path_of_a_job_path():
    assert host_path(MOUNTS, "/workspace/out/tb/run1") == "/host/out/tb/run1"
    assert host_path(MOUNTS, "/workspace/out") == "/host/out"
    assert host_path(MOUNTS, "/workspace/a/../logs") == "/host/work/logs"
    assert host_path(MOUNTS, "/tmp/tb") == "/tmp/tb"  # under no mount: a job on the host
    assert host_path(MOUNTS, "/cache/tb") is None
    assert host_path([Mount(source="/h", target="/")], "/x/y") == "/h/x/y"


def test_holds_a_matching_file_at_any_depth(tmp_path):
    assert not holds(tmp_path, "events.out.tfevents.*")
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "events.out.tfevents.1").mkdir()  # a directory is not a file
    assert not holds(tmp_path, "events.out.tfevents.*")
    (tmp_path / "a" / "b" / "events.out.tfevents.2").write_text("")
    assert holds(tmp_path, "events.out.tfevents.*")
    assert not holds(tmp_path / "absent", "*")
