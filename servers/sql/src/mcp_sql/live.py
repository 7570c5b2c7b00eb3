"""Live schema: while any client listens, schema changes become resource notifications.

`mcp_batteries.live.LiveResources` owns interest, watching and notifying; this module says what
to watch and what changed. SQLite: the database file (and its -wal / -journal) is watched; after
a change the per-table fingerprints are compared with the last ones. PostgreSQL: fingerprints
are polled every `poll_interval` seconds. Nothing is watched or polled while nobody listens.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import anyio
from mcp_batteries.live import Changes, Hits, WatchTarget

from mcp_sql.database import Database
from mcp_sql.uris import parse_uri, schema_uri, table_uri

logger = logging.getLogger(__name__)


def split_key(key: str) -> tuple[str, str]:
    """A fingerprint key "schema.table" -> (schema, table)."""
    schema, _, table = key.partition(".")
    return schema, table


class LiveSchema:
    """The SQL server's `LiveSource`: database files to watch, catalogs to poll, what changed."""

    def __init__(self, databases: Callable[[], dict[str, Database]], *, poll_interval: float) -> None:
        self._databases = databases
        self._fingerprints: dict[str, dict[str, str]] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self._paths: dict[Path, str] = {}
        self._interval = poll_interval

    @property
    def poll_interval(self) -> float | None:
        """PostgreSQL catalogs cannot be watched: they are polled while anyone listens."""
        dbs = self._databases()
        return self._interval if any(db.sqlite_path is None for db in dbs.values()) else None

    def _files(self, name: str, db: Database) -> list[WatchTarget]:
        if db.sqlite_path is None:
            return []
        base = Path(db.sqlite_path)
        files = [base, Path(f"{base}-wal"), Path(f"{base}-journal")]
        for path in files:
            self._paths[path] = name
        return [WatchTarget.file(path) for path in files]

    async def targets(self, uri: str) -> Sequence[WatchTarget]:
        parsed = parse_uri(uri)
        db = self._databases().get(parsed[0]) if parsed else None
        if parsed is None or db is None:
            return []
        await self._baseline(parsed[0], db)  # before the subscribe call is answered
        return self._files(parsed[0], db)

    async def list_targets(self) -> Sequence[WatchTarget]:
        targets: list[WatchTarget] = []
        for name, db in self._databases().items():
            await self._baseline(name, db)
            targets.extend(self._files(name, db))
        return targets

    async def resolve(self, hits: Hits) -> Changes:
        names = {self._paths[Path(p)] for _, p in hits.batch if Path(p) in self._paths}
        return await self._refresh_all(sorted(names))

    async def poll(self, uris: frozenset[str]) -> Changes:
        dbs = self._databases()
        return await self._refresh_all(sorted(n for n, db in dbs.items() if db.sqlite_path is None))

    async def _refresh_all(self, names: list[str]) -> Changes:
        updated: set[str] = set()
        digests: dict[str, str] = {}
        lists: list[str] = []
        for name in names:
            changes = await self.refresh(name)
            updated |= changes.updated
            digests.update(changes.digests)
            if changes.list_changed:
                lists.append(changes.list_digest or name)
        list_digest = _digest(lists) if lists else None
        return Changes(frozenset(updated), bool(lists), digests, list_digest)

    async def _baseline(self, name: str, db: Database) -> None:
        if name in self._fingerprints:
            return
        try:
            self._fingerprints[name] = await db.table_fingerprints()
        except Exception:
            logger.exception("schema fingerprint of %s failed", name)

    async def refresh(self, name: str) -> Changes:
        """Compare `name`'s table fingerprints with the last ones: which resources changed."""
        db = self._databases().get(name)
        if db is None:
            return Changes()
        async with self._locks.setdefault(name, anyio.Lock()):
            before = self._fingerprints.get(name)
            try:
                after = await db.table_fingerprints()
            except Exception:
                logger.exception("schema fingerprint of %s failed", name)
                return Changes()
            self._fingerprints[name] = after
            if before is None or before == after:
                return Changes()
            changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
            # What each replica polling or watching the same database sees alike: the change bus
            # delivers it once (mcp_batteries.live.Changes).
            digests = {table_uri(name, *split_key(key)): after.get(key, "-") for key in changed}
            digests[schema_uri(name)] = _digest(f"{key}={value}" for key, value in sorted(after.items()))
            list_digest = _digest([name, *sorted(after)])
            return Changes(frozenset(digests), before.keys() != after.keys(), digests, list_digest)


def _digest(parts: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]
