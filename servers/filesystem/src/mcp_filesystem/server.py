"""mcp-filesystem: registers tools, resources and completions; the work is in the domain modules.

Tool names and argument names are the reference server's (@modelcontextprotocol/server-filesystem),
so prompts written for it keep working; copy_file, delete_path and grep are ours.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import AudioContent, Completion, ImageContent, Resource, ResourceTemplateReference
from mcp_batteries.live import LiveResources, RootsTracker
from mcp_batteries.platform import weaker_guarantee
from mcp_batteries.safety import AllowedDirectories, current_directory_scope
from mcp_batteries.server import BatteriesServer, CacheHint, Consent, current_caller, note_change
from mcp_batteries.work import in_thread
from pydantic import BaseModel, Field

from mcp_filesystem import catalog, tools
from mcp_filesystem.calls import Calls
from mcp_filesystem.config import FilesystemSettings
from mcp_filesystem.live import LiveFiles
from mcp_filesystem.losses import ReadLedger

INSTRUCTIONS = """Files inside the operator's allowed directories (call list_allowed_directories first).
Paths may be absolute or relative to the first allowed directory. Reads are paged: when a result
says it was truncated, call again with the offset it names. Names that are not plain text (bytes
that are not UTF-8, control characters) are shown git-style quoted, e.g. "bad\\377name.txt";
pass them back exactly in that form. Files are also resources (file:///...) that clients can
subscribe to for live change notifications."""

PathArg = Annotated[
    str,
    Field(
        description="File or directory path: absolute, or relative to the first allowed directory. "
        'Names shown quoted (e.g. "bad\\377.txt") are passed back in that quoted form.'
    ),
]
OffsetArg = Annotated[
    int, Field(ge=0, description="Entries to skip: pass the offset a previous page names to get the next.")
]
ExcludeArg = Annotated[
    list[str],
    Field(
        description=(
            "Glob patterns to skip, matched against paths relative to `path` "
            "(e.g. 'node_modules', '**/*.log')."
        )
    ),
]


class Edit(BaseModel):
    oldText: str = Field(
        description="Text to find: exact first, then ignoring indentation/whitespace differences."
    )
    newText: str = Field(description="Replacement text; indentation is adapted to the matched block.")
    replaceAll: bool = Field(
        False, description="Replace every occurrence instead of requiring a unique match."
    )


def build_server(settings: FilesystemSettings) -> BatteriesServer:
    # No directory: the current one, unless a client or service manager chose a wide one
    # (mcp_batteries.safety.current_directory_scope).
    allowed = AllowedDirectories(
        settings.directories or [current_directory_scope("mcp-batteries-filesystem")]
    )

    live_files = LiveFiles(allowed, max_tree_dirs=settings.watch_max_dirs)

    async def check_subscription(session: Any, uri: str) -> None:
        # The client's own scope: a client whose roots narrow access cannot watch beyond them.
        live_files.checked(uri, await calls.inline_for_session(session, tools.check_subscription, uri))

    server = BatteriesServer(
        settings,
        title="Filesystem",
        # Where the portable platform family runs (Windows), say what it guarantees less.
        instructions=" ".join(filter(None, [INSTRUCTIONS, weaker_guarantee()])),
        subscriptions=check_subscription,
    )

    async def roots_changed(connection: Any) -> None:
        await server.notify_resources_list_changed(connection)

    roots = RootsTracker(allowed, lambda configured, paths: configured.narrowed(paths), roots_changed)
    roots.install(server)
    calls = Calls(roots, tidy=not settings.read_only)

    live = LiveResources(server, live_files, watch=settings.watch)

    async def wrote(*paths: str, listing: bool = False) -> None:
        """With watching off (`watch = false`: a network volume, replicas sharing one), this
        server reports its own writes, so subscribers (of every replica, with a change bus) still
        hear of them; with watching on, the watcher reports them (and writes made by others)."""
        if not settings.watch:
            await live.changed(await in_thread(live_files.uris_of, paths), list_changed=listing)

    # Which version of which file each caller has read: write_file asks before replacing any
    # other (docs/confirmation.md).
    ledger = ReadLedger()

    def caller_key() -> str:
        caller = current_caller()
        return f"{caller.source}:{caller.subject}"

    async def seen(ctx: Context[Any, Any], *paths: str) -> None:
        await calls.quick(ctx, tools.note_seen, ledger, caller_key(), paths)

    # -- reading ---------------------------------------------------------------------------
    @server.tool(
        title="Read text file",
        read_only=True,
        structured_output=False,
        paging="call it again with offset (the first line to show, from 1) and limit (lines)",
    )
    async def read_text_file(
        path: PathArg,
        ctx: Context[Any, Any],
        head: Annotated[int | None, Field(ge=1, description="Only the first N lines.")] = None,
        tail: Annotated[
            int | None, Field(ge=1, description="Only the last N lines (fast on huge files).")
        ] = None,
        offset: Annotated[
            int | None, Field(ge=1, description="First line to return (1-based), for paging.")
        ] = None,
        limit: Annotated[
            int | None, Field(ge=1, description="How many lines to return from `offset`.")
        ] = None,
    ) -> str:
        """Read a text file. Big files come back one page at a time: the reply says which lines
        it holds and the `offset` to pass for the next page. Use head/tail for the start or end,
        offset/limit for any slice. A file that is not UTF-8 is shown decoded as windows-1252
        (nothing replaced; the reply says so). Binary files are refused: use read_media_file for
        images and audio."""
        text = await calls.quick(ctx, tools.read_text_file, path, head, tail, offset, limit)
        await seen(ctx, path)
        return text

    @server.tool(title="Read file (deprecated)", read_only=True, structured_output=False)
    async def read_file(
        path: PathArg,
        ctx: Context[Any, Any],
        head: Annotated[int | None, Field(ge=1, description="Only the first N lines.")] = None,
        tail: Annotated[int | None, Field(ge=1, description="Only the last N lines.")] = None,
    ) -> str:
        """Deprecated alias of read_text_file, kept for prompts written for the reference server."""
        text = await calls.quick(ctx, tools.read_text_file, path, head, tail, None, None)
        await seen(ctx, path)
        return text

    @server.tool(title="Read image or audio file", read_only=True, structured_output=False)
    async def read_media_file(path: PathArg, ctx: Context[Any, Any]) -> ImageContent | AudioContent:
        """Read an image (png, jpeg, gif, webp, ...) or audio file (mp3, wav, ogg, flac, ...) and
        return it as image/audio content with its MIME type. Size-capped; text files: use
        read_text_file."""
        media = await calls.quick(ctx, tools.read_media_file, path)
        if media.kind == "audio":
            return AudioContent(type="audio", data=media.data, mime_type=media.mime_type)
        return ImageContent(type="image", data=media.data, mime_type=media.mime_type)

    @server.tool(
        title="Read several files",
        read_only=True,
        structured_output=False,
        paging="read fewer files at once, or each with read_text_file and offset/limit",
    )
    async def read_multiple_files(
        paths: Annotated[list[str], Field(min_length=1, description="Paths of the files to read.")],
        ctx: Context[Any, Any],
    ) -> str:
        """Read several text files in one call. A file that fails is reported with its error and
        the others are still returned. Output is capped per file and in total; page a big file
        with read_text_file."""
        text = await calls.quick(ctx, tools.read_multiple_files, paths)
        await seen(ctx, *paths)
        return text

    # -- writing ---------------------------------------------------------------------------
    async def overwrite(path: str, content: str, ctx: Context[Any, Any]) -> str | None:
        return await calls.quick(ctx, tools.describe_overwrite, path, content, ledger, caller_key())

    @server.tool(
        title="Write file",
        read_only=False,
        destructive=True,
        idempotent=True,
        structured_output=False,
        confirm=overwrite,
    )
    async def write_file(
        path: PathArg,
        content: Annotated[str, Field(description="The complete new content of the file (UTF-8).")],
        ctx: Context[Any, Any],
        consent: Consent,
    ) -> str:
        """Create a file or replace its whole content, atomically (a reader never sees half a
        file), as UTF-8. To change part of a file, use edit_file instead (it keeps the file's
        encoding). Replacing a file this client has not read may first ask the user."""
        if not consent.go_ahead:
            return consent.refusal
        reply = await calls.quick(ctx, tools.write_file, path, content)
        note_change(action="write", path=path)
        await seen(ctx, path)
        await wrote(path, listing=True)
        return reply

    @server.tool(title="Edit file", read_only=False, destructive=True, structured_output=False)
    async def edit_file(
        path: PathArg,
        edits: Annotated[list[Edit], Field(min_length=1, description="Replacements, applied in order.")],
        ctx: Context[Any, Any],
        dryRun: Annotated[bool, Field(description="Only show the diff; change nothing.")] = False,
    ) -> str:
        """Replace text in a file and show the unified diff. Each oldText must match exactly once
        (add surrounding lines to make it unique, or set replaceAll); whitespace-only differences
        are tolerated and indentation is preserved. Use dryRun to preview. A file that is not
        UTF-8 is edited as windows-1252 and written back in it, keeping every other byte."""
        reply = await calls.quick(ctx, tools.edit_file, path, [e.model_dump() for e in edits], dryRun)
        await seen(ctx, path)
        if not dryRun:
            note_change(action="edit", path=path)
            await wrote(path)
        return reply

    @server.tool(title="Create directory", read_only=False, idempotent=True, structured_output=False)
    async def create_directory(path: PathArg, ctx: Context[Any, Any]) -> str:
        """Create a directory, with any missing parents; succeeds if it already exists."""
        reply = await calls.quick(ctx, tools.create_directory, path)
        note_change(action="create_directory", path=path)
        await wrote(path, listing=True)
        return reply

    @server.tool(title="Move or rename", read_only=False, destructive=True, structured_output=False)
    async def move_file(
        source: Annotated[str, Field(description="Existing file or directory.")],
        destination: Annotated[str, Field(description="New path; must not exist yet.")],
        ctx: Context[Any, Any],
    ) -> str:
        """Move or rename a file or directory. Fails if the destination exists."""
        reply = await calls.quick(ctx, tools.move_file, source, destination)
        note_change(action="move", path=source, to=destination)
        await wrote(source, destination, listing=True)
        return reply

    async def replaced(
        source: str, destination: str, overwrite: bool, recursive: bool, ctx: Context[Any, Any]
    ) -> str | None:
        return await calls.quick(
            ctx,
            tools.describe_copy_overwrite,
            source,
            destination,
            overwrite,
            recursive,
            ledger,
            caller_key(),
        )

    @server.tool(title="Copy", read_only=False, destructive=True, structured_output=False, confirm=replaced)
    async def copy_file(
        source: Annotated[str, Field(description="Existing file or directory.")],
        destination: Annotated[str, Field(description="Path of the copy.")],
        ctx: Context[Any, Any],
        consent: Consent,
        overwrite: Annotated[bool, Field(description="Replace an existing destination file.")] = False,
        recursive: Annotated[
            bool, Field(description="Required to copy a directory and its contents.")
        ] = False,
    ) -> str:
        """Copy a file (or, with recursive=true, a directory tree). Symbolic links are copied as
        links, never followed. Replacing existing files (overwrite=true) may first ask the user."""
        if not consent.go_ahead:
            return consent.refusal
        reply = await calls.quick(ctx, tools.copy_file, source, destination, overwrite, recursive)
        note_change(action="copy", path=source, to=destination)
        await wrote(destination, listing=True)
        return reply

    async def deletion(path: str, recursive: bool, ctx: Context[Any, Any]) -> str | None:
        return await calls.quick(ctx, tools.describe_deletion, path, recursive)

    @server.tool(
        title="Delete",
        read_only=False,
        destructive=True,
        idempotent=True,
        structured_output=False,
        confirm=deletion,
    )
    async def delete_path(
        path: PathArg,
        ctx: Context[Any, Any],
        consent: Consent,
        recursive: Annotated[bool, Field(description="Required to delete a non-empty directory.")] = False,
    ) -> str:
        """Delete a file, a symbolic link (never its target) or an empty directory; a non-empty
        directory only with recursive=true. There is no undo; the user may first be asked to
        confirm, with every file that would be lost named."""
        if not consent.go_ahead:
            return consent.refusal
        reply = await calls.quick(ctx, tools.delete_path, path, recursive)
        note_change(action="delete", path=path)
        await wrote(path, listing=True)
        return reply

    # -- looking around ---------------------------------------------------------------------
    @server.tool(title="List directory", read_only=True, structured_output=False)
    async def list_directory(path: PathArg, ctx: Context[Any, Any], offset: OffsetArg = 0) -> str:
        """List a directory's entries as [FILE], [DIR] or [LINK] lines, sorted by name, 2,000 per
        page (a partial page names the offset of the next). Names that are not plain text are
        shown quoted; pass them back quoted."""
        return await calls.quick(ctx, tools.list_directory, path, offset)

    @server.tool(title="List directory with sizes", read_only=True, structured_output=False)
    async def list_directory_with_sizes(
        path: PathArg,
        ctx: Context[Any, Any],
        sortBy: Annotated[
            Literal["name", "size"], Field(description="Sort entries by name or by size.")
        ] = "name",
        offset: OffsetArg = 0,
    ) -> str:
        """List a directory with file sizes and a total, 2,000 entries per page (the totals count
        every entry). Symbolic links are not followed."""
        return await calls.quick(ctx, tools.list_directory_with_sizes, path, sortBy, offset)

    @server.tool(title="Directory tree", read_only=True, structured_output=False, task_support="optional")
    async def directory_tree(
        path: PathArg,
        ctx: Context[Any, Any],
        excludePatterns: ExcludeArg = [],  # noqa: B006 - the SDK copies defaults per call
        max_depth: Annotated[
            int | None, Field(ge=1, description="Stop descending after this many levels.")
        ] = None,
        respect_gitignore: Annotated[bool, Field(description="Skip what .gitignore files ignore.")] = False,
    ) -> str:
        """A recursive JSON tree of files and directories under `path`. Output is capped; when it
        says it was truncated, narrow it with max_depth, excludePatterns or a deeper path."""
        return await calls.long(
            ctx, tools.directory_tree, path, excludePatterns, max_depth, respect_gitignore
        )

    @server.tool(title="Search file names", read_only=True, structured_output=False, task_support="optional")
    async def search_files(
        path: PathArg,
        pattern: Annotated[
            str, Field(description="Glob over relative paths, e.g. '**/*.py'; plain text matches names.")
        ],
        ctx: Context[Any, Any],
        excludePatterns: ExcludeArg = [],  # noqa: B006
        offset: OffsetArg = 0,
    ) -> str:
        """Find files and directories under `path` whose relative path matches a glob ('**/*.ts',
        'src/**/test_*.py'); a pattern without glob characters matches names case-insensitively.
        1,000 results per page; a partial answer names the offset of the next page. To search
        inside files, use grep."""
        return await calls.long(ctx, tools.search_files, path, pattern, excludePatterns, offset)

    @server.tool(
        title="Search file contents",
        read_only=True,
        structured_output=False,
        name="grep",
        task_support="optional",
    )
    async def grep_tool(
        path: PathArg,
        pattern: Annotated[
            str, Field(description="Text to find, or a Python regular expression if is_regex.")
        ],
        ctx: Context[Any, Any],
        is_regex: Annotated[bool, Field(description="Treat pattern as a regular expression.")] = False,
        case_sensitive: Annotated[bool, Field(description="Match case exactly.")] = False,
        include: Annotated[
            list[str], Field(description="Only files whose name matches one of these globs, e.g. '*.py'.")
        ] = [],  # noqa: B006
        excludePatterns: ExcludeArg = [],  # noqa: B006
        context_lines: Annotated[
            int, Field(ge=0, le=20, description="Lines of context around each match.")
        ] = 0,
        max_matches: Annotated[int, Field(ge=1, le=2000, description="Stop after this many matches.")] = 100,
        offset: OffsetArg = 0,
    ) -> str:
        """Search file contents under `path` and report `file:line:text` for each match, like
        grep. Skips binary and very large files and does not follow symbolic links. When it stops
        at max_matches it names the offset to pass for the next matches. A regular expression
        may run for at most 2 s on one file; a pattern that backtracks catastrophically gets an
        error saying so."""
        return await calls.long(
            ctx,
            tools.grep,
            path,
            pattern,
            is_regex,
            case_sensitive,
            include,
            excludePatterns,
            context_lines,
            max_matches,
            offset,
        )

    @server.tool(title="File information", read_only=True, structured_output=False)
    async def get_file_info(path: PathArg, ctx: Context[Any, Any]) -> str:
        """Size, times, type, permissions and MIME type of a file or directory (links not followed)."""
        return await calls.quick(ctx, tools.get_file_info, path)

    @server.tool(title="List allowed directories", read_only=True, structured_output=False)
    async def list_allowed_directories(ctx: Context[Any, Any]) -> str:
        """The directories this server may access. Call this first to learn where you can work."""
        return await calls.inline(ctx, tools.list_allowed_directories)

    # -- resources -------------------------------------------------------------------------
    @server.resource(
        "file:///{+path}",
        name="file",
        title="File",
        description="Any file inside the allowed directories; subscribe to hear when it changes.",
    )
    async def file_resource(path: str) -> str | bytes:
        # Reads are served by the reader registered below (it knows each file's MIME type and
        # the session's scope); this template is what resources/templates/list shows and what
        # completion refers to.
        content, _mime = await calls.for_session(None, tools.read_resource, "file:///" + path)
        return content

    async def read_file_resource(session: Any, uri: str) -> tuple[str | bytes, str]:
        return await calls.for_session(session, tools.read_resource, uri)

    server.read_resources_with(
        "file://", read_file_resource, paging="read the file with read_text_file and offset/limit"
    )
    # A file can change any second, the model's own edits included: never reuse a read (and a
    # caller's roots decide what it may read, so nothing is shared). The runtime's default, said
    # here because it is a decision about files.
    server.cache(r"file://.*", CacheHint(ttl_ms=0, scope="private"))

    async def list_files(session: Any, cursor: str | None) -> tuple[list[Resource], str | None]:
        page, next_cursor = await calls.for_session(session, tools.list_resources, cursor)
        return [
            Resource(uri=f.uri, name=f.name, title=f.title, size=f.size, mime_type=f.mime_type) for f in page
        ], next_cursor

    server.list_resources_with(list_files)

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any, session: Any) -> Completion | None:
        if isinstance(ref, ResourceTemplateReference) and argument.name == "path":
            # Within the client's own scope: its roots narrow what completion may reveal.
            values = await calls.for_session(session, tools.complete_path, argument.value)
            return Completion(values=values, has_more=len(values) >= catalog.MAX_COMPLETIONS)
        return None

    return server
