"""The dashboard: server-rendered pages on the API's own server, tokens and permissions (see pages.py)."""
