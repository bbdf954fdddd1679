"""Secrets: the ``Secret`` type (``value``), the one masker (``masker``) and the
one function that gathers every value in scope and builds that masker (``scope``).

Where a secret value leaves the process: ``grep -rn "\\.reveal()" runner/``.
"""

from runner.secrets.masker import MaskedStream, Masker, encodings
from runner.secrets.scope import SecretScope, secret_scope, url_passwords
from runner.secrets.value import MASK, Secret

__all__ = ["MASK", "MaskedStream", "Masker", "Secret", "SecretScope", "encodings", "secret_scope", "url_passwords"]
