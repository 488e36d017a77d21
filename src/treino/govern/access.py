"""Who may do what: four roles, one permission table, per-dataset grants, and residency of data by site.

The table is the whole policy: an endpoint names one permission, and tests/govern/test_authorization.py walks every
endpoint x every role against it (lgpd-requirements.md §8 C: access control, least privilege).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from treino.errors import Forbidden, PolicyViolation, TreinoError
from treino.govern.models import Dataset, Grant, Role, Transfer, User
from treino.i18n import Joined, Msg

ALL = frozenset(Role)
PERMISSIONS: dict[str, frozenset[Role]] = {
    "inventory.read": ALL,
    "jobs.read": ALL,
    "metrics.read": ALL,
    "jobs.submit": frozenset({Role.ADMIN, Role.ENGINEER}),
    "jobs.cancel": frozenset({Role.ADMIN, Role.ENGINEER}),  # engineers: their own jobs only
    "users.manage": frozenset({Role.ADMIN}),
    "tokens.manage": frozenset({Role.ADMIN}),
    "grants.manage": frozenset({Role.ADMIN, Role.DPO}),
    "transfers.manage": frozenset({Role.ADMIN, Role.DPO}),
    "datasets.register": frozenset({Role.ADMIN, Role.ENGINEER}),
    "datasets.read": frozenset({Role.ADMIN, Role.ENGINEER, Role.DPO}),  # metadata, not the bytes
    "lineage.read": frozenset({Role.ADMIN, Role.ENGINEER, Role.DPO}),
    "audit.read": frozenset({Role.ADMIN, Role.DPO}),
    "erasure.run": frozenset({Role.ADMIN, Role.DPO}),
    "subject.report": frozenset({Role.ADMIN, Role.DPO}),
}
# Reads of these are recorded in the audit as token.use (lgpd-requirements.md §5.3: who accessed what).
SENSITIVE_PERMISSIONS = frozenset({"audit.read", "erasure.run", "subject.report", "lineage.read", "datasets.read"})


@dataclass(frozen=True)
class Principal:
    name: str
    role: Role
    token_id: int
    user_id: int | None


def allowed(role: Role, permission: str) -> bool:
    return role in PERMISSIONS[permission]


# Who reads a job's output (its logs): besides jobs.read, the job's owner and these roles (settings.LOGS_VISIBLE_TO).
OWNER = "owner"


def log_readers(spec: str) -> frozenset[str]:
    """'owner,admin,dpo' -> {"owner", "admin", "dpo"}; 'all' -> the owner and every role."""
    names = {n.strip() for n in spec.split(",") if n.strip()}
    if "all" in names:
        return frozenset({OWNER, *(r.value for r in Role)})
    known = [OWNER, "all", *(r.value for r in Role)]
    unknown = sorted(names - set(known))
    if unknown or not names:
        raise TreinoError(
            Msg(
                "--logs-visible-to {spec!r}: {unknown} is not 'owner', 'all' or a role. To fix: give a "
                "comma-separated list of {known} (e.g. owner,admin,dpo).",
                spec=spec,
                unknown=", ".join(unknown) or "empty",
                known=", ".join(known),
            )
        )
    return frozenset(names)


def may_read_logs(who: Principal, owner: str, readers: frozenset[str]) -> bool:
    return who.role.value in readers or (OWNER in readers and who.name == owner)


def require_log_reader(who: Principal, job_id: int, owner: str, readers: frozenset[str]) -> None:
    """Forbidden unless `who` may read job `job_id`'s output (its owner `owner`; `readers`: log_readers)."""
    if may_read_logs(who, owner, readers):
        return
    roles = sorted(readers - {OWNER})
    parts = [Msg("its owner ({owner})", owner=owner)] if OWNER in readers else []
    parts += [Msg("roles {roles}", roles=", ".join(roles))] if roles else []
    whom = Joined(" and ", parts) if len(parts) < 2 else Msg("{a} and {b}", a=parts[0], b=parts[1])
    raise Forbidden(
        Msg(
            "The logs of job {job_id} are visible to {whom}, not to {name} ({role}). To fix: ask {owner} or an admin "
            "for them, or have the server started with --logs-visible-to all.",
            job_id=job_id,
            whom=whom or Msg("nobody"),
            name=who.name,
            role=who.role,
            owner=owner,
        )
    )


@dataclass(frozen=True)
class Site:
    name: str
    country: str
    city: str
    provider: str


def site(name: str) -> Site:
    """A site of the sites catalog (catalog/data/v1/sites.csv)."""
    from treino.catalog.offers import sites

    known = sites()
    if name not in known:
        from treino.catalog.loader import _did_you_mean

        raise _did_you_mean("site", name, sorted(known), "treino sites")
    row = known[name]
    return Site(name, row.country, row.city, row.provider)


def check_residency(s: Session, dataset: Dataset, server_site: Site | None) -> str:
    """'' when `dataset` may be processed at `server_site`, else PolicyViolation naming the rule.
    Brazilian data abroad needs a recorded transfer mechanism for that site (LGPD Art. 33; Res. CD/ANPD 19/2024)."""
    if dataset.residency in ("any", ""):
        return "no residency restriction"
    if server_site is None:
        raise PolicyViolation(
            "residency",
            Msg(
                "dataset {dataset} must stay in {residency}, and this server has no site configured. To fix: start "
                "the server with --site (e.g. --site eveo-sp1).",
                dataset=dataset.name,
                residency=dataset.residency,
            ),
        )
    if server_site.country == dataset.residency:
        return f"{server_site.name} is in {server_site.country}"
    transfer = s.scalar(
        select(Transfer).where(Transfer.site == server_site.name, Transfer.revoked_at.is_(None)).limit(1)
    )
    if transfer is not None:
        return f"transfer to {server_site.name} under {transfer.mechanism} {transfer.reference} ({transfer.signed_on})"
    raise PolicyViolation(
        "residency",
        Msg(
            "dataset {dataset} must stay in {residency} (LGPD Art. 33), but this server's site {site} ({city}) is in "
            "{country}, and no transfer mechanism is recorded for it. To fix: run the job on a site in {residency}, "
            "or record ANPD standard contractual clauses with 'treino transfer add --site {site} ...'.",
            dataset=dataset.name,
            residency=dataset.residency,
            site=server_site.name,
            city=server_site.city,
            country=server_site.country,
        ),
    )


def check_grant(s: Session, user: User, dataset: Dataset, purpose: str | None) -> Grant:
    """The submitter's active grant on `dataset` covering `purpose`, which the dataset itself must allow
    (purpose limitation, LGPD Art. 6 I)."""
    if not purpose:
        raise PolicyViolation(
            "purpose",
            Msg(
                "a job that reads dataset {dataset} must state its purpose (LGPD Art. 6 I). To fix: add 'purpose:' to "
                "the spec, one of {allowed}.",
                dataset=dataset.name,
                allowed=", ".join(dataset.purposes),
            ),
        )
    if purpose not in dataset.purposes:
        raise PolicyViolation(
            "purpose",
            Msg(
                "dataset {dataset} was collected for {allowed}, not {purpose!r} (LGPD Art. 6 I, purpose limitation). "
                "To fix: use an allowed purpose, or register a new legal basis.",
                dataset=dataset.name,
                allowed=", ".join(dataset.purposes),
                purpose=purpose,
            ),
        )
    for grant in s.scalars(
        select(Grant).where(Grant.user_id == user.id, Grant.dataset == dataset.name, Grant.revoked_at.is_(None))
    ):
        if purpose in grant.purposes:
            return grant
    raise PolicyViolation(
        "grant",
        Msg(
            "{user} has no grant on dataset {dataset} for {purpose!r}. To fix: a DPO or admin runs 'treino grant "
            "{user} {dataset} --purpose {purpose}'.",
            user=user.name,
            dataset=dataset.name,
            purpose=purpose,
        ),
    )
