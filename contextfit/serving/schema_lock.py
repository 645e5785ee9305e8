"""Migrating once, however many processes start together, and never a newer schema.

:func:`migrate_once` is what :meth:`~contextfit.serving.store.Store.migrate` runs: in
one write transaction, on PostgreSQL under a transaction-level advisory lock
(so N processes starting at once take turns: the first applies the missing
migrations, the others find nothing left to do; SQLite's write lock already
serializes them), it

1. refuses with ``SCHEMA_TOO_NEW`` when the database records a migration
   this version of contextfit does not know — a newer contextfit migrated
   it, and this one could corrupt what it does not understand;
2. applies the missing migrations (:func:`contextfit.serving.migrations.migrate`).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from . import migrations
from .database import transaction
from ..errors import SchemaTooNew

#: The advisory lock key the migrating process holds on PostgreSQL.
MIGRATION_LOCK_KEY = 7415392


def check_known(connection: Connection) -> None:
    """Raise ``SCHEMA_TOO_NEW`` when the database holds migrations this code does not know."""
    known = {fn.__name__ for fn in migrations.MIGRATIONS}
    unknown = [name for name in migrations.applied_migrations(connection) if name not in known]
    if unknown:
        url = connection.engine.url.render_as_string(hide_password=True)
        raise SchemaTooNew(url, unknown)


def migrate_once(engine: Engine) -> list[str]:
    """Check the schema is not newer, then apply the missing migrations; returns their names."""
    with transaction(engine, write=True) as connection:
        if connection.dialect.name == "postgresql":  # one migrator at a time, released at commit
            connection.execute(sa.text(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})"))
        check_known(connection)
        return migrations.migrate(connection)
