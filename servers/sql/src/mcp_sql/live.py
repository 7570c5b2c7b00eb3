"""Live schema: while any client listens, schema changes become resource notifications.

SQLite: the database file (and its -wal / -journal) is watched with `WatchService`; after a
change the per-table fingerprints are compared with the last ones. PostgreSQL: fingerprints are
polled every `poll_interval` seconds. Nothing is watched or polled while nobody listens.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from pathlib import Path
from types import TracebackType
from urllib.parse import quote, unquote

from mcp_batteries.watch import ChangeBatch, WatchService

from mcp_sql.database import Database

logger = logging.getLogger(__name__)

SCHEME = "sql://"


def schema_uri(database: str) -> str:
    return f"{SCHEME}{quote(database, safe='')}/schema"


def table_uri(database: str, schema: str, table: str) -> str:
    return f"{SCHEME}{quote(database, safe='')}/table/{quote(schema, safe='')}/{quote(table, safe='')}"


def parse_uri(uri: str) -> tuple[str, str | None, str | None] | None:
    """(database, schema, table) of one of our URIs (schema/table None for the schema URI)."""
    if not uri.startswith(SCHEME):
        return None
    parts = uri[len(SCHEME) :].split("/")
    if len(parts) == 2 and parts[1] == "schema" and parts[0]:
        return unquote(parts[0]), None, None
    if len(parts) == 4 and parts[1] == "table" and all(parts):
        return unquote(parts[0]), unquote(parts[2]), unquote(parts[3])
    return None


def split_key(key: str) -> tuple[str, str]:
    """A fingerprint key "schema.table" -> (schema, table)."""
    schema, _, table = key.partition(".")
    return schema, table


class LiveSchema:
    """Maps interest to SQLite file watches and PostgreSQL polling; changes to notifications."""

    def __init__(
        self,
        databases: Callable[[], dict[str, Database]],
        *,
        resource_updated: Callable[[str], Awaitable[None]],
        list_changed: Callable[[], Awaitable[None]],
        poll_interval: float,
    ) -> None:
        self._databases = databases
        self._resource_updated = resource_updated
        self._list_changed = list_changed
        self._poll_interval = poll_interval
        self._fingerprints: dict[str, dict[str, str]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._paths: dict[Path, str] = {}
        self._poll_task: asyncio.Task[None] | None = None
        self._active = False
        self._open = False
        self.watch = WatchService(self._on_changes)

    # -- service lifetime (entered inside the server's lifespan) ---------------------------------
    async def __aenter__(self) -> LiveSchema:
        self._open = True
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._open = False
        await self._stop()

    # -- interest --------------------------------------------------------------------------
    async def on_interest(self, keys: frozenset[str]) -> None:
        if keys and self._open:
            await self._start()
        elif not keys:
            await self._stop()

    async def _start(self) -> None:
        if self._active:
            return
        self._active = True
        dbs = self._databases()
        for name, db in dbs.items():  # baseline before the subscribe call is answered
            await self._snapshot(name, db)
        files: list[Path] = []
        self._paths = {}
        for name, db in dbs.items():
            if db.sqlite_path is not None:
                base = Path(db.sqlite_path)
                for path in (base, Path(f"{base}-wal"), Path(f"{base}-journal")):
                    self._paths[path] = name
                    files.append(path)
        if files:
            await self.watch.set_targets(files=files)
        if any(db.sqlite_path is None for db in dbs.values()):
            self._poll_task = asyncio.get_running_loop().create_task(self._poll())

    async def _stop(self) -> None:
        self._active = False
        task, self._poll_task = self._poll_task, None
        if task is not None:
            task.cancel()
            with suppress(asyncio.CancelledError, Exception):
                await task
        await self.watch.set_targets(files=())
        self._fingerprints.clear()

    async def _snapshot(self, name: str, db: Database) -> None:
        try:
            self._fingerprints[name] = await db.table_fingerprints()
        except Exception:
            logger.exception("schema fingerprint of %s failed", name)

    # -- change detection ------------------------------------------------------------------------
    async def _on_changes(self, batch: ChangeBatch) -> None:
        names = {self._paths[Path(p)] for _, p in batch if Path(p) in self._paths}
        for name in sorted(names):
            await self.refresh(name)

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self._poll_interval)
            for name, db in list(self._databases().items()):
                if db.sqlite_path is None:
                    await self.refresh(name)

    async def refresh(self, name: str) -> None:
        """Compare `name`'s table fingerprints with the last ones and notify what changed."""
        db = self._databases().get(name)
        if db is None or not self._active:
            return
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            before = self._fingerprints.get(name)
            try:
                after = await db.table_fingerprints()
            except Exception:
                logger.exception("schema fingerprint of %s failed", name)
                return
            self._fingerprints[name] = after
            if before is None or before == after:
                return
            changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
            for key in changed:
                await self._resource_updated(table_uri(name, *split_key(key)))
            await self._resource_updated(schema_uri(name))
            if before.keys() != after.keys():
                await self._list_changed()
