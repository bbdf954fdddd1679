"""The claim of free GPUs: leases under one lock, so racing launches never share a GPU."""

from __future__ import annotations

import json
import multiprocessing
import os

import pytest

from gpu_tree import write_tree
from runner.gpus import GpuError, discover, holders
from runner.gpus.selection import parse


@pytest.fixture
def leases(tmp_path, monkeypatch):
    monkeypatch.setenv(holders.LEASE_DIR_ENV, str(tmp_path / "leases"))
    return tmp_path / "leases"


def _claimer(root, count, start, done, results):
    found = discover("rocm", root)
    start.wait()
    try:
        chosen = holders.claim(parse(str(count)), found, "rocm", f"job-{os.getpid()}", lambda: {})
        results.put([g.index for g in chosen])
    except GpuError as exc:
        results.put(exc.message)
    done.wait()  # a launch's lease lives as long as its process


def test_racing_claims_get_disjoint_gpus(tmp_path, leases):
    root = str(write_tree(tmp_path / "host", amd=8))
    ctx = multiprocessing.get_context("fork")
    start, done, results = ctx.Barrier(8), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_claimer, args=(root, 1, start, done, results)) for _ in range(8)]
    for p in procs:
        p.start()
    got = [results.get(timeout=60) for _ in procs]
    done.set()
    for p in procs:
        p.join(30)
    assert sorted(i for g in got for i in g) == list(range(8)), got


def test_a_ninth_claim_fails_naming_the_launches_that_hold_them(tmp_path, leases):
    root = str(write_tree(tmp_path / "host", amd=2))
    ctx = multiprocessing.get_context("fork")
    start, done, results = ctx.Barrier(1), ctx.Event(), ctx.Queue()
    holder = ctx.Process(target=_claimer, args=(root, 2, start, done, results))
    holder.start()
    assert results.get(timeout=60) == [0, 1]
    with pytest.raises(GpuError, match=r"only 0 of 2 rocm GPUs are free; the others are held by launch job-\d+"):
        holders.claim(parse("1"), discover("rocm", root), "rocm", "mine", lambda: {})
    done.set()
    holder.join(30)
    # its process is gone: the lease is stale, the GPUs are free again, and the stale file is tidied
    assert [g.index for g in holders.claim(parse("2"), discover("rocm", root), "rocm", "mine", lambda: {})] == [0, 1]
    assert [p.name for p in leases.iterdir() if p.suffix == ".json"] == [f"{os.getuid()}-{os.getpid()}.json"]
    holders.release()


def test_container_labels_hold_gpus(tmp_path, leases):
    gpus = discover("rocm", str(write_tree(tmp_path / "host", amd=4)))

    class Eng:
        def containers(self, labels):
            assert holders.LABEL_GPUS in labels
            return [{"Names": ["/alice-job"], "State": "running", "Labels": {holders.LABEL_GPUS: holders.label_value(gpus[:3])}},
                    {"Names": ["/old"], "State": "exited", "Labels": {holders.LABEL_GPUS: holders.label_value(gpus[3:])}}]

    held = holders.container_holders(Eng())
    chosen = holders.claim(parse("1"), gpus, "rocm", "mine", lambda: held)
    assert [g.index for g in chosen] == [3]  # an exited container holds nothing
    lease = json.loads(next(p for p in leases.iterdir() if p.suffix == ".json").read_text())
    assert lease["uuids"] == [gpus[3].uuid] and lease["pid"] == os.getpid()
    holders.release()
    assert not [p for p in leases.iterdir() if p.suffix == ".json"]
