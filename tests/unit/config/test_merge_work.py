"""The config merge is linear in the size of what it merges: counted, not timed.

An allowlist of N names once cost N scans of the layer's N locations (8,000 names:
7 s of ``plan``). Here every read of a layer's locations is counted.
"""

from __future__ import annotations

from runner.config import ENV_PATH, _merge


class CountingLines(dict):
    """A layer's ``path -> file:line`` that counts every entry anything reads."""

    reads = 0

    def __iter__(self):
        for key in dict.__iter__(self):
            CountingLines.reads += 1
            yield key

    def items(self):
        for key, value in dict.items(self):
            CountingLines.reads += 1
            yield key, value

    def keys(self):
        return list(iter(self))

    def __getitem__(self, key):
        CountingLines.reads += 1
        return dict.__getitem__(self, key)


def _layer(names: list[str], source: str) -> tuple[dict, CountingLines]:
    data = {"container": {"options": {"env": list(names), "image": "img"}}, "trackers": {"framework": "generic"}}
    lines = CountingLines({("container",): f"{source}:1", ("container", "options"): f"{source}:2",
                           ("container", "options", "image"): f"{source}:3", ENV_PATH: f"{source}:4",
                           ("trackers",): f"{source}:5", ("trackers", "framework"): f"{source}:6"})
    for i in range(len(names)):
        dict.__setitem__(lines, ENV_PATH + (i,), f"{source}:{i + 7}")
    return data, lines


def _work(n: int) -> tuple[int, dict, dict]:
    low, low_lines = _layer([f"LOW_{i}" for i in range(3)], "low.yaml")
    high, high_lines = _layer([f"NAME_{i}" for i in range(n)], "high.yaml")
    merged_lines: dict = {}
    merged = _merge({}, low, (), merged_lines, low_lines)
    CountingLines.reads = 0
    merged = _merge(merged, high, (), merged_lines, high_lines)
    return CountingLines.reads, merged, merged_lines


def test_merging_an_allowlist_reads_each_location_a_bounded_number_of_times():
    for n in (500, 2000, 8000):
        reads, merged, lines = _work(n)
        assert reads <= 4 * (n + 10), f"{reads} reads of the locations for {n} names: more than linear"
        assert len(merged["container"]["options"]["env"]) == n + 3
        assert lines[ENV_PATH + (3,)] == "high.yaml:7" and lines[ENV_PATH + (n + 2,)] == f"high.yaml:{n + 6}"


def test_work_grows_with_the_input_not_with_its_square():
    small, _, _ = _work(1000)
    large, _, _ = _work(4000)
    assert large <= 5 * small, (small, large)  # 4x the names: 4x the work (16x when quadratic)


def test_a_replaced_subtree_leaves_no_stale_locations():
    low = {"container": {"options": {"volume": ["/a:/a", "/b:/b"]}, "gpu": {"x": 1}}}
    lines: dict = {}
    _merge({}, low, (), lines, {("container",): "a:1", ("container", "gpu"): "a:2", ("container", "gpu", "x"): "a:3"})
    merged = _merge(low, {"container": {"gpu": "none"}}, (), lines, {("container",): "b:1", ("container", "gpu"): "b:2"})
    assert merged["container"]["gpu"] == "none"
    assert ("container", "gpu", "x") not in lines and lines[("container", "gpu")] == "b:2"
