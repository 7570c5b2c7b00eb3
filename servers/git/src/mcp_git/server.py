"""mcp-git: registers tools, resources, prompts and completions; the work is in the domain modules.

The reference server's twelve tools (mcp-server-git) keep their names, argument names and
defaults, so prompts written for it keep working; `repo_path` may be left out when the server
has exactly one repository. Listings add `structuredContent` with an output schema.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import (
    CallToolResult,
    Completion,
    PromptReference,
    Resource,
    ResourceTemplateReference,
    TextContent,
)
from mcp_batteries.errors import InvalidInput
from mcp_batteries.live import LiveResources, RootsTracker
from mcp_batteries.server import BatteriesServer, CacheHint, Consent, changes_wanted, note_change
from pydantic import BaseModel, Field

from mcp_git import audited, changes, history, losses, network, prompts, refs, resources
from mcp_git.config import GitSettings
from mcp_git.live import LiveRepositories
from mcp_git.models import (
    BlameResult,
    BranchResult,
    GrepResult,
    LogResult,
    ReflogResult,
    RemoteResult,
    RepositoriesResult,
    StashResult,
    StatusResult,
    TagResult,
)
from mcp_git.pages import TextPage
from mcp_git.runner import off_loop
from mcp_git.scope import RepositoryScope
from mcp_git.service import GitService
from mcp_git.status import DEFAULT_STATUS_LIMIT, status_page

INSTRUCTIONS = """Git repositories the operator allowed (git_list_repositories shows them). Every
tool takes repo_path: the repository's path or its name; it may be left out when there is only
one. Long outputs come in pages: a reply that has more says which call (offset, skip or
start_line) gets the next page. Names that are not plain text (bytes that are not UTF-8, control
characters) are shown in git's C quoting ("bad\\377name.txt"); pass them back exactly as shown.
Repositories are also resources (git://NAME/status, /log, /branches, /tags, /commit/REV,
/blob/REV/PATH) that clients can subscribe to for live change notifications."""

RepoArg = Annotated[
    str | None,
    Field(
        description=(
            "The repository: its path (or any path inside it) or its name from "
            "git_list_repositories. May be left out when the server has exactly one repository."
        )
    ),
]
ContextLines = Annotated[int, Field(ge=0, le=10_000, description="Lines of context around each change.")]
PathsArg = Annotated[
    list[str],
    Field(description="Only these paths (files or directories, relative to the top of the repository)."),
]
OffsetLine = Annotated[
    int,
    Field(ge=1, description="First line of the output to show (for the next page: the line a reply names)."),
]
LimitLines = Annotated[int, Field(ge=1, le=20_000, description="Most lines to show in one reply.")]


#: How to get the rest of a reply the runtime cut, for the tools paged by lines.
LINE_PAGING = "call it again with offset (the first line to show, from 1) and limit (lines)"


def _reply(text: str, result: BaseModel) -> CallToolResult:
    data = result.model_dump(mode="json", exclude={"rows"})
    rows = getattr(result, "rows", None)
    if rows is not None:
        data["rows"] = rows  # already JSON-safe: strings, integers and nulls
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _paged(title: str, page: TextPage, tool: str, extra: str = "") -> str:
    return title + page.text + page.footer(lambda line: f"call {tool}{extra} with offset={line}")


def build_server(settings: GitSettings) -> BatteriesServer:
    service = GitService(settings)

    async def check_subscription(session: Any, uri: str) -> None:
        await off_loop(service.target, await roots.effective(session), uri)

    server = BatteriesServer(
        settings, title="Git", instructions=INSTRUCTIONS, subscriptions=check_subscription
    )

    async def roots_changed(connection: Any) -> None:
        await server.notify_resources_list_changed(connection)

    roots: RootsTracker[RepositoryScope] = RootsTracker(
        service.scope, lambda scope, paths: scope.narrowed(paths), roots_changed
    )
    roots.install(server)

    async def scope(ctx: Context[Any, Any]) -> RepositoryScope:
        return await roots.effective(ctx.session)

    source = LiveRepositories(service, max_dirs=settings.watch_max_dirs)
    live = LiveResources(server, source, watch=settings.watch)

    async def call(ctx: Context[Any, Any], repo_path: str | None, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await off_loop(service.call, await scope(ctx), repo_path, fn, *args, **kwargs)

    async def change(
        ctx: Context[Any, Any], repo_path: str | None, fn: Any, *args: Any, **kwargs: Any
    ) -> Any:
        """`call` for tools that change a repository: its subscribers hear of it at once, and an
        audited call reports the refs it moved (`audited.recorded`)."""
        try:
            if changes_wanted():
                return await call(ctx, repo_path, audited.recorded, note_change, fn, *args, **kwargs)
            return await call(ctx, repo_path, fn, *args, **kwargs)
        finally:
            news = await source.recheck(live.subscribed, live.listing_wanted)
            await live.changed(
                news.updated,
                list_changed=news.list_changed,
                digests=news.digests,
                list_digest=news.list_digest,
            )

    # -- the reference's tools ------------------------------------------------------------------
    @server.tool(title="Working tree status", read_only=True)
    async def git_status(
        ctx: Context[Any, Any],
        repo_path: RepoArg = None,
        offset: Annotated[int, Field(ge=0, description="Skip this many changed paths (paging).")] = 0,
        limit: Annotated[
            int, Field(ge=1, le=10_000, description="Most changed paths per reply.")
        ] = DEFAULT_STATUS_LIMIT,
    ) -> Annotated[CallToolResult, StatusResult]:
        """Shows the working tree status: the branch, how it compares with its upstream, and every
        staged, unstaged, unmerged and untracked path (as `git status` prints them). Structured
        output lists the paths as rows [path, staged, unstaged, original_path]; a long list comes in
        pages (the reply names the next offset)."""
        text, result = await call(ctx, repo_path, status_page, offset, limit)
        return _reply(text, result)

    @server.tool(title="Unstaged changes", read_only=True, structured_output=False, paging=LINE_PAGING)
    async def git_diff_unstaged(
        ctx: Context[Any, Any],
        repo_path: RepoArg = None,
        context_lines: ContextLines = 3,
        paths: PathsArg = [],  # noqa: B006 - the SDK copies defaults per call
        offset: OffsetLine = 1,
        limit: LimitLines = 2000,
    ) -> str:
        """Shows changes in the working directory that are not yet staged, as a unified diff.
        Long diffs come in pages: the reply names the offset of the next page."""
        page = await call(
            ctx,
            repo_path,
            history.diff_page,
            context_lines=context_lines,
            paths=paths,
            offset=offset,
            max_lines=limit,
        )
        return _paged("Unstaged changes:\n", page, "git_diff_unstaged")

    @server.tool(title="Staged changes", read_only=True, structured_output=False, paging=LINE_PAGING)
    async def git_diff_staged(
        ctx: Context[Any, Any],
        repo_path: RepoArg = None,
        context_lines: ContextLines = 3,
        paths: PathsArg = [],  # noqa: B006
        offset: OffsetLine = 1,
        limit: LimitLines = 2000,
    ) -> str:
        """Shows changes that are staged for commit, as a unified diff (paged like git_diff_unstaged)."""
        page = await call(
            ctx,
            repo_path,
            history.diff_page,
            staged=True,
            context_lines=context_lines,
            paths=paths,
            offset=offset,
            max_lines=limit,
        )
        return _paged("Staged changes:\n", page, "git_diff_staged")

    @server.tool(title="Diff against a commit", read_only=True, structured_output=False, paging=LINE_PAGING)
    async def git_diff(
        ctx: Context[Any, Any],
        target: Annotated[
            str,
            Field(
                description="Branch, tag or commit to compare the working tree with, or a range A..B / A...B."
            ),
        ],
        repo_path: RepoArg = None,
        context_lines: ContextLines = 3,
        paths: PathsArg = [],  # noqa: B006
        offset: OffsetLine = 1,
        limit: LimitLines = 2000,
    ) -> str:
        """Shows differences between the working tree and a branch or commit, or between two
        commits (A..B; A...B compares B with where it forked from A). Paged like git_diff_unstaged."""
        page = await call(
            ctx,
            repo_path,
            history.diff_page,
            target=target,
            context_lines=context_lines,
            paths=paths,
            offset=offset,
            max_lines=limit,
        )
        return _paged(f"Diff with {target}:\n", page, "git_diff", f" (target={target!r})")

    @server.tool(title="Commit", read_only=False, structured_output=False)
    async def git_commit(
        ctx: Context[Any, Any],
        message: Annotated[str, Field(description="The commit message: a subject line, optionally a body.")],
        repo_path: RepoArg = None,
    ) -> str:
        """Records the staged changes as a new commit, with the repository's configured identity
        (user.name/user.email). Stage changes with git_add first; hooks do not run."""
        text: str = await change(ctx, repo_path, changes.commit, message)
        return text

    @server.tool(title="Stage files", read_only=False, idempotent=True, structured_output=False)
    async def git_add(
        ctx: Context[Any, Any],
        files: Annotated[
            list[str],
            Field(
                min_length=1,
                description="Paths to stage, relative to the top of the repository; ['.'] for all.",
            ),
        ],
        repo_path: RepoArg = None,
    ) -> str:
        """Adds file contents to the staging area (new, modified and deleted files). Paths must
        stay inside the repository's working tree."""
        text: str = await change(ctx, repo_path, changes.add, files, report=note_change)
        return text

    @server.tool(
        title="Unstage everything",
        read_only=False,
        destructive=True,
        idempotent=True,
        structured_output=False,
    )
    async def git_reset(ctx: Context[Any, Any], repo_path: RepoArg = None) -> str:
        """Unstages all staged changes (the working tree keeps them). To unstage some paths only,
        use git_restore with staged=true."""
        text: str = await change(ctx, repo_path, changes.reset, report=note_change)
        return text

    @server.tool(
        title="Commit history",
        read_only=True,
        paging="call it again with a smaller max_count, or with skip",
        task_support="optional",
    )
    async def git_log(
        ctx: Context[Any, Any],
        repo_path: RepoArg = None,
        max_count: Annotated[int, Field(ge=1, le=10_000, description="Most commits to show.")] = 10,
        start_timestamp: Annotated[
            str | None,
            Field(description="Only commits after this: ISO 8601 ('2024-01-15T14:30:25') or '2 weeks ago'."),
        ] = None,
        end_timestamp: Annotated[
            str | None, Field(description="Only commits before this (same formats as start_timestamp).")
        ] = None,
        author: Annotated[
            str | None, Field(description="Only commits whose author name or email contains this.")
        ] = None,
        message: Annotated[
            str | None, Field(description="Only commits whose message contains this (any case).")
        ] = None,
        paths: PathsArg = [],  # noqa: B006
        revision: Annotated[
            str | None, Field(description="Start from this branch, tag or commit (default HEAD).")
        ] = None,
        skip: Annotated[
            int, Field(ge=0, description="Skip this many commits (paging: the next_skip a reply names).")
        ] = 0,
    ) -> Annotated[CallToolResult, LogResult]:
        """Shows the commit log, newest first: commit, author, date and message of each. Filter by
        time, author, message text or paths. Structured output has one row per commit; a reply
        that stops early names the skip for the next page."""
        text, result = await call(
            ctx,
            repo_path,
            history.log,
            max_count=max_count,
            skip=skip,
            start_timestamp=start_timestamp,
            end_timestamp=end_timestamp,
            author=author,
            message=message,
            revision=revision,
            paths=paths,
        )
        return _reply(text, result)

    @server.tool(title="Create branch", read_only=False, structured_output=False)
    async def git_create_branch(
        ctx: Context[Any, Any],
        branch_name: Annotated[str, Field(description="Name of the new branch.")],
        repo_path: RepoArg = None,
        base_branch: Annotated[
            str | None,
            Field(description="Branch, tag or commit to start from (default: the current commit)."),
        ] = None,
    ) -> str:
        """Creates a new branch from an optional base (it does not switch to it: use git_checkout)."""
        text: str = await change(ctx, repo_path, refs.create_branch, branch_name, base_branch)
        return text

    @server.tool(title="Switch branch", read_only=False, structured_output=False)
    async def git_checkout(
        ctx: Context[Any, Any],
        branch_name: Annotated[
            str, Field(description="A local branch to switch to (any other revision detaches HEAD).")
        ],
        repo_path: RepoArg = None,
    ) -> str:
        """Switches to a branch. Local changes that would be overwritten make it fail, and nothing
        changes. A tag or commit checks out a detached HEAD."""
        text: str = await change(ctx, repo_path, refs.checkout, branch_name)
        return text

    @server.tool(title="Show a commit or file", read_only=True, structured_output=False, paging=LINE_PAGING)
    async def git_show(
        ctx: Context[Any, Any],
        revision: Annotated[
            str,
            Field(description="A commit, branch or tag; or REV:PATH for a file or directory at a revision."),
        ],
        repo_path: RepoArg = None,
        offset: OffsetLine = 1,
        limit: LimitLines = 2000,
    ) -> str:
        """Shows the contents of a commit (header and patch, as `git show` prints it), or of a file
        or directory given as <revision>:<path>. Big commits come in pages: the reply names the
        offset of the next one."""
        page = await call(ctx, repo_path, history.show_page, revision, offset=offset, max_lines=limit)
        return _paged("", page, "git_show", f" (revision={revision!r})")

    @server.tool(title="List branches", read_only=True)
    async def git_branch(
        ctx: Context[Any, Any],
        repo_path: RepoArg = None,
        branch_type: Annotated[
            Literal["local", "remote", "all"],
            Field(description="List local branches ('local'), remote branches ('remote') or all ('all')."),
        ] = "local",
        contains: Annotated[str | None, Field(description="Only branches that contain this commit.")] = None,
        not_contains: Annotated[
            str | None, Field(description="Only branches that do NOT contain this commit.")
        ] = None,
        offset: Annotated[int, Field(ge=0, description="Skip this many branches (paging).")] = 0,
        limit: Annotated[int, Field(ge=1, le=5000, description="Most branches per reply.")] = 200,
    ) -> Annotated[CallToolResult, BranchResult]:
        """Lists git branches (as `git branch` prints them; '*' marks the current one)."""
        text, result = await call(
            ctx,
            repo_path,
            refs.list_branches,
            branch_type,
            contains=contains,
            not_contains=not_contains,
            offset=offset,
            limit=limit,
        )
        return _reply(text, result)

    # -- beyond the reference ----------------------------------------------------------------------
    @server.tool(title="Repositories", read_only=True)
    async def git_list_repositories(
        ctx: Context[Any, Any],
        offset: Annotated[int, Field(ge=0, description="Skip this many repositories (paging).")] = 0,
        limit: Annotated[int, Field(ge=1, le=2000, description="Most repositories per reply.")] = 200,
    ) -> Annotated[CallToolResult, RepositoriesResult]:
        """The repositories this server may use (configured ones, and those found in the allowed
        directories), with the names to pass as repo_path."""
        text, result = await off_loop(service.list_repositories, await scope(ctx), offset, limit)
        return _reply(text, result)

    @server.tool(title="Blame", read_only=True)
    async def git_blame(
        ctx: Context[Any, Any],
        path: Annotated[str, Field(description="The file, relative to the top of the repository.")],
        repo_path: RepoArg = None,
        revision: Annotated[
            str | None, Field(description="Blame the file as of this revision (default: the working tree).")
        ] = None,
        start_line: Annotated[int, Field(ge=1, description="First line.")] = 1,
        end_line: Annotated[
            int | None, Field(ge=1, description="Last line (at most 400 lines per reply).")
        ] = None,
    ) -> Annotated[CallToolResult, BlameResult]:
        """Shows which commit and author last changed each line of a file. At most 400 lines per
        reply; the reply names the start_line of the next page."""
        text, result = await call(
            ctx, repo_path, history.blame, path, revision=revision, start_line=start_line, end_line=end_line
        )
        return _reply(text, result)

    @server.tool(title="Search file contents", read_only=True, task_support="optional")
    async def git_grep(
        ctx: Context[Any, Any],
        pattern: Annotated[str, Field(description="An extended regular expression (as `grep -E`).")],
        repo_path: RepoArg = None,
        revision: Annotated[
            str | None, Field(description="Search this commit's files instead of the working tree.")
        ] = None,
        paths: PathsArg = [],  # noqa: B006
        ignore_case: Annotated[bool, Field(description="Match case-insensitively.")] = False,
        offset: Annotated[int, Field(ge=0, description="Skip this many matches (paging).")] = 0,
        limit: Annotated[int, Field(ge=1, le=5000, description="Most matches per reply.")] = 100,
    ) -> Annotated[CallToolResult, GrepResult]:
        """Searches tracked files (or a revision's files) for a pattern and reports path:line:text
        per match. Binary files are skipped. Paged: the reply names the next offset."""
        text, result = await call(
            ctx,
            repo_path,
            history.grep,
            pattern,
            revision=revision,
            paths=paths,
            ignore_case=ignore_case,
            offset=offset,
            limit=limit,
        )
        return _reply(text, result)

    if settings.read_only:

        @server.tool(title="List tags", read_only=True, name="git_tag")
        async def git_tag_list(
            ctx: Context[Any, Any],
            repo_path: RepoArg = None,
            offset: Annotated[int, Field(ge=0, description="Skip this many tags (paging).")] = 0,
            limit: Annotated[int, Field(ge=1, le=5000, description="Most tags per reply.")] = 200,
        ) -> Annotated[CallToolResult, TagResult]:
            """Lists the tags (annotated ones with their message)."""
            text, result = await call(ctx, repo_path, refs.list_tags, offset=offset, limit=limit)
            return _reply(text, result)

        @server.tool(title="List stashes", read_only=True, name="git_stash")
        async def git_stash_list(
            ctx: Context[Any, Any], repo_path: RepoArg = None
        ) -> Annotated[CallToolResult, StashResult]:
            """Lists the stashed changes (stash@{0} is the newest)."""
            text, result = await call(ctx, repo_path, refs.list_stashes)
            return _reply(text, result)

    else:

        @server.tool(title="List or create tags", read_only=False)
        async def git_tag(
            ctx: Context[Any, Any],
            repo_path: RepoArg = None,
            action: Annotated[
                Literal["list", "create"], Field(description="List the tags, or create one.")
            ] = "list",
            name: Annotated[str | None, Field(description="create: the new tag's name.")] = None,
            revision: Annotated[str | None, Field(description="create: what to tag (default HEAD).")] = None,
            message: Annotated[
                str | None,
                Field(description="create: a message makes an annotated tag; without one it is lightweight."),
            ] = None,
            offset: Annotated[int, Field(ge=0, description="list: skip this many tags (paging).")] = 0,
            limit: Annotated[int, Field(ge=1, le=5000, description="list: most tags per reply.")] = 200,
        ) -> Annotated[CallToolResult, TagResult]:
            """Lists tags, or creates one (lightweight, or annotated when a message is given).
            Existing tags are never moved or deleted."""
            if action == "create":
                if not name:
                    raise InvalidInput("action='create' needs the tag's name")
                text, result = await change(ctx, repo_path, refs.create_tag, name, revision, message)
            else:
                text, result = await call(ctx, repo_path, refs.list_tags, offset=offset, limit=limit)
            return _reply(text, result)

        async def stash_dropped(
            ctx: Context[Any, Any], repo_path: str | None, action: str, index: int
        ) -> str | None:
            described: str | None = await call(ctx, repo_path, losses.describe_stash_drop, action, index)
            return described

        @server.tool(title="Stash changes", read_only=False, destructive=True, confirm=stash_dropped)
        async def git_stash(
            ctx: Context[Any, Any],
            consent: Consent,
            repo_path: RepoArg = None,
            action: Annotated[
                Literal["list", "push", "apply", "pop", "drop"],
                Field(
                    description="push: save and remove local changes; apply/pop: restore one; drop: delete."
                ),
            ] = "list",
            message: Annotated[str | None, Field(description="push: a description of the stash.")] = None,
            index: Annotated[
                int, Field(ge=0, description="apply/pop/drop: which stash (0 is the newest).")
            ] = 0,
            include_untracked: Annotated[
                bool, Field(description="push: also stash untracked files.")
            ] = False,
            paths: PathsArg = [],  # noqa: B006
        ) -> Annotated[CallToolResult, StashResult]:
            """Saves local changes away (push) and brings them back (apply, pop), lists stashes, or
            deletes one (drop, which cannot be undone, so the user may first be asked)."""
            if not consent.go_ahead:
                text, result = await call(ctx, repo_path, refs.list_stashes, consent.refusal)
                return _reply(text, result)
            text, result = await change(
                ctx,
                repo_path,
                refs.stash_action,
                action,
                message=message,
                index=index,
                include_untracked=include_untracked,
                paths=paths,
            )
            return _reply(text, result)

    @server.tool(title="List remotes", read_only=True)
    async def git_remote(
        ctx: Context[Any, Any], repo_path: RepoArg = None
    ) -> Annotated[CallToolResult, RemoteResult]:
        """Lists the remotes with their fetch and push URLs (passwords in URLs are hidden)."""
        text, result = await call(ctx, repo_path, refs.list_remotes)
        return _reply(text, result)

    @server.tool(title="Reflog", read_only=True)
    async def git_reflog(
        ctx: Context[Any, Any],
        repo_path: RepoArg = None,
        ref: Annotated[str, Field(description="HEAD or a branch.")] = "HEAD",
        max_count: Annotated[int, Field(ge=1, le=5000, description="Most entries per reply.")] = 30,
        skip: Annotated[int, Field(ge=0, description="Skip this many entries (paging).")] = 0,
    ) -> Annotated[CallToolResult, ReflogResult]:
        """Shows where HEAD (or a branch) has pointed, newest first: the way back to lost commits."""
        text, result = await call(ctx, repo_path, history.reflog, ref, max_count=max_count, skip=skip)
        return _reply(text, result)

    async def discarded(
        ctx: Context[Any, Any], paths: list[str], repo_path: str | None, staged: bool, source: str | None
    ) -> str | None:
        described: str | None = await call(
            ctx, repo_path, losses.describe_restore, paths, staged=staged, source=source
        )
        return described

    @server.tool(
        title="Discard or unstage changes",
        read_only=False,
        destructive=True,
        structured_output=False,
        confirm=discarded,
    )
    async def git_restore(
        ctx: Context[Any, Any],
        paths: Annotated[
            list[str], Field(min_length=1, description="Paths to restore; ['.'] for everything.")
        ],
        consent: Consent,
        repo_path: RepoArg = None,
        staged: Annotated[
            bool,
            Field(
                description="true: unstage only (keep the working tree); false: discard working-tree changes."
            ),
        ] = False,
        source: Annotated[
            str | None, Field(description="Restore from this commit instead of the index/HEAD.")
        ] = None,
    ) -> str:
        """Discards local changes to files (staged=false: the working tree is overwritten, which
        cannot be undone, so the user may first be asked) or unstages them (staged=true).
        Untracked files are not touched."""
        if not consent.go_ahead:
            return consent.refusal
        text: str = await change(
            ctx, repo_path, changes.restore, paths, staged=staged, source=source, report=note_change
        )
        return text

    @server.tool(title="Create a repository", read_only=False, structured_output=False)
    async def git_init(
        ctx: Context[Any, Any],
        path: Annotated[
            str, Field(description="Directory for the new repository, inside an allowed directory.")
        ],
        initial_branch: Annotated[
            str | None, Field(description="Name of the first branch (default: git's).")
        ] = None,
        bare: Annotated[bool, Field(description="Create a bare repository (no working tree).")] = False,
    ) -> str:
        """Creates an empty repository, only inside the directories the operator allowed."""
        target = await off_loop((await scope(ctx)).init_target, path)
        text = await off_loop(changes.init, service.policy, target, initial_branch=initial_branch, bare=bare)
        note_change(action="init", path=str(target), bare=bare)
        await live.changed(list_changed=True)
        return text

    if settings.allow_network:

        @server.tool(
            title="Fetch",
            read_only=False,
            open_world=True,
            idempotent=True,
            structured_output=False,
            task_support="optional",
        )
        async def git_fetch(
            ctx: Context[Any, Any],
            repo_path: RepoArg = None,
            remote: Annotated[str, Field(description="A configured remote's name, or a URL.")] = "origin",
            branch: Annotated[str | None, Field(description="Only this branch (default: all).")] = None,
            prune: Annotated[
                bool, Field(description="Remove remote-tracking branches deleted on the remote.")
            ] = False,
        ) -> str:
            """Downloads commits and refs from a remote (updates remote-tracking branches only)."""
            current = await scope(ctx)
            text: str = await change(
                ctx, repo_path, network.fetch, service.areas(current), remote, branch, prune
            )
            return text

        @server.tool(
            title="Pull", read_only=False, open_world=True, structured_output=False, task_support="optional"
        )
        async def git_pull(
            ctx: Context[Any, Any],
            repo_path: RepoArg = None,
            remote: Annotated[str, Field(description="A configured remote's name, or a URL.")] = "origin",
            branch: Annotated[
                str | None, Field(description="The remote branch (default: the upstream).")
            ] = None,
            ff_only: Annotated[
                bool, Field(description="Only fast-forward (default); false allows a merge commit.")
            ] = True,
        ) -> str:
            """Fetches and integrates a remote branch into the current one: fast-forward only
            unless ff_only=false."""
            current = await scope(ctx)
            text: str = await change(
                ctx,
                repo_path,
                network.pull,
                service.areas(current),
                remote,
                branch,
                ff_only,
            )
            return text

        async def overwritten(
            ctx: Context[Any, Any],
            repo_path: str | None,
            remote: str,
            branch: str | None,
            force_with_lease: bool,
        ) -> str | None:
            described: str | None = await call(
                ctx, repo_path, losses.describe_force_push, remote, branch, force_with_lease=force_with_lease
            )
            return described

        @server.tool(
            title="Push",
            read_only=False,
            open_world=True,
            structured_output=False,
            task_support="optional",
            confirm=overwritten,
        )
        async def git_push(
            ctx: Context[Any, Any],
            consent: Consent,
            repo_path: RepoArg = None,
            remote: Annotated[str, Field(description="A configured remote's name, or a URL.")] = "origin",
            branch: Annotated[
                str | None, Field(description="The local branch to push (default: the current one).")
            ] = None,
            set_upstream: Annotated[bool, Field(description="Make the pushed branch the upstream.")] = False,
            force_with_lease: Annotated[
                bool,
                Field(
                    description="Overwrite the remote branch if it is as we last saw it (never plain force)."
                ),
            ] = False,
            follow_tags: Annotated[
                bool, Field(description="Also push annotated tags on the pushed commits.")
            ] = False,
        ) -> str:
            """Uploads a local branch to a remote. Never forces, unless force_with_lease is asked
            (then the user may first be asked, with the remote commits that would be lost named)."""
            if not consent.go_ahead:
                return consent.refusal
            current = await scope(ctx)
            text: str = await change(
                ctx,
                repo_path,
                network.push,
                service.areas(current),
                remote,
                branch,
                set_upstream=set_upstream,
                force_with_lease=force_with_lease,
                tags=follow_tags,
                report=note_change,
            )
            return text

    # -- resources -----------------------------------------------------------------------------
    # Reads go through read_git_resource below (it knows each resource's MIME type and the
    # client's scope); these templates are what resources/templates/list shows and completes.
    async def read_configured(uri: str) -> str | bytes:
        content, _ = await off_loop(service.read_resource, service.scope, uri)
        return content

    @server.resource(
        "git://{repo}/status",
        name="status",
        title="Repository status",
        description="The working tree's status (subscribe: live).",
    )
    async def status_resource(repo: str) -> str | bytes:
        return await read_configured(f"git://{repo}/status")

    @server.resource(
        "git://{repo}/log",
        name="log",
        title="Commit log",
        description="The latest commits on HEAD (subscribe: live).",
    )
    async def log_resource(repo: str) -> str | bytes:
        return await read_configured(f"git://{repo}/log")

    @server.resource(
        "git://{repo}/branches",
        name="branches",
        title="Branches",
        description="Local and remote-tracking branches (subscribe: live).",
    )
    async def branches_resource(repo: str) -> str | bytes:
        return await read_configured(f"git://{repo}/branches")

    @server.resource(
        "git://{repo}/tags", name="tags", title="Tags", description="The tags (subscribe: live)."
    )
    async def tags_resource(repo: str) -> str | bytes:
        return await read_configured(f"git://{repo}/tags")

    @server.resource(
        "git://{repo}/commit/{revision}",
        name="commit",
        title="Commit",
        mime_type="text/x-diff",
        description="A commit as git show prints it (first page).",
    )
    async def commit_resource(repo: str, revision: str) -> str | bytes:
        return await read_configured(f"git://{repo}/commit/{revision}")

    @server.resource(
        "git://{repo}/blob/{revision}/{+path}",
        name="blob",
        title="File at a revision",
        mime_type="application/octet-stream",
        description="A file's content at a revision.",
    )
    async def blob_resource(repo: str, revision: str, path: str) -> str | bytes:
        return await read_configured(f"git://{repo}/blob/{revision}/{path}")

    async def read_git_resource(session: Any, uri: str) -> tuple[str | bytes, str]:
        result: tuple[str | bytes, str] = await off_loop(
            service.read_resource, await roots.effective(session), uri
        )
        return result

    server.read_resources_with(
        "git://",
        read_git_resource,
        paging="use the tools (git_show, git_log, git_diff) with their paging arguments",
    )
    # How long a 2026-07-28 client may reuse a read (private: each caller sees its own scope).
    # The status changes with every edit; refs change on commits, branches and fetches (minutes,
    # and subscribers hear of each at once); a full commit id names content that never changes.
    minutes = CacheHint(ttl_ms=10_000, scope="private")
    server.cache(r"git://[^/]+/status", CacheHint(ttl_ms=0, scope="private"))
    server.cache(r"git://[^/]+/(log|branches|tags)", minutes)
    server.cache(
        r"git://[^/]+/(commit|blob)/[0-9a-f]{40}(/.*)?", CacheHint(ttl_ms=3_600_000, scope="private")
    )
    server.cache(r"git://[^/]+/(commit|blob)/.*", minutes)

    async def list_git_resources(session: Any, cursor: str | None) -> tuple[list[Resource], str | None]:
        page, next_cursor = await off_loop(service.resource_page, await roots.effective(session), cursor)
        mime = {"commit": "text/x-diff"}
        listed = [
            Resource(
                uri=uri, name=name, title=title, mime_type=mime.get(uri.rsplit("/", 2)[-2], "text/plain")
            )
            for uri, name, title in page
        ]
        return listed, next_cursor

    # The repositories and their refs: they change in minutes, not seconds.
    server.list_resources_with(list_git_resources, cache=minutes)

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any, session: Any = None) -> Completion | None:
        if isinstance(ref, (ResourceTemplateReference, PromptReference)):
            known = dict(getattr(context, "arguments", None) or {})
            current = await roots.effective(session)
            values = await off_loop(service.complete, current, argument.name, argument.value, known)
            return Completion(values=values, has_more=len(values) >= resources.MAX_COMPLETIONS)
        return None

    # -- prompts -------------------------------------------------------------------------------
    @server.prompt(name="commit_message", title="Write a commit message")
    async def commit_message(ctx: Context[Any, Any], repo: str | None = None) -> str:
        """A commit message for the staged changes of a repository."""
        text: str = await call(ctx, repo, prompts.commit_message_prompt)
        return text

    @server.prompt(name="review_diff", title="Review changes")
    async def review_diff(ctx: Context[Any, Any], repo: str | None = None, target: str | None = None) -> str:
        """A code review of the uncommitted changes, or of the diff against a target (a branch,
        commit or range A..B)."""
        text: str = await call(ctx, repo, prompts.review_prompt, target)
        return text

    return server
