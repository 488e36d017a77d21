"""Alembic environment: treino runs migrations in-process (treino.server.db.migrate) on the connection it passes."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from treino.orm import Base
from treino.server.db import all_models

all_models()

target_metadata = Base.metadata
connection = context.config.attributes.get("connection")
if connection is None:  # `alembic` on the command line (developers): the URL from -x url=... or alembic.ini
    url = context.get_x_argument(as_dictionary=True).get("url") or context.config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("No database URL. To fix: alembic -x url=sqlite:///DATA_DIR/treino.db upgrade head")
    with create_engine(url).begin() as connection:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
else:
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
