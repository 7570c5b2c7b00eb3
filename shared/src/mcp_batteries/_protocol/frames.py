r"""JSON-RPC frames at the edge of every transport: each inbound frame is dispatched or answered,
and each outbound message is encoded or replaced, so no input and no reply can break a connection.

Inbound (`check_frame`, used by the stdio transport for each line and by `FrameGuard` for each
HTTP POST body) a frame is one of:

- a message the SDK can dispatch (`Accepted`);
- an error reply the transport sends itself (`Reply`): `-32700` with id null for text that is not
  JSON (JSON-RPC 2.0 §5.1), `-32600` for JSON that is not one valid request, notification or
  response (a batch gets one such error per element, as an array), `-32602` naming the
  parameter for text that is not valid Unicode (a lone surrogate `"\ud800"`, or bytes that are
  not UTF-8) or for parameters nested deeper than `MAX_DEPTH`;
- a client response we cannot use, turned into an error response for our pending request, so
  the server's own request still gets exactly one outcome.

The SDK's own readers drop such frames silently (stdio) or answer them inconsistently (HTTP), and
its JSON parser refuses lone surrogates and nesting beyond ~200 levels, so a request written that
way was never answered at all.

Outbound (`encode_message`), a message is encoded once; only if that fails (text that is not
valid Unicode, nesting too deep for the encoder) is a replacement built: an error response for
the same request id, naming where the bad value sits; a notification is dropped. Both are logged
on stderr. The cost on the normal path is one `try`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pydantic_core
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)

__all__ = [
    "FRAME_SCOPE_KEY",
    "MAX_DEPTH",
    "Accepted",
    "FrameGuard",
    "Reply",
    "Unsendable",
    "check_frame",
    "encode_message",
    "error_reply",
    "oversized_reply",
    "send_reply",
]

#: Deepest nesting of arrays and objects accepted in one message (the message itself is level
#: 1, `params` 2, `params.arguments` 3). It is the limit of the JSON parser the SDK uses
#: (pydantic-core's jiter, pinned in tests), so a frame that parser accepts needs no walk; only
#: deeper frames, which the SDK's reader dropped silently, are parsed again and answered.
MAX_DEPTH = 201

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: The id at the start of a frame too large to parse (`{"jsonrpc": "2.0", "id": 7, ...`).
_LEADING_ID = re.compile(
    rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")\s*[,}]'
)

_NOT_UNICODE_HINT = (
    "send text as UTF-8; a name that is not valid UTF-8 is shown, and accepted back, "
    'in its C-quoted form, e.g. "bad\\377name.txt"'
)


#: The ASGI scope key under which `FrameGuard` leaves the accepted message for the layers inside.
FRAME_SCOPE_KEY = "mcp_batteries.frame"


@dataclass(frozen=True)
class Accepted:
    """A message for the SDK. `rewritten` when it differs from the frame (a client response we
    turned into an error): an HTTP transport must then forward `encode_message(message)`."""

    message: JSONRPCMessage
    rewritten: bool = False


@dataclass(frozen=True)
class Reply:
    """What to send back instead of dispatching: one JSON text, with the HTTP status for it."""

    body: bytes
    status: int = 400


#: `check_frame`'s verdict: dispatch, answer, or (for an empty line) nothing at all.
Verdict = Accepted | Reply | None


def check_frame(data: bytes) -> Verdict:
    """Decide what one inbound frame (a stdio line or an HTTP POST body) becomes."""
    if not data or data.isspace():
        return None
    try:
        # The fast path, and the SDK's own parser: it refuses lone surrogates, bytes that are
        # not UTF-8, NaN and nesting beyond MAX_DEPTH, so what it accepts needs no more checks.
        decoded = pydantic_core.from_json(data, allow_inf_nan=False)
        suspect = undecodable = False
    except ValueError:
        parsed = _parse_slowly(data)
        if isinstance(parsed, Reply):
            return parsed
        decoded, undecodable = parsed
        suspect = True
    if isinstance(decoded, list):
        return _batch_reply(decoded)
    if not isinstance(decoded, dict):
        return error_reply(
            None, INVALID_REQUEST, f"Invalid Request: expected a JSON object, got {_json_type(decoded)}"
        )
    request_id, id_problem = _request_id(decoded)
    if id_problem is not None:
        return error_reply(None, INVALID_REQUEST, f"Invalid Request: {id_problem}")
    envelope_problem = _envelope_problem(decoded)
    if envelope_problem is not None:
        code, problem_text = envelope_problem
        if _is_response(decoded) and request_id is not None:
            return _unusable_response(request_id, problem_text)
        return error_reply(request_id, code, problem_text)
    if suspect:
        problem = _first_problem(decoded, undecodable)
        if problem is not None:
            return _content_problem_reply(decoded, request_id, problem)
    try:
        message = jsonrpc_message_adapter.validate_python(decoded, by_name=False)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"][1:]) or "message"
        reason = f"Invalid Request: {where}: {first['msg']}"
        if _is_response(decoded) and request_id is not None:
            return _unusable_response(request_id, reason)
        return error_reply(request_id, INVALID_REQUEST, reason)
    return Accepted(message)


def _is_response(frame: dict[str, Any]) -> bool:
    return "method" not in frame and ("result" in frame or "error" in frame)


def error_reply(request_id: Any, code: int, message: str, data: Any = None, status: int = 400) -> Reply:
    """A JSON-RPC error response (`request_id` None is written as `"id": null`)."""
    return Reply(_error_json(request_id, code, message, data), status)


def oversized_reply(head: bytes, size: int, limit: int) -> Reply:
    """The answer to a frame larger than `limit` bytes, read no further than its first bytes.

    JSON-RPC wants id null when the id cannot be determined; here it usually can be, from the
    frame's first bytes, and a client waiting on that id is better told than left waiting.
    """
    found = _LEADING_ID.match(head)
    request_id: int | str | None = None
    if found is not None:
        token = found.group(1).decode("utf-8", "replace")
        request_id = token[1:-1] if token.startswith('"') else int(token)
    return error_reply(
        request_id,
        INVALID_REQUEST,
        f"Invalid Request: the message is {size:,} bytes or more; the limit is {limit:,} bytes. "
        "Send large content in smaller pieces.",
    )


def _error_json(request_id: Any, code: int, message: str, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}, separators=(",", ":")).encode()


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _request_id(frame: dict[str, Any]) -> tuple[int | str | None, str | None]:
    """(the frame's usable id or None, what is wrong with the id it has)."""
    if "id" not in frame:
        return None, None
    value = frame["id"]
    if isinstance(value, str) and not _LONE_SURROGATE.search(value):
        return value, None
    if isinstance(value, int) and not isinstance(value, bool):
        return value, None
    kind = "a string holding a lone surrogate" if isinstance(value, str) else _json_type(value)
    return None, f"id must be a string or an integer, not {kind}"


def _envelope_problem(frame: dict[str, Any]) -> tuple[int, str] | None:
    """What makes `frame` not a request, notification or response, as (code, message)."""
    if frame.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"'
    if "method" in frame:
        method = frame["method"]
        if not isinstance(method, str):
            return INVALID_REQUEST, f"Invalid Request: method must be a string, not {_json_type(method)}"
        if _LONE_SURROGATE.search(method):
            return INVALID_REQUEST, "Invalid Request: method is not valid Unicode text"
        if "params" in frame:
            params = frame["params"]
            if isinstance(params, list):
                return (
                    INVALID_PARAMS,
                    f"Invalid params: params of {method!r} must be an object of named parameters, "
                    "not an array (MCP uses no positional parameters)",
                )
            if not isinstance(params, dict):
                return (
                    INVALID_REQUEST,
                    f"Invalid Request: params of {method!r} must be an object, not {_json_type(params)}",
                )
        return None
    if "result" in frame or "error" in frame:
        if "id" not in frame:
            return INVALID_REQUEST, "Invalid Request: a response needs the id of the request it answers"
        return None
    return INVALID_REQUEST, "Invalid Request: a request needs a method (a string)"


def _batch_reply(batch: list[Any]) -> Reply:
    """MCP has no batches (JSON-RPC batching left the spec in 2025-06-18): one error per element."""
    message = (
        "Invalid Request: batches are not supported; send each request as its own message "
        "(JSON-RPC batching was removed from MCP in 2025-06-18)"
    )
    if not batch:
        return error_reply(None, INVALID_REQUEST, "Invalid Request: an empty batch")
    replies = []
    for element in batch:
        request_id = _request_id(element)[0] if isinstance(element, dict) else None
        if isinstance(element, dict) and "method" in element and "id" not in element:
            continue  # a notification in a batch gets no answer, as JSON-RPC says
        replies.append(_error_json(request_id, INVALID_REQUEST, message))
    if not replies:
        return error_reply(None, INVALID_REQUEST, message)
    return Reply(b"[" + b",".join(replies) + b"]")


def _parse_slowly(data: bytes) -> tuple[Any, bool] | Reply:
    """Parse what the fast parser refused, to answer it precisely: (the JSON, had bad bytes)."""
    try:
        text = data.decode("utf-8")
        undecodable = False
    except UnicodeDecodeError:
        # Keep going so the reply can carry the request's id and name the parameter; the bad
        # bytes become lone surrogates, which `_first_problem` reports.
        text = data.decode("utf-8", "surrogateescape")
        undecodable = True
    try:
        return json.loads(text, parse_constant=_refuse_constant), undecodable
    except RecursionError:
        return error_reply(None, PARSE_ERROR, f"Parse error: the JSON nests deeper than {MAX_DEPTH} levels")
    except ValueError as exc:
        return error_reply(None, PARSE_ERROR, f"Parse error: {_short(str(exc))}")


@dataclass(frozen=True)
class _Problem:
    path: tuple[str | int, ...]
    what: str


def _first_problem(value: Any, undecodable: bool) -> _Problem | None:
    """The first string that is not valid Unicode, or the first place nesting exceeds MAX_DEPTH."""
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 1, ())]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, str):
            found = None if item.isascii() else _LONE_SURROGATE.search(item)
            if found is not None:
                return _Problem(path, _describe_bad_char(found.group(), found.start(), undecodable))
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_DEPTH:
            # Name where the nesting starts (the argument), not the hundred keys down to it.
            return _Problem(path[:3], f"nests deeper than {MAX_DEPTH} levels (the limit for one message)")
        if isinstance(item, dict):
            for key, child in item.items():
                bad_key = _LONE_SURROGATE.search(key)
                if bad_key is not None:
                    what = _describe_bad_char(bad_key.group(), bad_key.start(), undecodable)
                    return _Problem(
                        (*path, "<name>"), f"has a member name that {what.removeprefix('holds ')}"
                    )
                stack.append((child, depth + 1, (*path, key)))
        else:
            stack.extend((child, depth + 1, (*path, index)) for index, child in enumerate(item))
    return None


def _describe_bad_char(char: str, position: int, undecodable: bool) -> str:
    code = ord(char)
    if undecodable and 0xDC80 <= code <= 0xDCFF:
        return f"holds the byte 0x{code - 0xDC00:02x} (at character {position}), which is not UTF-8"
    return (
        f"holds a lone UTF-16 surrogate \\u{code:04x} (at character {position}), which is not valid Unicode"
    )


def _describe_path(frame: dict[str, Any], path: tuple[str | int, ...]) -> tuple[str, dict[str, Any]]:
    """('argument "path" of tool read_text_file', {"argument": "path"}) and the like."""
    method = frame.get("method")
    params = frame.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    shown_name = repr(name) if isinstance(name, str) and not _LONE_SURROGATE.search(name) else None
    if len(path) >= 3 and path[:2] == ("params", "arguments"):
        argument = path[2]
        rest = _dotted(path[3:])
        if method == "tools/call":
            where = f"argument {argument!r}{rest}" + (f" of tool {shown_name}" if shown_name else "")
            return where, {"argument": argument}
        if method == "prompts/get":
            where = f"argument {argument!r}{rest}" + (f" of prompt {shown_name}" if shown_name else "")
            return where, {"argument": argument}
    dotted = _dotted(path[1:]) if path and path[0] == "params" else _dotted(path)
    where = f"parameter {dotted.lstrip('.')!r}" if dotted else "the message"
    return where, {"parameter": dotted.lstrip(".")} if dotted else {}


def _dotted(path: tuple[str | int, ...]) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


def _content_problem_reply(frame: dict[str, Any], request_id: int | str | None, problem: _Problem) -> Verdict:
    where, data = _describe_path(frame, problem.path)
    unicode_problem = "Unicode" in problem.what or "UTF-8" in problem.what
    message = f"Invalid params: {where} {problem.what}"
    if unicode_problem:
        message += f"; {_NOT_UNICODE_HINT}"
    if _is_response(frame):
        # A response from the client (roots, sampling): its waiter gets this error instead.
        return (
            _unusable_response(request_id, f"the client's response {problem.what}")
            if request_id is not None
            else None
        )
    if request_id is None:
        logger.warning("dropped notification %r: %s %s", frame.get("method"), where, problem.what)
        return None
    return error_reply(request_id, INVALID_PARAMS, message, data)


def _unusable_response(request_id: int | str, reason: str) -> Accepted:
    """A client response we cannot read becomes an error for our own pending request."""
    logger.warning("the client's response to request %r was unusable: %s", request_id, reason)
    error = ErrorData(code=INVALID_PARAMS, message=f"unusable response from the client: {reason}")
    return Accepted(JSONRPCError(jsonrpc="2.0", id=request_id, error=error), rewritten=True)


# -- outbound ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unsendable:
    """A request of ours that could not be encoded: its waiter should fail with `error`."""

    request_id: int | str
    error: ErrorData


def encode_message(message: JSONRPCMessage) -> bytes | Unsendable | None:
    """The message as JSON; if it cannot be encoded, what to send instead (logged on stderr).

    - a response or error: an error response for the same id, saying where the bad value is;
    - a notification: None (nothing is sent);
    - a request of ours (roots/list...): `Unsendable`, for the transport to fail its waiter.
    """
    try:
        return message.__pydantic_serializer__.to_json(message, by_alias=True, exclude_unset=True)
    except (ValueError, RecursionError) as exc:  # PydanticSerializationError is a ValueError
        return _replacement(message, exc)


def _replacement(message: JSONRPCMessage, exc: BaseException) -> bytes | Unsendable | None:
    where, what = _locate_unencodable(message)
    detail = f"{where} {what}" if where else what
    if isinstance(message, JSONRPCNotification):
        logger.error("dropped notification %s: it cannot be encoded as JSON (%s)", message.method, detail)
        return None
    if isinstance(message, JSONRPCRequest):
        logger.error("could not send request %s: it cannot be encoded as JSON (%s)", message.method, detail)
        error = ErrorData(code=INTERNAL_ERROR, message=f"the request could not be encoded as JSON ({detail})")
        return Unsendable(message.id, error)
    logger.error(
        "the reply to request %r cannot be encoded as JSON (%s); sent an error instead. "
        "This is a bug in the server: text for a client must be valid Unicode (%s)",
        message.id,
        detail,
        type(exc).__name__,
    )
    text = (
        f"Internal error: the reply could not be encoded as JSON: {detail}. "
        "This is a bug in the server; its log has the details."
    )
    replacement = JSONRPCError(
        jsonrpc="2.0", id=message.id, error=ErrorData(code=INTERNAL_ERROR, message=text)
    )
    return replacement.__pydantic_serializer__.to_json(replacement, by_alias=True, exclude_unset=True)


def _locate_unencodable(message: JSONRPCMessage) -> tuple[str, str]:
    """(where, what): the first value that cannot be encoded, e.g. ('result.content[0].text', ...)."""
    try:
        plain = message.model_dump(mode="python", by_alias=True, exclude_unset=True)
    except Exception:
        return "", "it could not be serialized"
    for path, value in _walk(plain):
        if isinstance(value, str):
            found = _LONE_SURROGATE.search(value)
            if found is not None:
                code = ord(found.group())
                return _dotted(path).lstrip("."), (
                    f"holds a lone surrogate \\u{code:04x} at character {found.start()} "
                    "(text that is not valid Unicode, e.g. a name that is not UTF-8)"
                )
        if len(path) > MAX_DEPTH:
            return _dotted(path).lstrip("."), f"nests deeper than {MAX_DEPTH} levels"
    return "", "it holds a value JSON cannot represent"


def _walk(value: Any) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        yield path, item
        if len(path) > MAX_DEPTH:
            continue
        if isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                if isinstance(key, str) and _LONE_SURROGATE.search(key):
                    yield (*path, "<name>"), key
                stack.append(((*path, str(key)), child))
        elif isinstance(item, list | tuple):
            stack.extend(((*path, index), child) for index, child in reversed(list(enumerate(item))))


# -- HTTP --------------------------------------------------------------------------------------


class FrameGuard:
    """ASGI middleware: each JSON POST body to the MCP endpoint goes through `check_frame` first.

    A frame that is dispatched reaches the SDK unchanged (the body is replayed), so the SDK
    still applies its own checks (sessions, protocol version headers); a frame that is answered
    gets the same reply it would get over stdio. Bodies over `max_body` bytes are passed on
    unread for the SDK to refuse (413).
    """

    def __init__(self, app: ASGIApp, *, path: str, max_body: int) -> None:
        self.app = app
        self.path = path.rstrip("/") or "/"
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._applies(scope):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay(chunks, message, receive), send)
                return
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            more = message.get("more_body", False)
            if size > self.max_body and more:
                await self.app(scope, _replay(chunks, None, receive, more_body=True), send)
                return
        body = b"".join(chunks)
        if size > self.max_body or not body.strip():
            # The SDK refuses these itself (413, parse error), exactly as before.
            await self.app(scope, _replay([body], None, receive), send)
            return
        verdict = check_frame(body)
        if isinstance(verdict, Reply):
            await send_reply(send, verdict)
            return
        if verdict is None:  # a notification we dropped (logged): accepted, as the SDK would
            await send_reply(send, Reply(b"", 202))
            return
        if verdict.rewritten:
            encoded = encode_message(verdict.message)
            body = encoded if isinstance(encoded, bytes) else body
        scope[FRAME_SCOPE_KEY] = verdict.message  # parsed once: what the layers inside may look at
        await self.app(scope, _replay([body], None, receive), send)

    def _applies(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope["method"] != "POST":
            return False
        if (scope.get("path", "").rstrip("/") or "/") != self.path:
            return False
        for name, value in scope.get("headers", ()):
            if name == b"content-type":
                return bool(value.split(b";", 1)[0].strip().lower() == b"application/json")
        return False


def _replay(
    chunks: list[bytes], pending: Message | None, receive: Receive, *, more_body: bool = False
) -> Receive:
    """A `receive` that first returns what was already read, then defers to the real one."""
    queued: list[Message] = [
        {"type": "http.request", "body": chunk, "more_body": more_body or index < len(chunks) - 1}
        for index, chunk in enumerate(chunks)
    ]
    if pending is not None:
        queued.append(pending)

    async def replayed() -> Message:
        if queued:
            return queued.pop(0)
        return await receive()

    return replayed


async def send_reply(send: Send, reply: Reply, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    """Answer an HTTP request with `reply` as the whole response (JSON when it has a body): for
    the middlewares that answer before, or instead of, the SDK's app."""
    head = [(b"content-length", str(len(reply.body)).encode())]
    if reply.body:
        head.append((b"content-type", b"application/json"))
    await send({"type": "http.response.start", "status": reply.status, "headers": [*head, *headers]})
    await send({"type": "http.response.body", "body": reply.body})
