"""``aws-sm:secret-id[#key]``: AWS Secrets Manager, the whole secret or one JSON key of it.
boto3 (the ``aws`` extra) is imported only when a reference needs it."""

from __future__ import annotations

import json
import logging
import os

from runner.secrets.refs.failures import Missing, Unreachable

FORM = "aws-sm:secret-id[#key]"
AWS_EXTRA_HINT = "pip install 'primus-runner[aws]'"


def target_problem(target: str) -> str | None:
    secret_id, hashmark, key = target.partition("#")
    if not secret_id.strip():
        return "no secret id before '#'"
    if hashmark and not key:
        return "no JSON key after '#'"
    return None


class _NoDebugRecords(logging.Filter):
    """botocore.parsers logs every response body at DEBUG ("Response body: …"): with
    DEBUG logging on (an application's, a user's sitecustomize) that is the secret."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.DEBUG


def setup() -> Unreachable | None:
    """Import boto3 (the optional extra) once, before the clock starts (it takes a while):
    the failure every aws-sm: reference then reports when it is missing."""
    try:
        import boto3  # noqa: F401
        import botocore.config  # noqa: F401
    except ImportError:
        return Unreachable("boto3 is not installed", hint=AWS_EXTRA_HINT)
    parsers = logging.getLogger("botocore.parsers")
    if not any(isinstance(f, _NoDebugRecords) for f in parsers.filters):
        parsers.addFilter(_NoDebugRecords())
    return None


def fetch(ref, lookup, timeout: float) -> str:
    import boto3
    import botocore.config
    import botocore.exceptions as bx

    secret_id, _, key = ref.target.partition("#")
    # An ARN names its region; otherwise the usual chain (AWS_REGION, profile).
    parts = secret_id.split(":")
    region = parts[3] if secret_id.startswith("arn:") and len(parts) > 3 and parts[3] else None
    config = botocore.config.Config(
        connect_timeout=timeout, read_timeout=timeout, retries={"total_max_attempts": 1}
    )
    try:
        # A session per call: boto3's default session is not thread-safe. The client
        # honours AWS_ENDPOINT_URL and the usual credential chain by itself.
        session = boto3.session.Session()
        # AWS_REGION is the other SDKs' and the AWS CLI's name; boto3 reads only AWS_DEFAULT_REGION.
        region = region or session.region_name or os.environ.get("AWS_REGION") or None
        client = session.client("secretsmanager", region_name=region, config=config)
        response = client.get_secret_value(SecretId=secret_id)
    except bx.NoRegionError:
        raise Missing("no AWS region", hint="set AWS_REGION or AWS_DEFAULT_REGION, or give the secret's ARN") from None
    except (bx.NoCredentialsError, bx.PartialCredentialsError):
        raise Missing(
            "no AWS credentials", hint="the usual chain: AWS_PROFILE, AWS_ACCESS_KEY_ID/..., an instance role"
        ) from None
    except (bx.EndpointConnectionError, bx.ConnectTimeoutError, bx.ReadTimeoutError, bx.ConnectionClosedError) as exc:
        raise Unreachable(f"AWS Secrets Manager not reachable ({type(exc).__name__})") from None
    except bx.ClientError as exc:
        error = exc.response.get("Error", {})
        code = error.get("Code", "error")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        if code == "ResourceNotFoundException":
            raise Missing("no such secret in AWS Secrets Manager") from None
        kind = Unreachable if status >= 500 or code in ("ThrottlingException", "ServiceUnavailable") else Missing
        raise kind(f"AWS Secrets Manager refused ({code})", foreign=str(error.get("Message", ""))) from None
    except bx.ParamValidationError:
        raise Missing("not a valid secret id for AWS Secrets Manager") from None
    except bx.BotoCoreError as exc:  # SSO token expired, credential process failed, ...
        raise Unreachable(f"AWS Secrets Manager not reachable ({type(exc).__name__})") from None
    text = response.get("SecretString")
    if text is None:
        try:
            text = bytes(response.get("SecretBinary") or b"").decode("utf-8")
        except UnicodeDecodeError:
            raise Missing("the secret is binary, not UTF-8 text") from None
    if not key:
        return text
    try:
        document = json.loads(text)
    except ValueError:
        raise Missing(f"the secret is not JSON, so it has no key '{key}'") from None
    if not isinstance(document, dict) or key not in document:
        raise Missing(f"the secret has no JSON key '{key}'")
    value = document[key]
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)):
        return json.dumps(value)
    raise Missing(f"JSON key '{key}' holds {'an object' if isinstance(value, dict) else 'a list or null'}, not a string")
