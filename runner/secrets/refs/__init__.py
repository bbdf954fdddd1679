"""Secret references: the config names where a secret lives, never its value.

```yaml
secrets:
  HF_TOKEN: pass:ml/hf                      # first line of `pass show ml/hf`
  WANDB_API_KEY: aws-sm:prod/wandb#api_key  # AWS Secrets Manager, a JSON field
  DATABRICKS_TOKEN: cmd:op read op://ml/databricks/token
  MLFLOW_TRACKING_TOKEN: file:/run/secrets/mlflow
  GH_TOKEN: env:GITHUB_TOKEN
```

``grammar`` reads the section into ``SecretRef``s; ``resolve`` fetches the values a
command needs; each scheme is a store module named in ``STORES``. A new store is one
module (``FORM``, ``target_problem``, ``fetch``, optionally ``setup``) and one line here
(the checklist is in docs/architecture.md).
"""

from __future__ import annotations

import importlib

# scheme -> store module, in the order the forms are listed to the user. Imported on demand.
STORES: dict[str, str] = {
    "env": "runner.secrets.refs.env",
    "file": "runner.secrets.refs.file",
    "pass": "runner.secrets.refs.pass_store",
    "aws-sm": "runner.secrets.refs.aws_sm",
    "cmd": "runner.secrets.refs.cmd",
}


def store(scheme: str):
    """The store module of a registered ``scheme``."""
    return importlib.import_module(STORES[scheme])
