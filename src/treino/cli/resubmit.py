"""`treino resubmit ID [--from-scratch]`: a finished job again, as a new job that continues from its last
checkpoint (treino.server.resubmission), or from step 0."""

from __future__ import annotations

from typing import Annotated

import typer

from treino.cli.client import JsonOpt, TokenOpt, UrlOpt, _client, _print_json
from treino.i18n import tr


def resubmit(
    job_id: Annotated[int, typer.Argument(help="Job id, from 'treino jobs'.")],
    from_scratch: Annotated[
        bool, typer.Option("--from-scratch", help="Start again from step 0 instead of the last checkpoint.")
    ] = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Resubmit a finished job as a new job that continues from its last checkpoint (--from-scratch: from step 0)."""
    with _client(url, token) as client:
        job = client.request(
            "POST",
            f"/api/v1/jobs/{job_id}/resubmit",
            f"the resubmit of job {job_id}",
            json={"from_scratch": from_scratch},
        )
    if as_json:
        _print_json(job)
        return
    if job.get("continues_from") is not None:
        typer.echo(
            tr(
                "Submitted job {id} ({name}): it continues job {job} from its checkpoint of step {step}. "
                "Watch it with 'treino show {id}'.",
                id=job["id"],
                name=job["name"],
                job=job["continues_from"],
                step=job["continues_from_step"],
            )
        )
    else:
        typer.echo(
            tr(
                "Submitted job {id} ({name}): it runs job {job}'s spec again from step 0. "
                "Watch it with 'treino show {id}'.",
                id=job["id"],
                name=job["name"],
                job=job_id,
            )
        )
