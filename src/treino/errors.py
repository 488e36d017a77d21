"""treino's exceptions, in one place.

    TreinoError                 anything treino refuses to do, with a message that says how to fix it
    ├── PlanError               an estimate cannot be made from these inputs (bad sizes, unsupported family)
    │   └── UnsupportedModelError   a config of a family the analytic planner does not model
    ├── CatalogError            an unknown GPU or model, or a malformed catalog/config file
    ├── JobError                a job spec or job state problem (the run server)
    └── PolicyViolation         a governance rule refused an action; carries the rule's name

The CLI maps every TreinoError to one red line and exit code 2 (bad input); a traceback is shown only
with --debug. Code that hits an internal invariant uses `assert`, never these.
"""

from __future__ import annotations


class TreinoError(Exception):
    """Base class: the message is shown to the user as is."""


class PlanError(TreinoError):
    """The planner cannot estimate this configuration."""


class UnsupportedModelError(PlanError):
    """The analytic planner does not model this architecture family."""


class CatalogError(TreinoError):
    """A catalog entry is unknown or a data file is malformed."""


class JobError(TreinoError):
    """A job spec is invalid or a job cannot change state as asked."""


class PolicyViolation(TreinoError):
    """A governance rule refused an action."""

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(f"{rule}: {detail}")
        self.rule = rule
        self.detail = detail
