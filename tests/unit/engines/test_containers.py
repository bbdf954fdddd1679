"""The runner's containers on an engine: found only by the managed label, removed, named in a dry run."""

from __future__ import annotations

import os

from runner.engines.containers import managed, name_of, owner_filter, remove_containers, would_remove
from runner.launch_plan import LABEL, LABEL_OWNER


class FakeEngine:
    def __init__(self, items):
        self.items, self.asked, self.calls = items, [], []

    def containers(self, labels):
        self.asked.append(labels)
        return self.items

    def stop(self, cid):
        self.calls.append(("stop", cid))

    def remove(self, cid):
        self.calls.append(("remove", cid))


def test_every_filter_is_anded_with_the_managed_label():
    eng = FakeEngine([])
    managed(eng, {"io.primus-runner.job": "train", LABEL_OWNER: "1000"})
    assert eng.asked == [[f"{LABEL}=true", "io.primus-runner.job=train", f"{LABEL_OWNER}=1000"]]
    managed(eng, {})
    assert eng.asked[-1] == [f"{LABEL}=true"]


def test_the_owner_filter_is_the_callers_uid_unless_all_users():
    assert owner_filter() == {LABEL_OWNER: str(os.getuid())}
    assert owner_filter(all_users=True) == {}


def test_running_containers_are_stopped_then_every_one_removed():
    eng = FakeEngine([{"Id": "a1", "State": "running"}, {"Id": "b2", "State": "exited"}])
    assert remove_containers({LABEL_OWNER: "1000"}, eng) == 2
    assert eng.calls == [("stop", "a1"), ("remove", "a1"), ("remove", "b2")]
    assert eng.asked == [[f"{LABEL}=true", f"{LABEL_OWNER}=1000"]]


def test_names_and_the_dry_run_line():
    assert name_of({"Names": ["/primus-train"], "Id": "f" * 64}) == "primus-train"
    assert name_of({"Id": "0123456789abcdef"}) == "0123456789ab"
    assert would_remove([{"Names": ["/a"]}, {"Names": ["/b"]}]) == "would remove 2: a, b"
    assert would_remove([]) == "would remove 0"
