"""``aws-sm:secret-id[#key]`` against a stand-in client: the whole secret or one JSON key, and each
AWS failure told as missing (exit 2) or unreachable (exit 1) without the value. The real store
(moto) is tests/integration/secrets/test_secret_refs_stores.py."""

from __future__ import annotations

import json
import logging

import boto3
import botocore.exceptions as bx
import pytest

from runner.secrets.refs import aws_sm
from runner.secrets.refs.failures import Missing, Unreachable
from secret_ref_helpers import canary, ref


class _Client:
    def __init__(self, answer):
        self.answer, self.asked = answer, []

    def get_secret_value(self, SecretId):
        self.asked.append(SecretId)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.fixture
def aws(monkeypatch):
    """Answer with ``aws.client.answer``; ``aws.regions`` records the region each client was made for."""
    client = _Client({})
    regions: list = []

    class Session:
        region_name = None

        def client(self, service, region_name=None, config=None):
            assert service == "secretsmanager" and config.retries == {"total_max_attempts": 1}
            regions.append(region_name)
            return client

    monkeypatch.setattr(boto3.session, "Session", Session)
    monkeypatch.delenv("AWS_REGION", raising=False)
    client.regions = regions
    return client


@pytest.mark.parametrize("target, problem", [("prod/x", None), ("prod/x#key", None), ("#key", "no secret id before '#'"),
                                             (" #k", "no secret id before '#'"), ("prod/x#", "no JSON key after '#'")])
def test_target_problem(target, problem):
    assert aws_sm.target_problem(target) == problem


def test_the_whole_secret_string_or_one_json_key(aws):
    value = canary("aws")
    aws.answer = {"SecretString": json.dumps({"api_key": value, "n": 3, "on": True})}
    assert aws_sm.fetch(ref("T", "aws-sm:prod/wandb#api_key"), None, 5) == value
    assert aws_sm.fetch(ref("T", "aws-sm:prod/wandb#n"), None, 5) == "3"
    assert aws_sm.fetch(ref("T", "aws-sm:prod/wandb#on"), None, 5) == "true"
    assert json.loads(aws_sm.fetch(ref("T", "aws-sm:prod/wandb"), None, 5))["api_key"] == value
    assert aws.asked == ["prod/wandb"] * 4


def test_a_binary_secret_is_read_as_utf8_text(aws):
    aws.answer = {"SecretBinary": "tök".encode()}
    assert aws_sm.fetch(ref("T", "aws-sm:bin"), None, 5) == "tök"
    aws.answer = {"SecretBinary": b"\xff\xfe"}
    with pytest.raises(Missing, match="binary, not UTF-8"):
        aws_sm.fetch(ref("T", "aws-sm:bin"), None, 5)


def test_an_arn_names_its_region_else_aws_region_is_read(aws, monkeypatch):
    aws.answer = {"SecretString": "v-123456"}
    aws_sm.fetch(ref("T", "aws-sm:arn:aws:secretsmanager:eu-west-3:123:secret:x"), None, 5)
    monkeypatch.setenv("AWS_REGION", "us-east-2")
    aws_sm.fetch(ref("T", "aws-sm:plain"), None, 5)
    assert aws.regions == ["eu-west-3", "us-east-2"]


@pytest.mark.parametrize("doc, says", [("not json {c}", "is not JSON"), ('{{"b": "{c}"}}', "has no JSON key 'a'"),
                                       ('["a", "{c}"]', "has no JSON key 'a'"), ('{{"a": {{"x": "{c}"}}}}', "holds an object"),
                                       ('{{"a": ["{c}"]}}', "a list or null"), ('{{"a": null, "b": "{c}"}}', "a list or null")])
def test_a_key_that_is_not_there_or_not_a_scalar_is_missing_and_the_document_is_not_shown(aws, doc, says):
    value = canary("aws")
    aws.answer = {"SecretString": doc.format(c=value)}
    with pytest.raises(Missing) as info:
        aws_sm.fetch(ref("T", "aws-sm:s#a"), None, 5)
    assert says in info.value.message and not isinstance(info.value, Unreachable)
    assert value not in f"{info.value.message} {info.value.hint} {info.value.foreign}"


def _client_error(code: str, status: int, message: str = "") -> bx.ClientError:
    return bx.ClientError({"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status}},
                          "GetSecretValue")


@pytest.mark.parametrize("error, kind, says", [
    (bx.NoRegionError(), Missing, "no AWS region"),
    (bx.NoCredentialsError(), Missing, "no AWS credentials"),
    (bx.EndpointConnectionError(endpoint_url="https://x"), Unreachable, "not reachable (EndpointConnectionError)"),
    (_client_error("ResourceNotFoundException", 400), Missing, "no such secret"),
    (_client_error("AccessDeniedException", 400, "denied to arn"), Missing, "refused (AccessDeniedException)"),
    (_client_error("ThrottlingException", 400), Unreachable, "refused (ThrottlingException)"),
    (_client_error("InternalServiceError", 503), Unreachable, "refused (InternalServiceError)"),
])
def test_each_aws_failure_is_missing_or_unreachable(aws, error, kind, says):
    aws.answer = error
    with pytest.raises(Missing) as info:
        aws_sm.fetch(ref("T", "aws-sm:s"), None, 5)
    assert type(info.value) is kind and says in info.value.message


def test_the_store_s_own_message_is_kept_apart_for_masking(aws):
    aws.answer = _client_error("AccessDeniedException", 400, "user x may not read s")
    with pytest.raises(Missing) as info:
        aws_sm.fetch(ref("T", "aws-sm:s"), None, 5)
    assert info.value.foreign == "user x may not read s" and "may not" not in info.value.message


def test_setup_keeps_botocores_response_bodies_out_of_debug_logs():
    assert aws_sm.setup() is None
    parsers = logging.getLogger("botocore.parsers")
    filters = list(parsers.filters)
    aws_sm.setup()
    assert parsers.filters == filters  # set up once however many references use the store
    value = canary("aws")
    record = logging.LogRecord("botocore.parsers", logging.DEBUG, "", 0, f"Response body: {value}", (), None)
    assert parsers.filter(record) is False
