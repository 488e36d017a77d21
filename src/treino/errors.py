"""treino's exceptions, in one place. Each carries the HTTP status the server answers it with (`http_status`), so
no route inspects an error's message to pick one (treino.server.api.errors maps them).

    TreinoError                 anything treino refuses to do, with a message that says how to fix it     422
    ├── PlanError               an estimate cannot be made from these inputs (bad sizes, unsupported family): exit 2
    │   └── UnsupportedModelError   a config of a family the analytic planner does not model
    ├── UsageError              a bad option value or combination on the command line (CLI exit code 2)
    ├── CatalogError            an unknown GPU or model, or a malformed catalog/config file
    │   └── UnknownNameError    a name that is in no catalog (also a UsageError: `Did you mean ...?`)
    ├── MissingExtra            a command needs an extra of `pip install treino` that is not installed
    ├── JobError                a job spec or job state problem (the run server)
    │   └── SpecError           a spec this server cannot run; names the field at fault (`field`)
    ├── PolicyViolation         a governance rule refused an action; carries the rule's name                403
    ├── Unauthenticated         no token, or one that is wrong, expired or revoked                          401
    ├── Forbidden               the caller's role (or ownership) does not allow the action                  403
    ├── NotFound                no such job, dataset, user, token, grant or model                           404
    ├── Conflict                the object exists, or its state does not allow the action                   409
    ├── Gone                    the object existed and was erased (LGPD Art. 18 VI)                         410
    ├── TooLarge                a request body over the server's limit                                      413
    ├── InsufficientStorage     a write failed because the server's disk (or its database's) is full         507
    ├── DatabaseBroken          the server's database is corrupt or cannot be reached                       503
    └── TooManyRequests         too many bad tokens from one address; carries `retry_after_s`               429

The CLI maps every TreinoError to one red line and its class's `exit_code`; a traceback is shown only with
--debug. Its exit codes, the same with and without --json:

    0  EXIT_OK        done
    1  EXIT_FAILURE   a runtime failure: a TreinoError (the server, a file, a job that failed or was cancelled)
    2  EXIT_USAGE     a usage error: Click's own (unknown option, missing argument) or a UsageError
    3  EXIT_NO_FIT    the answer is no: the plan does not fit, or no offer meets the limits

Code that hits an internal invariant uses `assert`, never these.
"""

from __future__ import annotations

from typing import ClassVar

from treino.i18n import Msg

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2  # Click's own exit code for usage errors
EXIT_NO_FIT = 3


class TreinoError(Exception):
    """Base class: the message is shown to the user as is."""

    http_status: ClassVar[int] = 422
    exit_code: ClassVar[int] = EXIT_FAILURE  # the CLI's exit code for it
    field: str = "(request)"  # the input at fault, in a 422's {field, message}


class PlanError(TreinoError):
    """The planner cannot estimate this configuration: its inputs (the command's options) are wrong."""

    exit_code = EXIT_USAGE


class UnsupportedModelError(PlanError):
    """The analytic planner does not model this architecture family."""


class UsageError(TreinoError):
    """A bad option value or combination on the command line (`--epochs 0`, an unreadable deadline)."""

    exit_code = EXIT_USAGE


class CatalogError(TreinoError):
    """A catalog entry is unknown or a data file is malformed."""


class MissingExtra(TreinoError):
    """A command imports a package of one of treino's extras (treino.extras), and this Python lacks it."""

    def __init__(self, command: str, extra: str, module: str) -> None:
        super().__init__(
            f"{command} needs the {extra} extra (this Python has no module named '{module}'). "
            f"To fix: pip install 'treino[{extra}]'"
        )
        self.command = command
        self.extra = extra
        self.module = module


class UnknownNameError(CatalogError, UsageError):
    """A GPU, model, offer or site name that is in no catalog; the message suggests the closest names."""


class JobError(TreinoError):
    """A job spec is invalid or a job cannot change state as asked."""


class SpecError(JobError):
    """A job spec this server cannot run (too many GPUs, a plan that does not fit): 422 naming `field`."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class PolicyViolation(TreinoError):
    """A governance rule refused an action."""

    http_status = 403

    def __init__(self, rule: str, detail: str) -> None:
        # a Msg detail stays one (treino.i18n.Msg: the same English text), for the views to word in their language
        message = Msg("{rule}: {detail}", rule=rule, detail=detail) if isinstance(detail, Msg) else f"{rule}: {detail}"
        super().__init__(message)
        self.rule = rule
        self.detail = detail


class Unauthenticated(TreinoError):
    http_status = 401


class Forbidden(TreinoError):
    http_status = 403


class NotFound(TreinoError):
    http_status = 404


class Conflict(TreinoError):
    http_status = 409


class Gone(TreinoError):
    http_status = 410


class TooLarge(TreinoError):
    http_status = 413


class InsufficientStorage(TreinoError):
    """A write failed for want of disk space (ENOSPC, a quota, SQLite's or PostgreSQL's "disk full"); reads go on."""

    http_status = 507


class DatabaseBroken(TreinoError):
    """The database is corrupt (SQLite's quick_check, "database disk image is malformed") or unreachable."""

    http_status = 503


class TooManyRequests(TreinoError):
    """A client address spent its budget of failed authentications: answered with `Retry-After: retry_after_s`."""

    http_status = 429

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
