"""mcp-filesystem: registers tools, resources and completions; the work is in the domain modules.

Tool names and argument names are the reference server's (@modelcontextprotocol/server-filesystem),
so prompts written for it keep working; copy_file, delete_path and grep are ours.
"""

from __future__ import annotations

import base64
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import (
    AudioContent,
    Completion,
    ImageContent,
    Resource,
    ResourceTemplateReference,
)
from mcp_batteries.app import BatteriesServer
from mcp_batteries.live import LiveResources
from mcp_batteries.paths import AllowedDirectories, file_uri_to_path, resolve_path
from mcp_batteries.progress import in_thread, progress_reporter
from mcp_batteries.roots import RootsTracker
from pydantic import BaseModel, Field

from mcp_filesystem import catalog, editing, grep, reading, walking, writing
from mcp_filesystem.config import FilesystemSettings
from mcp_filesystem.info import get_file_info as file_info
from mcp_filesystem.info import guess_mime_type
from mcp_filesystem.live import LiveFiles, path_to_uri

INSTRUCTIONS = """Files inside the operator's allowed directories (call list_allowed_directories first).
Paths may be absolute or relative to the first allowed directory. Reads are paged: when a result
says it was truncated, call again with the offset it names. Files are also resources
(file:///...) that clients can subscribe to for live change notifications."""

PathArg = Annotated[
    str, Field(description="File or directory path: absolute, or relative to the first allowed directory.")
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
    allowed = AllowedDirectories(settings.directories)

    async def check_subscription(session: Any, uri: str) -> None:
        # The client's own scope: a client whose roots narrow access cannot watch beyond them.
        resolve_path(file_uri_to_path(uri), await roots.effective(session), must_exist=False)

    server = BatteriesServer(
        settings,
        title="Filesystem",
        instructions=INSTRUCTIONS,
        subscriptions=check_subscription,
    )

    async def roots_changed(connection: Any) -> None:
        await server.notify_resources_list_changed(connection)

    roots = RootsTracker(allowed, lambda configured, paths: configured.narrowed(paths), roots_changed)
    roots.install(server)

    LiveResources(server, LiveFiles(allowed, max_tree_dirs=settings.watch_max_dirs), watch=settings.watch)

    async def scope(ctx: Context[Any, Any]) -> AllowedDirectories:
        return await roots.effective(ctx.session)

    # -- reading ---------------------------------------------------------------------------
    @server.tool(title="Read text file", read_only=True, structured_output=False)
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
        """Read a text file as UTF-8. Big files come back one page at a time: the reply says which
        lines it holds and the `offset` to pass for the next page. Use head/tail for the start or
        end, offset/limit for any slice. Binary files are refused: use read_media_file for images
        and audio."""
        result = await in_thread(reading.read_text_file, await scope(ctx), path, head, tail, offset, limit)
        return result.render()

    @server.tool(title="Read file (deprecated)", read_only=True, structured_output=False)
    async def read_file(
        path: PathArg,
        ctx: Context[Any, Any],
        head: Annotated[int | None, Field(ge=1, description="Only the first N lines.")] = None,
        tail: Annotated[int | None, Field(ge=1, description="Only the last N lines.")] = None,
    ) -> str:
        """Deprecated alias of read_text_file, kept for prompts written for the reference server."""
        result = await in_thread(reading.read_text_file, await scope(ctx), path, head, tail, None, None)
        return result.render()

    @server.tool(title="Read image or audio file", read_only=True, structured_output=False)
    async def read_media_file(path: PathArg, ctx: Context[Any, Any]) -> ImageContent | AudioContent:
        """Read an image (png, jpeg, gif, webp, ...) or audio file (mp3, wav, ogg, flac, ...) and
        return it as image/audio content with its MIME type. Size-capped; text files: use
        read_text_file."""
        media = await in_thread(reading.read_media_file, await scope(ctx), path)
        data = base64.b64encode(media.data).decode()
        if media.mime_type.startswith("audio/"):
            return AudioContent(type="audio", data=data, mime_type=media.mime_type)
        return ImageContent(type="image", data=data, mime_type=media.mime_type)

    @server.tool(title="Read several files", read_only=True, structured_output=False)
    async def read_multiple_files(
        paths: Annotated[list[str], Field(min_length=1, description="Paths of the files to read.")],
        ctx: Context[Any, Any],
    ) -> str:
        """Read several text files in one call. A file that fails is reported with its error and
        the others are still returned. Output is capped per file and in total; page a big file
        with read_text_file."""
        result = await in_thread(reading.read_multiple_files, await scope(ctx), paths)
        parts = [
            f"{r.path}:\n{r.text}" if r.error is None else f"{r.path}: Error - {r.error}"
            for r in result.results
        ]
        if result.notice:
            parts.append(result.notice)
        return "\n---\n".join(parts)

    # -- writing ---------------------------------------------------------------------------
    @server.tool(
        title="Write file", read_only=False, destructive=True, idempotent=True, structured_output=False
    )
    async def write_file(
        path: PathArg,
        content: Annotated[str, Field(description="The complete new content of the file (UTF-8).")],
        ctx: Context[Any, Any],
    ) -> str:
        """Create a file or replace its whole content, atomically (a reader never sees half a
        file). To change part of a file, use edit_file instead."""
        written = await in_thread(writing.write_file, await scope(ctx), path, content)
        return f"Successfully wrote {written} bytes to {path}"

    @server.tool(title="Edit file", read_only=False, destructive=True, structured_output=False)
    async def edit_file(
        path: PathArg,
        edits: Annotated[list[Edit], Field(min_length=1, description="Replacements, applied in order.")],
        ctx: Context[Any, Any],
        dryRun: Annotated[bool, Field(description="Only show the diff; change nothing.")] = False,
    ) -> str:
        """Replace text in a file and show the unified diff. Each oldText must match exactly once
        (add surrounding lines to make it unique, or set replaceAll); whitespace-only differences
        are tolerated and indentation is preserved. Use dryRun to preview."""
        allowed = await scope(ctx)
        real = resolve_path(path, allowed)
        plain = [e.model_dump() for e in edits]
        return await in_thread(editing.edit_file_in, allowed, real, plain, dryRun)

    @server.tool(title="Create directory", read_only=False, idempotent=True, structured_output=False)
    async def create_directory(path: PathArg, ctx: Context[Any, Any]) -> str:
        """Create a directory, with any missing parents; succeeds if it already exists."""
        await in_thread(writing.create_directory, await scope(ctx), path)
        return f"Successfully created directory {path}"

    @server.tool(title="Move or rename", read_only=False, destructive=True, structured_output=False)
    async def move_file(
        source: Annotated[str, Field(description="Existing file or directory.")],
        destination: Annotated[str, Field(description="New path; must not exist yet.")],
        ctx: Context[Any, Any],
    ) -> str:
        """Move or rename a file or directory. Fails if the destination exists."""
        await in_thread(writing.move_file, await scope(ctx), source, destination)
        return f"Successfully moved {source} to {destination}"

    @server.tool(title="Copy", read_only=False, structured_output=False)
    async def copy_file(
        source: Annotated[str, Field(description="Existing file or directory.")],
        destination: Annotated[str, Field(description="Path of the copy.")],
        ctx: Context[Any, Any],
        overwrite: Annotated[bool, Field(description="Replace an existing destination file.")] = False,
        recursive: Annotated[
            bool, Field(description="Required to copy a directory and its contents.")
        ] = False,
    ) -> str:
        """Copy a file (or, with recursive=true, a directory tree). Symbolic links are copied as
        links, never followed."""
        copied = await in_thread(
            writing.copy_file, await scope(ctx), source, destination, overwrite, recursive
        )
        summary = (
            f"Copied {source} to {destination}: {copied.files} file(s), "
            f"{copied.directories} directories, {copied.bytes} bytes"
        )
        if copied.skipped:
            summary += "\nSkipped (symbolic links and special files are not copied): " + ", ".join(
                copied.skipped
            )
        return summary

    @server.tool(title="Delete", read_only=False, destructive=True, idempotent=True, structured_output=False)
    async def delete_path(
        path: PathArg,
        ctx: Context[Any, Any],
        recursive: Annotated[bool, Field(description="Required to delete a non-empty directory.")] = False,
    ) -> str:
        """Delete a file, a symbolic link (never its target) or an empty directory; a non-empty
        directory only with recursive=true. There is no undo."""
        kind = await in_thread(writing.delete_path, await scope(ctx), path, recursive)
        return f"Deleted {kind} {path}"

    # -- looking around ---------------------------------------------------------------------
    @server.tool(title="List directory", read_only=True, structured_output=False)
    async def list_directory(path: PathArg, ctx: Context[Any, Any]) -> str:
        """List a directory's entries as [FILE], [DIR] or [LINK] lines, sorted by name."""
        real = resolve_path(path, await scope(ctx))
        return (await in_thread(walking.list_directory, real)).text

    @server.tool(title="List directory with sizes", read_only=True, structured_output=False)
    async def list_directory_with_sizes(
        path: PathArg,
        ctx: Context[Any, Any],
        sortBy: Annotated[
            Literal["name", "size"], Field(description="Sort entries by name or by size.")
        ] = "name",
    ) -> str:
        """List a directory with file sizes and a total. Symbolic links are not followed."""
        real = resolve_path(path, await scope(ctx))
        return (await in_thread(walking.list_directory_with_sizes, real, sortBy)).text

    @server.tool(title="Directory tree", read_only=True, structured_output=False)
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
        real = resolve_path(path, await scope(ctx))
        report = progress_reporter(ctx.report_progress)
        result = await in_thread(
            walking.directory_tree, real, excludePatterns, max_depth, respect_gitignore, progress=report
        )
        return result.text

    @server.tool(title="Search file names", read_only=True, structured_output=False)
    async def search_files(
        path: PathArg,
        pattern: Annotated[
            str, Field(description="Glob over relative paths, e.g. '**/*.py'; plain text matches names.")
        ],
        ctx: Context[Any, Any],
        excludePatterns: ExcludeArg = [],  # noqa: B006
    ) -> str:
        """Find files and directories under `path` whose relative path matches a glob ('**/*.ts',
        'src/**/test_*.py'); a pattern without glob characters matches names case-insensitively.
        Results are capped. To search inside files, use grep."""
        real = resolve_path(path, await scope(ctx))
        report = progress_reporter(ctx.report_progress)
        result = await in_thread(walking.search_files, real, pattern, excludePatterns, progress=report)
        return result.text

    @server.tool(title="Search file contents", read_only=True, structured_output=False, name="grep")
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
    ) -> str:
        """Search file contents under `path` and report `file:line:text` for each match, like
        grep. Skips binary and very large files and does not follow symbolic links."""
        real = resolve_path(path, await scope(ctx))
        result = await in_thread(
            grep.grep,
            real,
            pattern,
            is_regex=is_regex,
            case_sensitive=case_sensitive,
            include=include,
            excludePatterns=excludePatterns,
            context_lines=context_lines,
            max_matches=max_matches,
        )
        return result.text

    @server.tool(title="File information", read_only=True, structured_output=False)
    async def get_file_info(path: PathArg, ctx: Context[Any, Any]) -> str:
        """Size, times, type, permissions and MIME type of a file or directory (links not followed)."""
        return (await in_thread(file_info, await scope(ctx), path)).format()

    @server.tool(title="List allowed directories", read_only=True, structured_output=False)
    async def list_allowed_directories(ctx: Context[Any, Any]) -> str:
        """The directories this server may access. Call this first to learn where you can work."""
        current = await scope(ctx)
        if not current.roots:
            return "No directories are allowed for this client (its roots do not overlap the server's)."
        return "Allowed directories:\n" + "\n".join(str(r) for r in current.roots)

    # -- resources -------------------------------------------------------------------------
    @server.resource(
        "file:///{+path}",
        name="file",
        title="File",
        description="Any file inside the allowed directories; subscribe to hear when it changes.",
    )
    async def file_resource(path: str) -> str | bytes:
        # Reads are served by read_file_resource below (it knows each file's MIME type); this
        # template is what resources/templates/list shows and what completion refers to.
        content, _mime = await in_thread(catalog.read_resource, allowed, "/" + path)
        return content

    async def read_file_resource(session: Any, uri: str) -> tuple[str | bytes, str]:
        return await in_thread(catalog.read_resource, await roots.effective(session), file_uri_to_path(uri))

    server.read_resources_with("file://", read_file_resource)

    async def list_files(session: Any, cursor: str | None) -> tuple[list[Resource], str | None]:
        current = await roots.effective(session)
        page, next_cursor = await in_thread(catalog.list_page, current, cursor)
        resources = [
            Resource(
                uri=path_to_uri(f.path),
                name=f.path.name,
                title=str(f.path),
                size=f.size,
                mime_type=guess_mime_type(f.path),
            )
            for f in page
        ]
        return resources, next_cursor

    server.list_resources_with(list_files)

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> Completion | None:
        if isinstance(ref, ResourceTemplateReference) and argument.name == "path":
            values = await in_thread(catalog.complete_path, allowed, argument.value)
            return Completion(values=values, has_more=len(values) >= catalog.MAX_COMPLETIONS)
        return None

    return server
