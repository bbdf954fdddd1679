"""A secret value as a type: ``***`` in every format, never serialised, compared in constant time."""

from __future__ import annotations

import copy
import json
import pickle

import pytest
import yaml

from runner.secrets import MASK, Secret

VALUE = "canary-7f3a9c2e1b8d4f60"


def test_secret_prints_mask_in_every_format():
    s = Secret(VALUE)
    for text in (str(s), repr(s), f"{s}", f"{s:>40}", "%s" % s, "{}".format(s), str([s]), str({"k": s})):
        assert VALUE not in text
        assert MASK in text
    assert s.reveal() == VALUE


@pytest.mark.parametrize(
    "serialise",
    [json.dumps, pickle.dumps, yaml.safe_dump, yaml.dump, lambda s: pickle.dumps({"k": [s]})],
    ids=["json", "pickle", "yaml-safe", "yaml", "nested-pickle"],
)
def test_secret_refuses_serialisation(serialise):
    with pytest.raises(Exception) as err:
        serialise(Secret(VALUE))
    assert VALUE not in str(err.value)


def test_deepcopy_keeps_the_same_secret():
    s = Secret(VALUE)
    assert copy.deepcopy({"a": s})["a"] is s


def test_a_secret_of_a_secret_is_its_value_not_a_nesting():
    inner = Secret(VALUE)
    assert Secret(inner).reveal() == VALUE


def test_equal_values_are_equal_and_a_secret_never_equals_its_plain_text():
    assert Secret(VALUE) == Secret(VALUE)
    assert Secret(VALUE) != Secret(VALUE + "x")
    assert Secret(VALUE) != VALUE  # no comparison with a str: that would let ``==`` probe a value


def test_a_secret_is_unhashable_and_false_only_when_empty():
    with pytest.raises(TypeError):
        hash(Secret(VALUE))
    assert bool(Secret(VALUE)) is True and bool(Secret("")) is False


def test_copy_keeps_the_same_object():
    s = Secret(VALUE)
    assert copy.copy(s) is s and copy.copy([s])[0] is s
