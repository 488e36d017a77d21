"""The dashboard: server-rendered pages on the API's own server, tokens and permissions (see routes.py)."""

from treino.server.web.routes import add_web_routes

__all__ = ["add_web_routes"]
