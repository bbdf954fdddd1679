"""The ``trackers`` section of ``policies/config.schema.json``, generated from the registry.

The section is the framework's own keys (below) and each registered tracker's declared
keys (``SETTINGS.keys``, ``SETTINGS.metrics``), plus the variables that say where their
credentials go (``x-endpoint-variables``, and ``x-endpoint`` on a key that becomes one: read by the trust check). The file is generated
rather than assembled at load time: configs are loaded and validated by layers below the
trackers (``ps``, ``logs``, the early secret scope), which must not import every tracker,
and the file stays the one schema editors and users read. A unit test checks that the
file equals what the registry generates; after adding a tracker, run

    python -m runner.trackers.schema --write
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from runner.resources import policies_dir
from runner.trackers.config import FRAMEWORK_LABELS, declared_settings

ENDPOINTS_KEY = "x-endpoint-variables"
ENDPOINT_KEY = "x-endpoint"  # on a key whose value becomes an endpoint variable (setting_env): the trust check reads it

_BOOL = {"type": "boolean"}
_TEXT = {"type": ["string", "null"]}
_COUNT = {"type": "integer", "minimum": 0}

# Keys of the section that are the training framework's, not one tracker's.
COMMON: dict[str, dict] = {
    "overrides": {"enum": ["auto", "always", "never"], "description": "append the tracker settings as --key=value overrides: "
                  "auto (only to a Primus training command, train pretrain|posttrain), always, never"},
    "framework": {"enum": list(FRAMEWORK_LABELS)},
    **{key: _BOOL for key in ("log_throughput", "log_progress", "log_params_norm", "log_num_zeros_in_grad",
                              "enable_one_logger", "one_logger_async")},
    **{key: _TEXT for key in ("one_logger_project", "one_logger_run_name", "app_tag_run_name", "app_tag_run_version")},
    **{key: _COUNT for key in ("log_interval", "log_avg_skip_iterations", "log_avg_reset_interval", "timing_log_level",
                               "log_period")},
    "timing_log_option": {"enum": ["minmax", "max", "all"]},
    "logging_level": {"type": ["integer", "string", "null"]},
}
# TorchTitan's ``metrics:`` keys that are no one tracker's.
COMMON_METRICS: dict[str, dict] = {
    "log_freq": {"type": "integer", "minimum": 1},
    "save_for_all_ranks": _BOOL,
    "disable_color_printing": _BOOL,
}


def _endpoint_keys(declared) -> set[str]:
    return {key for mapping in declared.setting_env.values() for key, variable in mapping.items()
            if variable in declared.endpoints}


def section() -> dict:
    """The ``trackers`` schema: the common keys and every registered tracker's. A key two
    of them declare is refused: one key, one meaning."""
    keys, metrics = dict(COMMON), dict(COMMON_METRICS)
    endpoints: set[str] = set()
    for declared in declared_settings():
        for target, own in ((keys, declared.keys), (metrics, declared.metrics)):
            taken = sorted(set(own) & set(target))
            if taken:
                raise ValueError(f"tracker {declared.name} declares keys that are already taken: {', '.join(taken)}")
            target.update(own)
        endpoints.update(declared.endpoints)
        for key in _endpoint_keys(declared):  # a key the job turns into an endpoint variable is one too
            keys[key] = {**keys[key], ENDPOINT_KEY: True}
    keys["metrics"] = {"type": "object", "additionalProperties": False, "properties": metrics}
    return {"type": "object", "additionalProperties": False, ENDPOINTS_KEY: sorted(endpoints), "properties": keys}


def _ordered(new, old):
    """``new`` with the keys ``old`` has in ``old``'s order (messages list known keys in it),
    the others after them."""
    if not (isinstance(new, dict) and isinstance(old, dict)):
        return new
    kept = {key: _ordered(new[key], old[key]) for key in old if key in new}
    return {**kept, **{key: value for key, value in new.items() if key not in kept}}


def render(text: str) -> str:
    """The schema file's ``text`` with its ``trackers`` section as the registry generates it;
    the rest of the file is left as it is, byte for byte."""
    doc = json.loads(text)
    start = text.index('\n    "trackers": ') + len('\n    "trackers": ')
    _, length = json.JSONDecoder().raw_decode(text[start:])
    fresh = _ordered(section(), doc["properties"]["trackers"])
    body = json.dumps(fresh, indent=2, ensure_ascii=False).replace("\n", "\n    ")
    return text[:start] + body + text[start + length:]


def schema_path() -> Path:
    return policies_dir() / "config.schema.json"


def main(argv: list[str]) -> int:
    """``--write``: regenerate the section in place; otherwise exit 1 when the file differs."""
    path = schema_path()
    text = path.read_text(encoding="utf-8")
    fresh = render(text)
    if "--write" in argv:
        path.write_text(fresh, encoding="utf-8")
        return 0
    if fresh != text:
        print(f"{path}: the trackers section is not what the registry declares; run python -m runner.trackers.schema --write")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
