"""Generation outcomes the database has not taken yet, kept on disk until it does.

When the write that finishes a generation fails (:mod:`contextfit.serving.outcomes`),
its outcome — the final audit and, when the provider answered, the reply — is
kept here before anyone is answered: one JSON file per generation, written
under a temporary name, flushed to disk (``fsync``), renamed into place and
the folder flushed too. So a paid reply survives its client leaving, the
process being killed and the machine losing power; whichever process next
starts on the database, or retries in the background, writes it.

Where (:func:`spool_folder`): ``$CONTEXTFIT_SPOOL_DIR``; else beside a SQLite
file (``chats.db`` → ``chats.db.spool/``); else, for a server database such as
PostgreSQL, ``contextfit-spool/<digest of the URL>/`` in the working directory.
An in-memory database keeps its outcomes in memory, as it keeps its chats.
Nothing is created until an outcome has to be kept. Files and folder are the
owner's only (``0600``/``0700``): they hold replies.

Several processes of one machine may share a folder: writing an outcome twice
is harmless (the store adds a reply once, by its ``meta.id``). When the disk
refuses too (it is full), the outcome stays in this process's memory and is
still written once the database works, unless the process stops first.

>>> spool = Spool(None)
>>> spool.ids()
[]
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from collections.abc import Mapping
from pathlib import Path

from .. import environment
from .audit import PromptContextAudit

logger = logging.getLogger(__name__)

#: Environment variable naming the spool folder.
SPOOL_VAR = "CONTEXTFIT_SPOOL_DIR"
_NAME = re.compile(r"gen_[0-9A-Za-z_-]{1,80}")
_SUFFIX = ".json"


@dataclass(frozen=True, slots=True)
class Kept:
    """One outcome waiting for the database: the finalized audit, its sequence number, and the reply (or ``None``)."""

    audit: PromptContextAudit
    seq: int
    reply: dict | None = None

    def to_json(self) -> str:
        return json.dumps({"audit": self.audit.to_dict(), "seq": self.seq, "reply": self.reply}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Kept:
        data = json.loads(text)
        return cls(PromptContextAudit.from_dict(data["audit"]), int(data["seq"]), data.get("reply"))


def spool_folder(url: str, sqlite_path: str | None, env: Mapping[str, str] | None = None) -> Path | None:
    """Where a database's outcomes wait (see the module docstring); ``None`` for an in-memory database.

    ``url`` is the database's URL without its password, ``sqlite_path`` its file
    when it is a SQLite file (``None`` otherwise, ``""`` in memory); ``env`` the
    environment read for ``$CONTEXTFIT_SPOOL_DIR`` (default: the process's).

    >>> spool_folder("sqlite:///data/chats.db", "data/chats.db", env={}).as_posix()
    'data/chats.db.spool'
    >>> spool_folder("sqlite://", "", env={}) is None
    True
    >>> spool_folder("postgresql+psycopg://cf:***@db/cf", None, env={}).parent.name
    'contextfit-spool'
    >>> spool_folder("sqlite://", "", env={"CONTEXTFIT_SPOOL_DIR": "/var/spool/cf"}).parent.as_posix()
    '/var/spool/cf'
    """
    chosen = environment.read(SPOOL_VAR, env)
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    if chosen:
        return Path(chosen) / digest
    if sqlite_path == "":
        return None
    if sqlite_path is not None:
        return Path(sqlite_path + ".spool")
    return Path("contextfit-spool") / digest


class Spool:
    """The outcomes waiting for the database, in ``folder`` (or in memory when it is ``None``)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._memory: dict[str, Kept] = {}  # outcomes the disk refused (or all of them, without a folder)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Spool({str(self.folder) if self.folder else 'in memory'})"

    def keep(self, kept: Kept) -> str | None:
        """Keep ``kept`` (replacing what was kept for its generation); returns ``None`` once it is
        on disk, else why it is in memory only (no folder, or the disk refused it)."""
        generation_id = kept.audit.generation_id
        if self.folder is None:
            with self._lock:
                self._memory[generation_id] = kept
            return "the database is in memory"
        try:
            self._write(generation_id, kept.to_json())
        except OSError as exc:
            logger.error("generation %s: its outcome could not be kept on disk in %s (%s); it is kept in memory only",
                         generation_id, self.folder, exc)  # fmt: skip
            with self._lock:
                self._memory[generation_id] = kept
            return f"{type(exc).__name__}: {exc}"
        with self._lock:
            self._memory.pop(generation_id, None)
        return None

    def drop(self, generation_id: str) -> None:
        """Forget a generation's outcome: the database has it."""
        with self._lock:
            self._memory.pop(generation_id, None)
        if self.folder is not None and _NAME.fullmatch(generation_id):
            try:
                (self.folder / (generation_id + _SUFFIX)).unlink()
            except FileNotFoundError:
                pass  # another process of this machine wrote it first
            except OSError as exc:  # written to the database all the same: writing it again would be harmless
                logger.warning("generation %s: its kept outcome could not be removed from %s (%s)",
                               generation_id, self.folder, exc)  # fmt: skip

    def ids(self) -> list[str]:
        """The generations waiting, oldest first (by the time they were kept)."""
        with self._lock:
            found = {generation_id: 0.0 for generation_id in self._memory}
        if self.folder is not None:
            try:
                entries = list(os.scandir(self.folder))
            except OSError:  # not made yet (nothing was ever kept there), or unreadable: nothing on disk to write
                entries = []
            for entry in entries:
                stem = entry.name[: -len(_SUFFIX)]
                if entry.name.endswith(_SUFFIX) and _NAME.fullmatch(stem):
                    try:
                        found.setdefault(stem, entry.stat().st_mtime)
                    except FileNotFoundError:
                        continue
        return sorted(found, key=lambda generation_id: found[generation_id])

    def load(self, generation_id: str) -> Kept | None:
        """The outcome kept for ``generation_id``, or ``None`` when it is gone (written meanwhile)."""
        with self._lock:
            kept = self._memory.get(generation_id)
        if kept is not None or self.folder is None or not _NAME.fullmatch(generation_id):
            return kept
        path = self.folder / (generation_id + _SUFFIX)
        try:
            return Kept.from_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except OSError as exc:  # unreadable now: left where it is, for a later try
            logger.warning("generation %s: its kept outcome in %s cannot be read now (%s)", generation_id, path, exc)
            return None
        except (ValueError, KeyError, TypeError) as exc:  # not ours, or damaged: set aside, never in the way
            self.set_aside(generation_id, f"it cannot be read ({type(exc).__name__}: {exc})")
            return None

    def set_aside(self, generation_id: str, why: str) -> None:
        """Stop retrying an outcome the database will never take: renamed ``.failed``, logged."""
        with self._lock:
            self._memory.pop(generation_id, None)
        if self.folder is not None and _NAME.fullmatch(generation_id):
            path = self.folder / (generation_id + _SUFFIX)
            try:
                path.replace(path.with_suffix(".failed"))
            except FileNotFoundError:
                return
            except OSError:
                pass  # logged below all the same
        logger.error("generation %s: its kept outcome is set aside in %s: %s", generation_id, self.folder, why)

    def _write(self, generation_id: str, text: str) -> None:
        assert self.folder is not None
        if not _NAME.fullmatch(generation_id):
            raise OSError(f"not a generation id: {generation_id[:40]!r}")
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".", suffix=".tmp")  # mode 0600
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.folder / (generation_id + _SUFFIX))
        except BaseException:
            try:
                os.unlink(temporary)
            except FileNotFoundError:
                pass
            raise
        folder = os.open(self.folder, os.O_RDONLY)
        try:
            os.fsync(folder)  # the rename itself reaches the disk
        finally:
            os.close(folder)
