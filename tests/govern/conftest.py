"""The job server fixtures of tests/server, for the governance tests that need a real server."""

from tests.server.conftest import server, start_server  # noqa: F401 (pytest fixtures)
