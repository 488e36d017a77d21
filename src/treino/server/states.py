"""A job's states: one StrEnum, in a module of its own so that the CLI can name them without the database layer
(treino.server.db holds the transitions between them)."""

from __future__ import annotations

import enum


class JobState(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    STOPPING = "stopping"  # SIGTERM sent (cancel, preemption or timeout); waiting for the processes to exit
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
