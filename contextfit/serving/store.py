"""Chats, their messages and their context audits, in SQLite or PostgreSQL.

A chat holds its settings and its messages in order (each stored whole, with
its ``meta``). A generation is recorded in ``generations`` from the moment
its audit is created until it is finalized; finalizing removes that row,
stores the reply and replaces the chat's audit in one transaction, so a chat
has at most one audit and a crash mid-generation leaves the previous one
intact. :meth:`Store.settle_generation` is that finish with retries, which
never loses a reply when the database fails (:mod:`contextfit.serving.outcomes`).
:meth:`Store.recover_interrupted` finalizes the generations of processes
that stopped before recording them as ``failed`` with ``INTERRUPTED``;
:func:`open_store` runs it.

>>> store = open_store(":memory:")
>>> chat = store.create_chat(title="Demo", messages=[{"role": "user", "content": "Hi"}])
>>> [m["content"] for m in store.get_chat(chat.id).messages]
['Hi']
>>> store.get_audit(chat.id)
Traceback (most recent call last):
...
contextfit.errors.AuditNotFound: Chat '...' has no context audit yet: generate once to create one.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from . import schema_lock
from .audit import FAILED, PromptContextAudit, utc_now
from .camel import camel_dict
from .database import create_database_engine, database_url, transaction
from ..errors import AuditNotFound, ChatNotFound, GenerationInterrupted, StoreUnavailable
from .liveness import expired_generations, expiry, owner_is_gone, process_owner
from .outcomes import FinishQueue, FinishRetry, failure_reason
from .validation import check_messages
from .validation import json_text as _dumps
from ..pipeline.settings import check_settings


def _table(name: str, *columns: str) -> sa.TableClause:
    # Lightweight clauses: the schema itself is defined once, by the migrations.
    return sa.table(name, *map(sa.column, columns))


_chats = _table("chats", "id", "title", "model", "settings", "created_at", "updated_at")
_messages = _table("messages", "id", "chat_id", "position", "role", "message", "created_at")
_generations = _table("generations", "seq", "generation_id", "chat_id", "owner", "audit", "created_at", "expires_at")
_audits = _table(
    "context_audits", "chat_id", "generation_id", "seq", "status", "error_code", "audit", "created_at", "finished_at"
)


@dataclass(frozen=True, slots=True)
class Chat:
    """A chat with its settings and messages (in order)."""

    id: str
    title: str | None
    model: str | None
    settings: dict[str, Any]
    messages: list[dict] = field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""

    def to_dict(self) -> dict[str, Any]:
        return camel_dict(self)


@dataclass(frozen=True, slots=True)
class ChatSummary:
    """A chat without its messages, with the status of its audit (``None`` when it has none)."""

    id: str
    title: str | None
    model: str | None
    message_count: int
    created_at: str
    updated_at: str
    audit_status: str | None = None
    audit_error_code: str | None = None
    audit_finished_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """camelCase keys, the audit's three fields as one ``audit`` object (``null`` without one)."""
        data = {key: value for key, value in camel_dict(self).items() if not key.startswith("audit")}
        data["audit"] = None
        if self.audit_status is not None:
            data["audit"] = {
                "status": self.audit_status,
                "errorCode": self.audit_error_code,
                "finishedAt": self.audit_finished_at,
            }
        return data


@contextmanager
def _unavailable_on_failure(message: str) -> Iterator[None]:
    """Raise a database failure as ``STORE_UNAVAILABLE``: ``message``, then the database's reason."""
    try:
        yield
    except sa.exc.SQLAlchemyError as exc:
        raise StoreUnavailable(f"{message} ({failure_reason(exc)}); try again.") from exc


class Store:
    """The chats and audits in one database (a SQLite path or a SQLAlchemy URL).

    Creating a store connects to nothing; :meth:`migrate` creates or upgrades
    the schema. Every method is one transaction and safe to call from many
    threads (``:memory:`` databases excepted: they are for one thread).
    ``lock_timeout`` is how long a write waits for another connection's lock
    (default :func:`~contextfit.serving.database.lock_timeout`); ``finish_retry`` how
    :meth:`settle_generation` retries.
    """

    def __init__(
        self,
        database: str | os.PathLike | None = None,
        *,
        lock_timeout: float | None = None,
        finish_retry: FinishRetry | None = None,
    ) -> None:
        self.url = database_url(database)
        self.engine = create_database_engine(database, timeout=lock_timeout)
        self.finishes = FinishQueue(self.finish_generation, finish_retry)

    def __repr__(self) -> str:
        return f"Store({self.engine.url.render_as_string(hide_password=True)!r})"

    def migrate(self) -> list[str]:
        """Create or upgrade the schema; returns the migrations applied now."""
        return schema_lock.migrate_once(self.engine)  # refuses a newer schema; one migrator at a time

    def close(self) -> None:
        """Record the outcomes still waiting (one last try), then close the pooled connections."""
        self.finishes.close()
        self.engine.dispose()

    # chats

    def create_chat(
        self,
        *,
        title: str | None = None,
        model: str | None = None,
        settings: Mapping[str, Any] | None = None,
        messages: Sequence[dict] = (),
    ) -> Chat:
        """Store a new chat and its messages; returns it with its new id."""
        checked, settings = check_messages(list(messages)), check_settings(settings)
        now, chat_id = utc_now(), "chat_" + uuid.uuid4().hex
        with transaction(self.engine, write=True) as connection:
            connection.execute(
                _chats.insert().values(
                    id=chat_id, title=title, model=model, settings=_dumps(settings), created_at=now, updated_at=now
                )
            )
            self._insert_messages(connection, chat_id, 0, checked, now)
        return Chat(chat_id, title, model, settings, checked, now, now)

    def get_chat(self, chat_id: str) -> Chat:
        """The chat with its messages; raises ``CHAT_NOT_FOUND``."""
        with transaction(self.engine) as connection:
            row = connection.execute(sa.select(_chats).where(_chats.c.id == chat_id)).one_or_none()
            if row is None:
                raise ChatNotFound(chat_id)
            messages = connection.execute(
                sa.select(_messages.c.message).where(_messages.c.chat_id == chat_id).order_by(_messages.c.position)
            )
            return Chat(
                row.id,
                row.title,
                row.model,
                json.loads(row.settings),
                [json.loads(message) for (message,) in messages],
                row.created_at,
                row.updated_at,
            )

    def update_chat(self, chat_id: str, **changes: Any) -> Chat:
        """Change a chat's ``title``, ``model`` or ``settings`` (the settings are replaced whole)."""
        unknown = set(changes) - {"title", "model", "settings"}
        if unknown:
            raise TypeError(f"update_chat() got unexpected fields {sorted(unknown)}")
        if "settings" in changes:
            changes["settings"] = _dumps(check_settings(changes["settings"]))
        with transaction(self.engine, write=True) as connection:
            done = connection.execute(
                _chats.update().where(_chats.c.id == chat_id).values(**changes, updated_at=utc_now())
            )
            if done.rowcount == 0:
                raise ChatNotFound(chat_id)
        return self.get_chat(chat_id)

    def append_messages(self, chat_id: str, messages: Sequence[dict]) -> Chat:
        """Add messages at the end of a chat; returns the chat."""
        checked = check_messages(list(messages))
        with transaction(self.engine, write=True) as connection:
            self._append(connection, chat_id, checked)
        return self.get_chat(chat_id)

    def delete_chat(self, chat_id: str) -> None:
        """Delete a chat with its messages, its generations in progress and its audit."""
        with transaction(self.engine, write=True) as connection:
            if connection.execute(_chats.delete().where(_chats.c.id == chat_id)).rowcount == 0:
                raise ChatNotFound(chat_id)

    def list_chats(self) -> list[ChatSummary]:
        """Every chat, most recently updated first, with its message count and audit status."""
        counts = sa.select(_messages.c.chat_id, sa.func.count().label("n")).group_by(_messages.c.chat_id).subquery()
        query = (
            sa.select(
                _chats.c.id,
                _chats.c.title,
                _chats.c.model,
                sa.func.coalesce(counts.c.n, 0).label("n"),
                _chats.c.created_at,
                _chats.c.updated_at,
                _audits.c.status,
                _audits.c.error_code,
                _audits.c.finished_at,
            )  # fmt: skip
            .select_from(_chats)
            .outerjoin(counts, counts.c.chat_id == _chats.c.id)
            .outerjoin(_audits, _audits.c.chat_id == _chats.c.id)
            .order_by(_chats.c.updated_at.desc(), _chats.c.id)
        )
        with transaction(self.engine) as connection:
            return [ChatSummary(*row) for row in connection.execute(query)]

    def _lock_chat(self, connection: Connection, chat_id: str) -> bool:
        """Lock the chat's row until the transaction ends (SQLite's write lock already covers it)."""
        query = sa.select(_chats.c.id).where(_chats.c.id == chat_id).with_for_update()
        return connection.execute(query).one_or_none() is not None

    def _append(self, connection: Connection, chat_id: str, messages: list[dict]) -> None:
        if not self._lock_chat(connection, chat_id):
            raise ChatNotFound(chat_id)
        last = connection.execute(
            sa.select(sa.func.max(_messages.c.position)).where(_messages.c.chat_id == chat_id)
        ).scalar()
        now = utc_now()
        self._insert_messages(connection, chat_id, 0 if last is None else last + 1, messages, now)
        connection.execute(_chats.update().where(_chats.c.id == chat_id).values(updated_at=now))

    @staticmethod
    def _insert_messages(connection: Connection, chat_id: str, first: int, messages: list[dict], now: str) -> None:
        if messages:
            connection.execute(
                _messages.insert(),
                [
                    {
                        "chat_id": chat_id,
                        "position": first + number,
                        "role": message["role"],
                        "message": _dumps(message),
                        "created_at": now,
                    }  # fmt: skip
                    for number, message in enumerate(messages)
                ],
            )

    # generations and audits

    def begin_generation(self, audit: PromptContextAudit) -> int:
        """Record a generation in progress with its pending audit; returns its sequence number.

        Raises ``CHAT_NOT_FOUND`` when the chat is gone, ``STORE_UNAVAILABLE``
        when the database cannot be written (then nothing was begun).
        """
        not_started = "The generation was not started, and nothing was sent to the provider: the database failed"
        with _unavailable_on_failure(not_started), transaction(self.engine, write=True) as connection:
            if not self._lock_chat(connection, audit.chat_id):
                raise ChatNotFound(audit.chat_id)
            connection.execute(
                _generations.insert().values(
                    generation_id=audit.generation_id,
                    chat_id=audit.chat_id,
                    owner=process_owner(),
                    audit=_dumps(audit.to_dict()),
                    created_at=audit.created_at,
                    expires_at=expiry(connection),  # renewed while it runs (contextfit.serving.liveness)
                )
            )
            return connection.execute(
                sa.select(_generations.c.seq).where(_generations.c.generation_id == audit.generation_id)
            ).scalar_one()

    def finish_generation(self, audit: PromptContextAudit, seq: int, reply: dict | None = None) -> dict | None:
        """Finalize a generation in one transaction: forget it as in progress,
        append ``reply`` to the chat, and make ``audit`` the chat's audit unless
        a later generation's audit is already there. Returns the stored reply,
        or ``None`` when the chat was deleted meanwhile or another process already
        finalized it ``INTERRUPTED`` (its lease ran out); then nothing is stored.
        """
        with transaction(self.engine, write=True) as connection:
            if not self._lock_chat(connection, audit.chat_id):
                return None
            gone = connection.execute(_generations.delete().where(_generations.c.generation_id == audit.generation_id))
            if gone.rowcount == 0:  # already finalized by another process: its lease ran out (INTERRUPTED)
                return None
            if reply is not None:
                reply = check_messages([reply])[0]
                self._append(connection, audit.chat_id, [reply])
            current = connection.execute(
                sa.select(_audits.c.seq).where(_audits.c.chat_id == audit.chat_id)
            ).scalar_one_or_none()
            values = {
                "generation_id": audit.generation_id,
                "seq": seq,
                "status": audit.status,
                "error_code": audit.error_code,
                "audit": _dumps(audit.to_dict()),
                "created_at": audit.created_at,
                "finished_at": audit.finished_at,
            }
            if current is None:
                connection.execute(_audits.insert().values(chat_id=audit.chat_id, **values))
            elif current < seq:
                connection.execute(_audits.update().where(_audits.c.chat_id == audit.chat_id).values(**values))
        return reply

    def settle_generation(self, audit: PromptContextAudit, seq: int, reply: dict | None = None) -> dict | None:
        """:meth:`finish_generation`, retried; when the database keeps failing, the
        outcome is kept and written later, and a reply that could not be stored
        is raised back in ``STORE_UNAVAILABLE`` (see :mod:`contextfit.serving.outcomes`).
        """
        return self.finishes.settle(audit, seq, reply)

    def record_audit(self, audit: PromptContextAudit) -> None:
        """Store an audit that was finalized before any provider call (e.g. ``TOKEN_BUDGET_EXCEEDED``)."""
        self.settle_generation(audit, self.begin_generation(audit))

    def get_audit(self, chat_id: str) -> PromptContextAudit:
        """The chat's latest finalized audit; raises ``CHAT_NOT_FOUND`` or ``AUDIT_NOT_FOUND``."""
        with transaction(self.engine) as connection:
            text = connection.execute(sa.select(_audits.c.audit).where(_audits.c.chat_id == chat_id)).scalar()
            if text is None:
                exists = connection.execute(sa.select(_chats.c.id).where(_chats.c.id == chat_id)).first()
                raise AuditNotFound(chat_id) if exists else ChatNotFound(chat_id)
        return PromptContextAudit.from_dict(json.loads(text))

    def pending_generations(self, chat_id: str | None = None) -> list[tuple[int, str, PromptContextAudit]]:
        """Generations in progress as ``(seq, owner, pending audit)``, oldest first."""
        query = sa.select(_generations.c.seq, _generations.c.owner, _generations.c.audit).order_by(_generations.c.seq)
        if chat_id is not None:
            query = query.where(_generations.c.chat_id == chat_id)
        with transaction(self.engine) as connection:
            rows = connection.execute(query).all()
        return [(seq, owner, PromptContextAudit.from_dict(json.loads(audit))) for seq, owner, audit in rows]

    def recover_interrupted(self) -> list[str]:
        """Finalize as ``failed``/``INTERRUPTED`` the generations whose process has
        stopped without recording them (it died, or its database failed until it exited):
        a process on this host that is gone, or a lease that ran out (:mod:`contextfit.serving.liveness`).

        Returns their generation ids. Each replaces its chat's audit unless a
        later generation already finished.
        """
        recovered, expired = [], expired_generations(self.engine)  # expired: any host's, by the database's clock
        for seq, owner, audit in self.pending_generations():
            if owner_is_gone(owner) or audit.generation_id in expired:
                self.finish_generation(audit.finish(FAILED, GenerationInterrupted()), seq)
                recovered.append(audit.generation_id)
        return recovered


def open_store(database: str | os.PathLike | None = None, **options: Any) -> Store:
    """A ready store: schema migrated and dead processes' generations finalized.

    ``database`` is a SQLite path (created if missing), ``:memory:``, or a
    SQLAlchemy URL such as ``postgresql://user:pass@127.0.0.1/contextfit``;
    by default ``$CONTEXTFIT_DB`` or ``contextfit.db``. ``options`` go to
    :class:`Store` (``lock_timeout``, ``finish_retry``).
    """
    store = Store(database, **options)
    store.migrate()
    store.recover_interrupted()
    return store
