"""serving: the store, the context audit, generation, providers and the HTTP API.

The core: ``store.py`` (chats, messages and audits in SQLite or PostgreSQL; ``migrations.py``,
``database.py``), ``audit.py`` (:class:`PromptContextAudit`) and ``audits.py`` (reading them),
``generation.py`` (plan, audit, call the provider, store the reply), ``providers/``, and ``api/``
(the FastAPI app: ``app.py`` its routes, ``schemas.py`` the request bodies).

Machinery for running many processes on one database, fenced in modules of its own (a single
``contextfit serve`` uses them too, but a reader of the core can skip them): ``liveness.py`` (who
owns a generation; the lease and its reaper), ``cancellation.py`` (cancel from any process),
``schema_lock.py`` (migrate once), ``outcomes.py`` and ``spool.py`` (a paid reply kept through a
database outage), ``sessions.py`` (a warm fit session per chat), ``api/processes.py`` (several
server processes on one port).

Imports the replays layer and everything below it, never the dashboard or the command line.
"""
