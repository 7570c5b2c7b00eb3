"""The store's life in the server: opened when the server starts, closed when it stops."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
from mcp_batteries.errors import ConfigError, UpstreamError
from mcp_batteries.safety import redact_url

from mcp_tasks.backend import Backend
from mcp_tasks.config import TasksSettings
from mcp_tasks.database import open_backend
from mcp_tasks.store import Report, TaskStore, ignore

logger = logging.getLogger(__name__)

#: Runs once the store is open, before the first request (e.g. live notifications' baseline).
OpenHook = Callable[[TaskStore], Awaitable[None]]


class TasksService:
    def __init__(self, settings: TasksSettings) -> None:
        self.settings = settings
        self._store: TaskStore | None = None
        self.on_open: list[OpenHook] = []
        #: Handed to the store: told what each committed change did (the audit trail).
        self.report: Report = ignore

    @property
    def store(self) -> TaskStore:
        if self._store is None:
            raise UpstreamError("the task database is not open (the server is starting or stopping)")
        return self._store

    @property
    def where(self) -> str:
        s = self.settings
        if s.database_url:
            return f"PostgreSQL {redact_url(s.database_url)}"
        return f"SQLite file {s.sqlite_path}"

    @asynccontextmanager
    async def running(self) -> AsyncIterator[TaskStore]:
        s = self.settings
        if s.db is None and not s.database_url:
            # The default lives in the user's data directory: made on first use (a --db never is).
            try:
                await anyio.Path(s.sqlite_path.parent).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(
                    f"cannot create the directory for the task database {s.sqlite_path}: {exc}"
                ) from exc
        backend: Backend = await open_backend(
            sqlite_path=None if s.database_url else s.sqlite_path,
            database_url=s.database_url,
            busy_timeout=s.busy_timeout,
        )
        store = TaskStore(
            backend,
            read_only=s.read_only,
            page_size=s.page_size,
            max_resource_tasks=s.max_resource_tasks,
            history_days=s.history_days,
        )
        store.report = self.report
        try:
            await store.prune_history()
            for hook in self.on_open:
                await hook(store)
            self._store = store
            logger.info("tasks stored in %s", backend.description)
            yield store
        finally:
            self._store = None
            await backend.close()
