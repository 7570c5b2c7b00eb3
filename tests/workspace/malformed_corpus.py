r"""The malformed-input corpus every server must survive, as data.

`test_malformed_corpus.py` sends each server, over stdio and HTTP and in both protocol eras:

- `FRAMES`: frames that are not one valid message (not JSON, batches, wrong-typed envelope
  members, lone surrogates, nesting deeper than the parser allows, protocol params of the wrong
  shape), each with the answer JSON-RPC asks for;
- `argument_cases(tool)`: for every tool the server lists, arguments of the wrong JSON type for
  each parameter (which must be refused, naming it), lone surrogates and bytes that are not
  UTF-8 in each string parameter, nesting beyond the limit, and oversized strings;
- server-specific state that produces undecodable names (a file name that is not UTF-8, a
  database value that is not UTF-8), reached by the tools with the plausible arguments below.

After each frame the server must still answer a ping, and each request with an id must get
exactly one answer. A new server joins by adding a `Target` to `SERVERS`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcp.types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

Era = Literal["legacy", "modern"]
#: What a frame must get back: an answer to its id, one error with id null, or nothing at all.
Expect = Literal["id", "null", "none"]

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
MODERN_VERSION = "2026-07-28"
ID = b"@ID@"  # replaced by each frame's own request id
UNDECODABLE = "@XFF@"  # replaced by the byte 0xff in the frame that carries it

# -- servers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A server under test: how to start it on scratch state, and plausible argument values."""

    script: str
    #: Builds the scratch state in the directory given and returns the command-line arguments.
    prepare: Callable[[Path], list[str]]
    #: Argument name -> a value that makes sense for this server (the rest are made up by type).
    plausible: dict[str, Any] = field(default_factory=dict)


def _filesystem(scratch: Path) -> list[str]:
    root = scratch / "root"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\nbeta\n")
    (root / "sub" / "b.md").write_text("# b\n")
    # Names that are not clean text: bytes that are not UTF-8, and a control character.
    (root / os.fsdecode(b"bad\xff\xfename.txt")).write_bytes(b"not utf-8 inside: \xff\n")
    (root / "line\nbreak.txt").write_text("x")
    return [str(root)]


def _sql(scratch: Path) -> list[str]:
    database = scratch / "corpus.db"
    with sqlite3.connect(database) as connection:
        connection.execute("create table items (id integer primary key, name text, data blob)")
        connection.execute("insert into items (name, data) values ('plain', x'00ff')")
        # A text value that is not UTF-8, as other programs can store it.
        connection.execute("insert into items (name) values (cast(x'626164ff' as text))")
    return [f"sqlite:///{database}", "--allow-write"]


def _fetch(scratch: Path) -> list[str]:
    return []


def _tasks(scratch: Path) -> list[str]:
    return ["--db", str(scratch / "tasks.db")]


def _git(scratch: Path) -> list[str]:
    repo = scratch / "repo"
    repo.mkdir()
    identity = ["-c", "user.name=Corpus", "-c", "user.email=corpus@example.com"]
    subprocess.run(["git", "init", "--quiet", "--initial-branch=main", str(repo)], check=True)
    (repo / "a.txt").write_text("alpha\nbeta\n")
    # Names that are not clean text: bytes that are not UTF-8, and a control character.
    (repo / os.fsdecode(b"bad\xff\xfename.txt")).write_bytes(b"not utf-8 inside: \xff\n")
    (repo / "line\nbreak.txt").write_text("x")
    subprocess.run(["git", "-C", str(repo), "add", "--all"], check=True)
    subprocess.run(["git", "-C", str(repo), *identity, "commit", "--quiet", "-m", "corpus"], check=True)
    return ["--repository", str(repo), "--author", "Corpus <corpus@example.com>"]


SERVERS: dict[str, Target] = {
    "filesystem": Target(
        "mcp-batteries-filesystem",
        _filesystem,
        {"path": ".", "paths": ["a.txt"], "source": "a.txt", "destination": "moved.txt", "pattern": "a"},
    ),
    "sql": Target(
        "mcp-batteries-sql",
        _sql,
        {"sql": "select * from items", "table": "items", "statements": ["select 1"]},
    ),
    # Nothing listens on port 9 of loopback, and the SSRF policy refuses it first anyway.
    "fetch": Target("mcp-batteries-fetch", _fetch, {"url": "http://127.0.0.1:9/"}),
    "tasks": Target("mcp-batteries-tasks", _tasks),
    "git": Target(
        "mcp-batteries-git",
        _git,
        {
            "files": ["a.txt"],
            "paths": ["a.txt"],
            "path": "a.txt",
            "message": "corpus",
            "target": "HEAD",
            "revision": "HEAD",
            "branch_name": "main",
            "pattern": "a",
        },
    ),
}

# -- frames ----------------------------------------------------------------------------------


def envelope(era: Era) -> dict[str, Any]:
    """The `_meta` a 2026-07-28 request carries (none in the handshake era)."""
    if era == "legacy":
        return {}
    return {"_meta": {PROTOCOL_VERSION_META_KEY: MODERN_VERSION, CLIENT_CAPABILITIES_META_KEY: {}}}


def request(method: Any, params: dict[str, Any] | None, era: Era) -> bytes:
    """A request whose id is `ID`, with the era's envelope merged into `params`."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": "@ID-SLOT@", "method": method}
    if params is not None or era == "modern":
        body["params"] = {**envelope(era), **(params or {})}
    return json.dumps(body).encode().replace(b'"@ID-SLOT@"', ID)


@dataclass(frozen=True)
class Frame:
    name: str
    build: Callable[[Era], bytes]
    expect: Expect
    #: The error code required (None: any answer, result or error).
    code: int | None = None
    #: A response from the client: 2026-07-28 HTTP refuses those (-32600, id null), as its spec says.
    is_response: bool = False


def _raw(data: bytes) -> Callable[[Era], bytes]:
    return lambda era: data


def _req(method: Any, params: dict[str, Any] | None = None) -> Callable[[Era], bytes]:
    return lambda era: request(method, params, era)


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


FRAMES: list[Frame] = [
    Frame("not JSON", _raw(b"hello, server"), "null", PARSE_ERROR),
    Frame(
        "truncated JSON that carries an id",
        _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":"tools/list"'),
        "null",
        PARSE_ERROR,
    ),
    Frame(
        "trailing garbage", _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":"tools/list"} }'), "null", PARSE_ERROR
    ),
    Frame(
        "NaN",
        _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":"tools/list","params":{"cursor":NaN}}'),
        "null",
        PARSE_ERROR,
    ),
    Frame(
        "an integer of 5,000 digits",
        _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":"x","params":{"n":' + b"9" * 5000 + b"}}"),
        "null",
        PARSE_ERROR,
    ),
    Frame(
        "nesting 5,000 deep",
        _raw(f'{{"jsonrpc":"2.0","id":@ID@,"method":"x","params":{{"a":{_deep(5000)}}}}}'.encode()),
        "null",
        PARSE_ERROR,
    ),
    Frame(
        "a byte-order mark",
        _raw(b'\xef\xbb\xbf{"jsonrpc":"2.0","id":@ID@,"method":"tools/list"}'),
        "null",
        PARSE_ERROR,
    ),
    Frame("a number", _raw(b"42"), "null", INVALID_REQUEST),
    Frame("a string", _raw(b'"tools/list"'), "null", INVALID_REQUEST),
    Frame("null", _raw(b"null"), "null", INVALID_REQUEST),
    Frame("an empty object", _raw(b"{}"), "null", INVALID_REQUEST),
    Frame("a batch", _raw(b'[{"jsonrpc":"2.0","id":@ID@,"method":"tools/list"}]'), "id", INVALID_REQUEST),
    Frame("an empty batch", _raw(b"[]"), "null", INVALID_REQUEST),
    Frame(
        "a batch of notifications",
        _raw(b'[{"jsonrpc":"2.0","method":"notifications/x"}]'),
        "null",
        INVALID_REQUEST,
    ),
    Frame("a nested batch", _raw(b"[[],[1]]"), "null", INVALID_REQUEST),
    Frame("method 123", _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":123}'), "id", INVALID_REQUEST),
    Frame("method null", _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":null}'), "id", INVALID_REQUEST),
    Frame("method []", _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":[]}'), "id", INVALID_REQUEST),
    Frame("method {}", _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":{}}'), "id", INVALID_REQUEST),
    Frame("method 123 without id", _raw(b'{"jsonrpc":"2.0","method":123}'), "null", INVALID_REQUEST),
    Frame("id 1.5", _raw(b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}'), "null", INVALID_REQUEST),
    Frame("id true", _raw(b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}'), "null", INVALID_REQUEST),
    Frame("id null", _raw(b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}'), "null", INVALID_REQUEST),
    Frame("id []", _raw(b'{"jsonrpc":"2.0","id":[],"method":"tools/list"}'), "null", INVALID_REQUEST),
    Frame("id {}", _raw(b'{"jsonrpc":"2.0","id":{},"method":"tools/list"}'), "null", INVALID_REQUEST),
    Frame(
        "id with a lone surrogate",
        _raw(b'{"jsonrpc":"2.0","id":"\\udc80","method":"tools/list"}'),
        "null",
        INVALID_REQUEST,
    ),
    Frame("no jsonrpc member", _raw(b'{"id":@ID@,"method":"tools/list"}'), "id", INVALID_REQUEST),
    Frame('jsonrpc "1.0"', _raw(b'{"jsonrpc":"1.0","id":@ID@,"method":"tools/list"}'), "id", INVALID_REQUEST),
    Frame(
        "jsonrpc 2.0 as a number",
        _raw(b'{"jsonrpc":2.0,"id":@ID@,"method":"tools/list"}'),
        "id",
        INVALID_REQUEST,
    ),
    Frame(
        'params "x"',
        _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":"tools/list","params":"x"}'),
        "id",
        INVALID_REQUEST,
    ),
    Frame(
        "params 123",
        _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":"tools/list","params":123}'),
        "id",
        INVALID_REQUEST,
    ),
    Frame(
        "params true",
        _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":"tools/list","params":true}'),
        "id",
        INVALID_REQUEST,
    ),
    Frame(
        "params null",
        _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":"tools/list","params":null}'),
        "id",
        INVALID_REQUEST,
    ),
    Frame(
        "params []",
        _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":"tools/list","params":[]}'),
        "id",
        INVALID_PARAMS,
    ),
    Frame("an id and nothing else", _raw(b'{"jsonrpc":"2.0","id":@ID@}'), "id", INVALID_REQUEST),
    Frame(
        "a method with a lone surrogate",
        _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":"tools/\\ud800"}'),
        "id",
        INVALID_REQUEST,
    ),
    Frame(
        "a method that is not UTF-8",
        _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":"tools/\xff"}'),
        "id",
        INVALID_REQUEST,
    ),
    Frame("an unknown method", _req("no/such/method", {}), "id", METHOD_NOT_FOUND),
    Frame("tools/call without a name", _req("tools/call", {"arguments": {}}), "id", INVALID_PARAMS),
    Frame("tools/call name 123", _req("tools/call", {"name": 123}), "id", INVALID_PARAMS),
    Frame(
        "tools/call arguments as a string",
        _req("tools/call", {"name": "x", "arguments": "{}"}),
        "id",
        INVALID_PARAMS,
    ),
    Frame(
        "tools/call of no such tool",
        _req("tools/call", {"name": "no_such_tool", "arguments": {}}),
        "id",
        INVALID_PARAMS,
    ),
    Frame(
        "tools/call name with a lone surrogate",
        _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":"tools/call","params":{"name":"\\udfff"}}'),
        "id",
        INVALID_PARAMS,
    ),
    Frame(
        "tools/call of a 1 MB name",
        _req("tools/call", {"name": "n" * 1_000_000, "arguments": {}}),
        "id",
        INVALID_PARAMS,
    ),
    Frame("tools/list cursor 5", _req("tools/list", {"cursor": 5}), "id", INVALID_PARAMS),
    Frame("tools/list cursor garbage", _req("tools/list", {"cursor": "\x00garbage"}), "id", None),
    Frame("resources/read without uri", _req("resources/read", {}), "id", INVALID_PARAMS),
    Frame("resources/read uri 5", _req("resources/read", {"uri": 5}), "id", INVALID_PARAMS),
    Frame(
        "resources/read of a made-up uri",
        _req("resources/read", {"uri": "nope://x/../../etc/passwd"}),
        "id",
        None,
    ),
    Frame(
        "resources/read uri with a lone surrogate",
        _raw(b'{"jsonrpc":"2.0","id":@ID@,"method":"resources/read","params":{"uri":"file:///\\ud800"}}'),
        "id",
        INVALID_PARAMS,
    ),
    Frame("resources/list cursor garbage", _req("resources/list", {"cursor": "%%%"}), "id", None),
    Frame("resources/templates/list", _req("resources/templates/list", {}), "id", None),
    Frame(
        "prompts/get of no such prompt", _req("prompts/get", {"name": "no_such_prompt"}), "id", INVALID_PARAMS
    ),
    Frame(
        "prompts/get arguments of numbers",
        _req("prompts/get", {"name": "x", "arguments": {"a": 1}}),
        "id",
        INVALID_PARAMS,
    ),
    Frame(
        "completion/complete garbage",
        _req(
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": 1}},
        ),
        "id",
        INVALID_PARAMS,
    ),
    Frame(
        "completion/complete of nothing",
        _req(
            "completion/complete",
            {"ref": {"type": "ref/resource", "uri": "nope://{x}"}, "argument": {"name": "x", "value": ""}},
        ),
        "id",
        None,
    ),
    Frame("resources/subscribe uri 5", _req("resources/subscribe", {"uri": 5}), "id", None),
    Frame("logging/setLevel nonsense", _req("logging/setLevel", {"level": "loudest"}), "id", None),
    Frame("initialize with garbage", _req("initialize", {"protocolVersion": 5}), "id", None),
    Frame(
        "a notification with garbage params",
        _raw(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"x":1}}}'),
        "none",
    ),
    Frame(
        "progress for nothing",
        _raw(
            b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":[],"progress":"x"}}'
        ),
        "none",
    ),
    Frame(
        "an unknown notification",
        _raw(b'{"jsonrpc":"2.0","method":"notifications/\\ud800"}'),
        "null",
        INVALID_REQUEST,
    ),
    Frame(
        "a notification with a lone surrogate",
        _raw(b'{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{"x":"\\ud800"}}'),
        "none",
    ),
    Frame(
        "a response to nothing",
        _raw(b'{"jsonrpc":"2.0","id":"never-sent","result":{}}'),
        "none",
        is_response=True,
    ),
    Frame(
        "a malformed error response",
        _raw(b'{"jsonrpc":"2.0","id":"never-sent","error":{"code":"x"}}'),
        "none",
        is_response=True,
    ),
]

# -- arguments -------------------------------------------------------------------------------

#: Allowed JSON type -> values of other types to send instead, the most telling first (a
#: boolean or a numeric string for an integer is what lax validation used to accept).
_WRONG: dict[str, list[Any]] = {
    "integer": [True, "5", 1.5],
    "number": [True, "0.5"],
    "boolean": [1, "true"],
    "string": [7, ["x"]],
    "array": ["not a list", {"k": 1}],
    "object": ["not an object", [1]],
}
#: At most this many wrong-typed values per parameter.
WRONG_PER_PARAMETER = 2
_EXAMPLE: dict[str, Any] = {
    "string": "x",
    "integer": 1,
    "number": 1,
    "boolean": False,
    "array": [],
    "object": {},
}
#: Strings this long in each string argument must be answered, whatever the answer.
HUGE = 300_000


@dataclass(frozen=True)
class ArgumentCase:
    name: str
    tool: str
    arguments: dict[str, Any]
    #: "refused": an isError result or a -32602 error naming `argument`; "any": one answer.
    expect: Literal["refused", "any"]
    argument: str | None = None
    #: The JSON-RPC error code required (e.g. -32602 for text that is not Unicode).
    code: int | None = None

    def frame(self, era: Era) -> bytes:
        data = request("tools/call", {"name": self.tool, "arguments": self.arguments}, era)
        return data.replace(UNDECODABLE.encode(), b"\xff")


def json_types(schema: dict[str, Any], definitions: dict[str, Any]) -> set[str]:
    """The JSON types a (sub)schema admits; empty when it does not say (anything goes)."""
    if "$ref" in schema:
        target = definitions.get(schema["$ref"].rsplit("/", 1)[-1], {})
        return json_types(target, definitions)
    found: set[str] = set()
    kind = schema.get("type")
    if isinstance(kind, str):
        found.add(kind)
    elif isinstance(kind, list):
        found.update(kind)
    for key in ("anyOf", "oneOf"):
        for option in schema.get(key, []):
            option_types = json_types(option, definitions)
            if not option_types:
                return set()
            found |= option_types
    if "enum" in schema and not found:
        found.update(_json_type_of(value) for value in schema["enum"])
    return found


def _json_type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if value is None:
        return "null"
    return "object"


def _plausible(name: str, schema: dict[str, Any], definitions: dict[str, Any], known: dict[str, Any]) -> Any:
    if name in known:
        return known[name]
    for key in ("default", "const"):
        if key in schema and schema[key] is not None:
            return schema[key]
    if schema.get("enum"):
        return schema["enum"][0]
    types = json_types(schema, definitions) - {"null"}
    if "integer" in types or "number" in types:
        return max(1, schema.get("minimum", 1))
    for kind in ("string", "boolean", "array", "object"):
        if kind in types:
            return _EXAMPLE[kind]
    return "x"


def argument_cases(tool: dict[str, Any], known: dict[str, Any]) -> Iterator[ArgumentCase]:
    """Every way to get a tool's arguments wrong, from the input schema it advertises."""
    name = tool["name"]
    schema = tool.get("inputSchema") or {}
    definitions = schema.get("$defs", {})
    properties: dict[str, Any] = schema.get("properties", {})
    required = [p for p in schema.get("required", []) if p in properties]
    base = {p: _plausible(p, properties[p], definitions, known) for p in required}
    first_string: str | None = None
    for parameter, subschema in properties.items():
        types = json_types(subschema, definitions)
        if not types:
            continue  # anything goes: nothing is of the wrong type
        if "integer" in types and "number" not in types:
            # Past the integers JSON carries exactly (2^53): 2^63 ended as a SQLite driver error.
            for value in (2**63, -(2**63) - 1):
                yield ArgumentCase(
                    f"{name}.{parameter}={value}", name, {**base, parameter: value}, "refused", parameter
                )
        if "number" in types:
            types = types | {"integer"}
        candidates = [value for kind in sorted(types) for value in _WRONG.get(kind, [])]
        wrong = [value for value in candidates if _json_type_of(value) not in types]
        for value in wrong[:WRONG_PER_PARAMETER]:
            yield ArgumentCase(
                f"{name}.{parameter}={json.dumps(value)}",
                name,
                {**base, parameter: value},
                "refused",
                parameter,
            )
        if "string" in types:
            texts = [("a lone surrogate", "d/\ud800.txt")]
            if first_string is None:  # raw bytes take the same path in every parameter: once a tool
                texts.append(("a byte that is not UTF-8", f"d/{UNDECODABLE}.txt"))
                first_string = parameter
            for label, text in texts:
                yield ArgumentCase(
                    f"{name}.{parameter} holds {label}",
                    name,
                    {**base, parameter: text},
                    "refused",
                    parameter,
                    INVALID_PARAMS,
                )
    if properties:
        parameter = next(iter(properties))
        deep: Any = 1
        for _ in range(200):
            deep = [deep]
        yield ArgumentCase(
            f"{name}.{parameter} nested 200 deep",
            name,
            {**base, parameter: deep},
            "refused",
            parameter,
            INVALID_PARAMS,
        )
    if first_string is not None:
        yield ArgumentCase(
            f"{name}.{first_string} of {HUGE:,} characters", name, {**base, first_string: "q" * HUGE}, "any"
        )
    else:
        yield ArgumentCase(
            f"{name} with an unknown argument of {HUGE:,} characters",
            name,
            {**base, "zz_unknown": "z" * HUGE},
            "any",
        )
    if required:
        yield ArgumentCase(
            f"{name} without {required[0]}",
            name,
            {p: v for p, v in base.items() if p != required[0]},
            "refused",
            required[0],
        )
    yield ArgumentCase(f"{name} with plausible arguments", name, base, "any")
