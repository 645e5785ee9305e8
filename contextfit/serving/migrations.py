"""The database schema, as a list of small numbered migrations.

Each migration is a function of an open connection, applied once in order
and recorded by name in ``_contextfit_migrations`` (the model is
``llm/migrations.py``). A migration, once released, is never edited: a
change to the schema is a new function at the end of the list. Types stay
portable (text, integers): JSON is stored as text and timestamps as ISO 8601
UTC text, so the same migrations run on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .audit import utc_now

MIGRATIONS_TABLE = "_contextfit_migrations"
MIGRATIONS: list[Callable[[Connection], None]] = []

_ID = sa.String(64)


def migration(fn: Callable[[Connection], None]) -> Callable[[Connection], None]:
    """Add ``fn`` to the end of :data:`MIGRATIONS`."""
    MIGRATIONS.append(fn)
    return fn


def _chat_fk() -> sa.ForeignKey:
    """A reference to ``chats.id`` whose rows go when their chat is deleted."""
    chats = sa.Table("chats", sa.MetaData(), sa.Column("id", _ID, primary_key=True))
    return sa.ForeignKey(chats.c.id, ondelete="CASCADE")


def _create(connection: Connection, name: str, *columns: sa.SchemaItem, **options) -> None:
    sa.Table(name, sa.MetaData(), *columns, **options).create(connection)


@migration
def m001_chats(connection: Connection) -> None:
    _create(
        connection,
        "chats",
        sa.Column("id", _ID, primary_key=True),
        sa.Column("title", sa.Text),
        sa.Column("model", sa.Text),
        sa.Column("settings", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Text, nullable=False),
    )


@migration
def m002_messages(connection: Connection) -> None:
    _create(
        connection,
        "messages",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("chat_id", _ID, _chat_fk(), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("role", sa.Text, nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.UniqueConstraint("chat_id", "position", name="messages_chat_position"),
    )


@migration
def m003_generations(connection: Connection) -> None:
    """Generations in progress: one row from the audit's creation to its finalization."""
    _create(
        connection,
        "generations",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("generation_id", _ID, nullable=False, unique=True),
        sa.Column("chat_id", _ID, _chat_fk(), nullable=False, index=True),
        sa.Column("owner", sa.Text, nullable=False),
        sa.Column("audit", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sqlite_autoincrement=True,  # never reuse a seq: it orders audits
    )


@migration
def m004_context_audits(connection: Connection) -> None:
    """The latest finalized audit of each chat (the primary key allows one)."""
    _create(
        connection,
        "context_audits",
        sa.Column("chat_id", _ID, _chat_fk(), primary_key=True),
        sa.Column("generation_id", _ID, nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("error_code", sa.Text),
        sa.Column("audit", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("finished_at", sa.Text, nullable=False),
    )


@migration
def m005_generation_leases(connection: Connection) -> None:
    """A lease on each generation in progress and a cancel flag any process can set
    (:mod:`contextfit.serving.liveness`, :mod:`contextfit.serving.cancellation`)."""
    seconds = sa.Float().compile(dialect=connection.dialect)
    connection.execute(sa.text(f"ALTER TABLE generations ADD COLUMN expires_at {seconds}"))
    connection.execute(sa.text("ALTER TABLE generations ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0"))
    connection.execute(sa.text("CREATE INDEX generations_expires_at ON generations (expires_at)"))


@migration
def m006_chat_sizes(connection: Connection) -> None:
    """Each chat's message count and the bytes its stored messages take, kept with every write,
    so a chat is bounded (``Store``'s limits) and listed without counting its rows."""
    for column in ("message_count", "message_bytes"):
        connection.execute(sa.text(f"ALTER TABLE chats ADD COLUMN {column} INTEGER NOT NULL DEFAULT 0"))
    size = "octet_length(message)" if connection.dialect.name == "postgresql" else "length(CAST(message AS BLOB))"
    connection.execute(sa.text(
        "UPDATE chats SET"
        " message_count = (SELECT count(*) FROM messages WHERE messages.chat_id = chats.id),"
        f" message_bytes = (SELECT coalesce(sum({size}), 0) FROM messages WHERE messages.chat_id = chats.id)"
    ))


def applied_migrations(connection: Connection) -> list[str]:
    """Names of the migrations already applied, in order."""
    if not sa.inspect(connection).has_table(MIGRATIONS_TABLE):
        return []
    rows = connection.execute(sa.text(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY applied_at, name"))
    return [row[0] for row in rows]


def migrate(connection: Connection) -> list[str]:
    """Apply the missing migrations inside the caller's transaction; returns their names."""
    log = sa.Table(
        MIGRATIONS_TABLE,
        sa.MetaData(),
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("applied_at", sa.Text, nullable=False),
    )
    log.create(connection, checkfirst=True)
    done = {row[0] for row in connection.execute(sa.select(log.c.name))}
    applied = []
    for fn in MIGRATIONS:
        if fn.__name__ not in done:
            fn(connection)
            connection.execute(log.insert().values(name=fn.__name__, applied_at=utc_now()))
            applied.append(fn.__name__)
    return applied
