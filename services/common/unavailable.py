"""The error for a missing model, package or credential. It lives below the model backends
that raise it because the jobs worker, which knows no model, fails such a job at once."""

from __future__ import annotations


class BackendUnavailable(RuntimeError):
    """A model, package or credential is missing; the message says what to install or set."""
