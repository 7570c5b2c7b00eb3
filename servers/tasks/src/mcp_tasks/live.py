"""Live resources: every committed change reaches subscribers, whoever made it.

(Interim: this process's own changes only, until the runtime's LiveResources helper lands.)
"""

from __future__ import annotations

from typing import Any

from mcp_tasks.changes import ChangeSet
from mcp_tasks.service import TasksService
from mcp_tasks.store import TaskStore


def connect(server: Any, service: TasksService) -> None:
    async def notify(changes: ChangeSet) -> None:
        for uri in sorted(changes.uris):
            if uri in server.interest:
                await server.notify_resource_updated(uri)
        if changes.listing:
            await server.notify_resources_list_changed()

    async def on_open(store: TaskStore) -> None:
        store.on_commit = notify

    service.on_open.append(on_open)
