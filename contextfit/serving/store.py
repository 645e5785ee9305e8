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
:func:`open_store` runs it. A chat is bounded like an imported file
(:class:`ChatLimits`), and keeps its message count and size in its row.

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
from pathlib import Path
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from . import schema_lock
from .audit import COMPLETED, FAILED, PromptContextAudit, utc_now
from .json_names import camel_dict
from .database import check_files, create_database_engine, database_url, is_outage, transaction
from .. import limits
from ..errors import AuditNotFound, ChatNotFound, ChatTooLarge, GenerationInterrupted, StoreUnavailable
from .liveness import database_clock, expired_generations, expiry, owner_is_gone, process_owner
from .outcomes import FinishQueue, FinishRetry, failure_reason
from .spool import Spool, spool_folder
from .validation import storable_messages
from .validation import json_text as _dumps
from ..pipeline.settings import check_settings


def _table(name: str, *columns: str) -> sa.TableClause:
    # Lightweight clauses: the schema itself is defined once, by the migrations.
    return sa.table(name, *map(sa.column, columns))


_chats = _table("chats", "id", "title", "model", "settings", "created_at", "updated_at", "message_count",
                "message_bytes")
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


@dataclass(frozen=True, slots=True)
class Appended:
    """What an append stored: the chat's fields, the new ``messages`` as stored, the position of
    the first (``appended_from``) and the chat's ``message_count`` now — never the whole chat."""

    id: str
    title: str | None
    model: str | None
    settings: dict[str, Any]
    messages: list[dict]
    created_at: str
    updated_at: str
    appended_from: int
    message_count: int

    def to_dict(self) -> dict[str, Any]:
        return camel_dict(self)


@dataclass(frozen=True, slots=True)
class ChatLimits:
    """How much one stored chat may hold: as much as one imported file
    (:data:`contextfit.limits.MAX_MESSAGES` messages, :data:`~contextfit.limits.MAX_FILE_BYTES`
    bytes of stored message JSON). Appends and new chats past either are refused
    ``CHAT_TOO_LARGE``, a generation on a full chat too (before any provider call);
    a reply is always stored, even when it takes the chat past the limits.

    >>> ChatLimits().messages, ChatLimits().bytes // 2**20
    (100000, 16)
    """

    messages: int = limits.MAX_MESSAGES
    bytes: int = limits.MAX_FILE_BYTES

    def check(self, count: int, size: int, adding: Sequence[str]) -> None:
        """Raise ``CHAT_TOO_LARGE`` naming the first of ``adding`` (stored JSON texts) that a chat
        of ``count`` messages and ``size`` bytes has no room for.

        >>> ChatLimits(messages=3).check(2, 10, ['{"role":"user"}', '{"role":"user"}'])
        Traceback (most recent call last):
        ...
        contextfit.errors.ChatTooLarge: A stored chat holds at most 3 messages and 16 MiB, like an imported file; this one holds 2 messages (0.0 MiB), and messages[1] would pass that. Start a new chat (a summary of this one can open it).
        """
        total_count, total_size = count, size
        for index, text in enumerate(adding):
            total_count, total_size = total_count + 1, total_size + len(text.encode("utf-8"))
            if total_count > self.messages or total_size > self.bytes:
                raise ChatTooLarge(
                    f"A stored chat holds at most {self.messages:,} messages and {self.bytes / 2**20:g} MiB, like an "
                    f"imported file; this one holds {count:,} messages ({size / 2**20:.1f} MiB), and messages[{index}] "
                    "would pass that. Start a new chat (a summary of this one can open it).",
                    location=f"messages[{index}]",
                )

    def full(self, count: int, size: int) -> bool:
        """Whether a chat of ``count`` messages and ``size`` bytes has no room for one more message."""
        return count >= self.messages or size >= self.bytes


def _size(texts: Sequence[str]) -> int:
    return sum(len(text.encode("utf-8")) for text in texts)


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
    :meth:`settle_generation` retries; ``spool`` the folder where outcomes the
    database refused wait (default :func:`~contextfit.serving.spool.spool_folder`);
    ``chat_limits`` how much one chat may hold (:class:`ChatLimits`).
    """

    def __init__(
        self,
        database: str | os.PathLike | None = None,
        *,
        lock_timeout: float | None = None,
        finish_retry: FinishRetry | None = None,
        spool: str | os.PathLike | None = None,
        chat_limits: ChatLimits | None = None,
    ) -> None:
        self.url = database_url(database)
        self.chat_limits = chat_limits or ChatLimits()
        self.engine = create_database_engine(database, timeout=lock_timeout)
        url = self.engine.url
        sqlite_path = (url.database or "") if url.get_backend_name() == "sqlite" else None
        folder = Path(spool) if spool is not None else spool_folder(url.render_as_string(hide_password=True), sqlite_path)
        folder = folder.absolute() if folder is not None else None  # the same folder whatever the process's cwd later
        self.finishes = FinishQueue(self.finish_generation, finish_retry, Spool(folder), is_outage)

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
        checked, settings = storable_messages(list(messages)), check_settings(settings)
        texts = [_dumps(message) for message in checked]
        self.chat_limits.check(0, 0, texts)
        now, chat_id = utc_now(), "chat_" + uuid.uuid4().hex
        with transaction(self.engine, write=True) as connection:
            connection.execute(
                _chats.insert().values(
                    id=chat_id, title=title, model=model, settings=_dumps(settings), created_at=now, updated_at=now,
                    message_count=0, message_bytes=0,
                )
            )
            self._insert_messages(connection, chat_id, 0, checked, texts, now)
        return Chat(chat_id, title, model, settings, checked, now, now)

    def get_chat(self, chat_id: str, *, with_messages: bool = True) -> Chat:
        """The chat with its messages (none read with ``with_messages=False``); raises ``CHAT_NOT_FOUND``."""
        with transaction(self.engine) as connection:
            row = connection.execute(sa.select(_chats).where(_chats.c.id == chat_id)).one_or_none()
            if row is None:
                raise ChatNotFound(chat_id)
            messages = connection.execute(
                sa.select(_messages.c.message).where(_messages.c.chat_id == chat_id).order_by(_messages.c.position)
            ) if with_messages else ()  # fmt: skip
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

    def append_messages(self, chat_id: str, messages: Sequence[dict]) -> Appended:
        """Add messages at the end of a chat; returns what was appended (never the whole chat).

        Raises ``CHAT_TOO_LARGE`` (nothing appended) when the chat would pass its :class:`ChatLimits`.
        """
        checked = storable_messages(list(messages))
        with transaction(self.engine, write=True) as connection:
            first = self._append(connection, chat_id, checked, bounded=True)
            row = connection.execute(sa.select(_chats).where(_chats.c.id == chat_id)).one()
        return Appended(row.id, row.title, row.model, json.loads(row.settings), checked, row.created_at,
                        row.updated_at, first, row.message_count)  # fmt: skip

    def delete_chat(self, chat_id: str) -> None:
        """Delete a chat with its messages, its generations in progress and its audit."""
        with transaction(self.engine, write=True) as connection:
            if connection.execute(_chats.delete().where(_chats.c.id == chat_id)).rowcount == 0:
                raise ChatNotFound(chat_id)

    def list_chats(self) -> list[ChatSummary]:
        """Every chat, most recently updated first, with its message count and audit status."""
        query = (
            sa.select(
                _chats.c.id,
                _chats.c.title,
                _chats.c.model,
                _chats.c.message_count,
                _chats.c.created_at,
                _chats.c.updated_at,
                _audits.c.status,
                _audits.c.error_code,
                _audits.c.finished_at,
            )  # fmt: skip
            .select_from(_chats)
            .outerjoin(_audits, _audits.c.chat_id == _chats.c.id)
            .order_by(_chats.c.updated_at.desc(), _chats.c.id)
        )
        with transaction(self.engine) as connection:
            return [ChatSummary(*row) for row in connection.execute(query)]

    def _lock_chat(self, connection: Connection, chat_id: str) -> bool:
        """Lock the chat's row until the transaction ends (SQLite's write lock already covers it)."""
        return self._locked_size(connection, chat_id) is not None

    @staticmethod
    def _locked_size(connection: Connection, chat_id: str) -> tuple[int, int] | None:
        """Lock the chat's row (see :meth:`_lock_chat`) and return its message count and bytes; ``None`` when it is gone."""
        query = sa.select(_chats.c.message_count, _chats.c.message_bytes).where(_chats.c.id == chat_id).with_for_update()
        row = connection.execute(query).one_or_none()
        return None if row is None else (row[0], row[1])

    def _append(self, connection: Connection, chat_id: str, messages: list[dict], *, bounded: bool = False) -> int:
        """Append ``messages`` (within the chat's limits when ``bounded``); returns the first one's position."""
        size = self._locked_size(connection, chat_id)
        if size is None:
            raise ChatNotFound(chat_id)
        texts = [_dumps(message) for message in messages]
        if bounded:
            self.chat_limits.check(*size, texts)
        last = connection.execute(
            sa.select(sa.func.max(_messages.c.position)).where(_messages.c.chat_id == chat_id)
        ).scalar()
        first = 0 if last is None else last + 1
        self._insert_messages(connection, chat_id, first, messages, texts, utc_now())
        return first

    @staticmethod
    def _insert_messages(connection: Connection, chat_id: str, first: int, messages: list[dict], texts: list[str],
                         now: str) -> None:  # fmt: skip
        """Insert the messages (``texts``: their stored JSON) and count them in the chat's size."""
        if messages:
            connection.execute(
                _messages.insert(),
                [
                    {"chat_id": chat_id, "position": first + number, "role": message["role"], "message": text,
                     "created_at": now}  # fmt: skip
                    for number, (message, text) in enumerate(zip(messages, texts))
                ],
            )
        connection.execute(
            _chats.update().where(_chats.c.id == chat_id).values(
                updated_at=now, message_count=_chats.c.message_count + len(messages),
                message_bytes=_chats.c.message_bytes + _size(texts),
            )
        )  # fmt: skip

    # generations and audits

    def begin_generation(self, audit: PromptContextAudit) -> int:
        """Record a generation in progress with its pending audit; returns its sequence number.

        Raises ``CHAT_NOT_FOUND`` when the chat is gone, ``STORE_UNAVAILABLE``
        when the database cannot be written (then nothing was begun).
        """
        not_started = "The generation was not started, and nothing was sent to the provider: the database failed"
        with _unavailable_on_failure(not_started), transaction(self.engine, write=True) as connection:
            size = self._locked_size(connection, audit.chat_id)
            if size is None:
                raise ChatNotFound(audit.chat_id)
            if self.chat_limits.full(*size):
                raise ChatTooLarge(
                    f"This chat is full ({size[0]:,} messages, {size[1] / 2**20:.1f} MiB; a chat holds at most "
                    f"{self.chat_limits.messages:,} messages and {self.chat_limits.bytes / 2**20:g} MiB): a reply "
                    "would not fit, so nothing was sent to the provider. Start a new chat.", location="generate")  # fmt: skip
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
        a later generation's audit is already there. Returns the stored reply
        (``None`` without one, or when the chat was deleted meanwhile).

        A reply is stored once, whatever happened meanwhile: when another process
        already finalized the generation ``INTERRUPTED`` (its lease ran out while
        the database was locked or unreachable), the reply is still appended and
        ``audit`` replaces that ``INTERRUPTED`` one, which was a guess; a reply
        written again (from the spool, or after a commit whose answer was lost)
        is recognised by its ``meta.id`` and not appended twice.
        """
        with transaction(self.engine, write=True) as connection:
            if not self._lock_chat(connection, audit.chat_id):
                return None
            gone = connection.execute(_generations.delete().where(_generations.c.generation_id == audit.generation_id))
            late = gone.rowcount == 0  # finalized already: INTERRUPTED by another process, or by this very write
            if reply is not None:
                reply = storable_messages([reply])[0]
                again = late or audit.status != COMPLETED  # the spool's outcome: the client may have appended it
                if not (again and self._holds_reply(connection, audit.chat_id, reply)):
                    self._append(connection, audit.chat_id, [reply])
            self._put_audit(connection, audit, seq, over_interrupted=late)
        return reply

    def _put_audit(self, connection: Connection, audit: PromptContextAudit, seq: int, *,
                   over_interrupted: bool = False) -> None:  # fmt: skip
        """Make ``audit`` the chat's audit unless a later generation's is there (or, with
        ``over_interrupted``, unless the one there is not this generation's ``INTERRUPTED``)."""
        current = connection.execute(
            sa.select(_audits.c.seq, _audits.c.generation_id, _audits.c.error_code).where(_audits.c.chat_id == audit.chat_id)
        ).one_or_none()
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
        elif current.seq < seq or (over_interrupted and current.generation_id == audit.generation_id
                                   and current.error_code == GenerationInterrupted.code):  # fmt: skip
            connection.execute(_audits.update().where(_audits.c.chat_id == audit.chat_id).values(**values))

    @staticmethod
    def _holds_reply(connection: Connection, chat_id: str, reply: dict) -> bool:
        """Whether the chat already holds this reply (the same ``meta.id``, which only its generation made)."""
        meta = reply.get("meta")
        ident = meta.get("id") if isinstance(meta, dict) else None
        if not isinstance(ident, str) or not ident:
            return False
        marker = _dumps({"id": ident})[1:-1]  # "id":"msg_..." as the stored JSON text spells it
        candidates = connection.execute(
            sa.select(_messages.c.message).where(
                _messages.c.chat_id == chat_id, _messages.c.role == reply["role"],
                _messages.c.message.contains(marker, autoescape=True),
            )
        )  # fmt: skip
        for (text,) in candidates:
            found = json.loads(text).get("meta")
            if isinstance(found, dict) and found.get("id") == ident:
                return True
        return False

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

        Never this process's own generations: it is alive, and finalizes them itself
        (or keeps their outcome until the database takes it). A lease is judged again
        in the transaction that finalizes it, so one renewed meanwhile is left alone.
        Returns the ids of the generations it finalized, and only those.
        Each replaces its chat's audit unless a later generation already finished.
        """
        mine = process_owner()
        expired = expired_generations(self.engine)  # expired: any host's, by the database's clock
        query = sa.select(_generations.c.seq, _generations.c.generation_id, _generations.c.owner)
        with transaction(self.engine) as connection:
            rows = connection.execute(query.order_by(_generations.c.seq)).all()
        recovered = []
        for seq, generation_id, owner in rows:
            if owner == mine:
                continue
            dead = owner_is_gone(owner)
            if (dead or generation_id in expired) and self._reap(generation_id, seq, lease_only=not dead):
                recovered.append(generation_id)
        return recovered

    def _reap(self, generation_id: str, seq: int, *, lease_only: bool) -> bool:
        """Finalize one generation ``INTERRUPTED`` if it is still in progress (and, with
        ``lease_only``, its lease still run out); returns whether it did."""
        with transaction(self.engine, write=True) as connection:
            row = connection.execute(
                sa.select(_generations.c.chat_id, _generations.c.audit).where(_generations.c.generation_id == generation_id)
            ).one_or_none()
            if row is None or not self._lock_chat(connection, row.chat_id):
                return False  # finished meanwhile, or its chat was deleted (and the row with it)
            condition = _generations.c.generation_id == generation_id
            if lease_only:
                condition = condition & (_generations.c.expires_at < database_clock(connection))
            if connection.execute(_generations.delete().where(condition)).rowcount == 0:
                return False  # finished, or its lease renewed, while this waited for the lock
            audit = PromptContextAudit.from_dict(json.loads(row.audit)).finish(FAILED, GenerationInterrupted())
            self._put_audit(connection, audit, seq)
        return True


def open_store(database: str | os.PathLike | None = None, **options: Any) -> Store:
    """A ready store: its files checked (:func:`~contextfit.serving.database.check_files`), schema migrated, the outcomes kept by an earlier process
    written (:mod:`contextfit.serving.spool`), and dead processes' generations finalized.

    ``database`` is a SQLite path (created if missing), ``:memory:``, or a
    SQLAlchemy URL such as ``postgresql://user:pass@127.0.0.1/contextfit``;
    by default ``$CONTEXTFIT_DB`` or ``contextfit.db``. ``options`` go to
    :class:`Store` (``lock_timeout``, ``finish_retry``, ``spool``).
    """
    check_files(database)  # a read-only SQLite file is refused with its reason, before SQLite trips on it
    store = Store(database, **options)
    store.migrate()
    store.finishes.drain()  # first: a kept outcome is the truth, INTERRUPTED only a guess
    store.finishes.start()  # whatever the database did not take yet, in the background
    store.recover_interrupted()
    return store
