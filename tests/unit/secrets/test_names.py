"""Variable names, the runner's own variables, and which mapping keys a message may show."""

from __future__ import annotations

import pytest

from runner.secrets.names import HIDDEN_KEY, NAME_RE, is_runner_variable, shown_key


@pytest.mark.parametrize("name, valid", [("HF_TOKEN", True), ("_x1", True), ("1ABC", False), ("A-B", False),
                                         ("A B", False), ("", False), ("A\n", False)])
def test_a_variable_name_is_letters_digits_and_underscore_not_starting_with_a_digit(name, valid):
    assert bool(NAME_RE.match(name)) is valid


def test_runner_variables_are_told_by_their_prefix_in_any_case():
    assert is_runner_variable("PRIMUS_RUNNER_TRUST_PROJECT") and is_runner_variable("primus_runner_x")
    assert not is_runner_variable("PRIMUS_CACHE_ROOT")


@pytest.mark.parametrize("key", ["image", "log_limit_mb", "allow-env", "HF_TOKEN", "MLFLOW_TRACKING_URI", "Xy!", 7])
def test_config_keys_variable_names_and_short_typos_are_shown(key):
    assert shown_key(key) == str(key)


@pytest.mark.parametrize("key", ["ghp_abc", "hf_abcdefghijkl", "glpat-0123456789", "AbCdEf0123456789xyz",
                                 "s3cr3t/Value+with=signs"])
def test_a_key_shaped_like_a_token_is_hidden(key):
    assert shown_key(key) == HIDDEN_KEY
