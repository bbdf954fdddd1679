"""--gpus all|N|LIST: parsing, resolving against a host's GPUs, and choosing free ones."""

from __future__ import annotations

import pytest

from gpu_tree import amd_uuid, write_tree
from runner.gpus import GpuError, discover
from runner.gpus.holders import choose
from runner.gpus.selection import normal_uuid, parse, pick_listed


@pytest.fixture
def amd(tmp_path):
    return discover("rocm", str(write_tree(tmp_path, amd=8)))


def test_forms():
    assert parse("all").kind == "all" and parse(None).kind == "all"
    assert parse("2").kind == "count" and parse(2).count == 2
    assert parse("0-3,5").items == (0, 1, 2, 3, 5)
    assert parse("device=5").kind == "list" and parse('"device=5,6"').items == (5, 6)  # Docker's form: one index
    assert parse("GPU-5a1c0ffee0000003,1").items == ("GPU-5a1c0ffee0000003", 1)


@pytest.mark.parametrize("text, needle", [("0-3,2", "overlap"), ("1-3,3-4", "overlap"), ("3-1", "backwards"),
                                          ("a,b", "not an index"), ("0;rm", "not an index"), ("1,1", "overlap")])
def test_bad_lists_are_refused(text, needle):
    with pytest.raises(GpuError, match=needle):
        parse(text)


def test_uuid_spellings_match():
    assert normal_uuid("0x5A1C0FFEE0000003") == normal_uuid("GPU-5a1c0ffee0000003")


def test_list_by_index_range_and_uuid(amd):
    assert [g.index for g in pick_listed(parse("4-5,0"), amd, "rocm")] == [4, 5, 0]
    assert [g.index for g in pick_listed(parse(f"GPU-{amd_uuid(6)[2:].lower()},{amd_uuid(7)}"), amd, "rocm")] == [6, 7]


def test_a_missing_index_or_unknown_uuid_names_what_was_found(amd):
    with pytest.raises(GpuError, match="no rocm GPU 8 on this host .found 8: 0-7"):
        pick_listed(parse("7-8"), amd, "rocm")
    with pytest.raises(GpuError, match="no rocm GPU has the UUID GPU-1234"):
        pick_listed(parse("GPU-1234"), amd, "rocm")
    with pytest.raises(GpuError, match="named twice"):
        pick_listed(parse(f"0,{amd_uuid(0)}"), amd, "rocm")


def test_count_takes_free_gpus_and_names_the_holders_when_too_few(amd):
    held = {normal_uuid(amd[i].uuid): "container alice-job" for i in (0, 1, 2)}
    assert [g.index for g in choose(parse("2"), amd, "rocm", held)] == [3, 4]
    with pytest.raises(GpuError, match="only 5 of 8 rocm GPUs are free; the others are held by container alice-job"):
        choose(parse("6"), amd, "rocm", held)
    with pytest.raises(GpuError, match="this host has 8 rocm GPUs"):
        choose(parse("9"), amd, "rocm", {})


def test_a_list_with_a_held_gpu_is_refused_naming_the_holder(amd):
    held = {normal_uuid(amd[4].uuid): "container bob-job"}
    with pytest.raises(GpuError, match="GPU 4 is held by container bob-job"):
        choose(parse("4-7"), amd, "rocm", held)
    assert len(choose(parse("all"), amd, "rocm", held)) == 8  # all is all (the default), not checked
