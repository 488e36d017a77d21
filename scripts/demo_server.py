"""`make demo`'s server part: a real `treino server` on 2 CPU slots, the example DDP job submitted, followed and shown.

Everything runs through the `treino` CLI, as a user would type it; the server's data lives in a temp dir and the
server is stopped at the end.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from demo_common import ROOT, DemoServer, run


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="treino-demo-") as tmp:
        server = DemoServer(Path(tmp) / "server")
        try:
            env = server.env()
            out = run("submit", str(ROOT / "examples" / "job.yaml"), env=env)
            job_id = out.split("job ")[1].split()[0]
            run("logs", job_id, "--follow", env=env)
            run("show", job_id, env=env)
            run("jobs", env=env)
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
