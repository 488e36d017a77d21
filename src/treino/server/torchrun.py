"""`python -m treino.server.torchrun ARGS`: torchrun (`python -m torch.distributed.run ARGS`) as the server launches
it, minus the traceback it prints when it is stopped.

A stop (cancel, preemption, timeout) sends SIGTERM to every process of the attempt (treino.server.supervisor).
torchrun's agent then raises SignalException, stops its workers (SIGTERM, SIGKILL after --shutdown-timeout) and
lets the exception escape: a 30-line traceback of torchrun's own code ending the job's log, which reads like the
job crashed. Here that exception ends the agent quietly, after what the agent and the workers said (its one-line
"Received 15 death signal, shutting down workers" included), by the same signal: the exit status still says it was
stopped. The server classifies the attempt from what it asked for, not from this output. Everything else is
torchrun's own: a worker that fails still gets torchrun's error report (ChildFailedError), the user's to read.

Imported in the job's processes: torch and the standard library only.
"""

from __future__ import annotations

import os
import signal


def main() -> None:
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.run import main as torchrun

    try:
        torchrun()
    except SignalException as exc:  # its workers are stopped already (the agent's shutdown ran before the raise)
        signal.signal(exc.sigval, signal.SIG_DFL)
        os.kill(os.getpid(), exc.sigval)
        raise SystemExit(128 + exc.sigval) from None  # only if the signal is blocked


if __name__ == "__main__":
    main()
