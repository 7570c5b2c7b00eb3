"""Each inbound frame is dispatched or answered; each outbound message is encoded or replaced."""

from __future__ import annotations

import json
from typing import Any

import pydantic_core
import pytest
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)
from mcp_batteries._protocol.frames import (
    MAX_DEPTH,
    Accepted,
    Reply,
    Unsendable,
    check_frame,
    encode_message,
    oversized_reply,
)


def reply_of(frame: bytes) -> Any:
    verdict = check_frame(frame)
    assert isinstance(verdict, Reply), verdict
    return json.loads(verdict.body)


def call(arguments: str, rid: int = 5) -> bytes:
    return (
        f'{{"jsonrpc":"2.0","id":{rid},"method":"tools/call",'
        f'"params":{{"name":"read_text_file","arguments":{arguments}}}}}'
    ).encode()


@pytest.mark.parametrize(
    ("frame", "code", "request_id"),
    [
        (b"hello", PARSE_ERROR, None),
        (b'{"jsonrpc":"2.0","id":7,"method":"ping"', PARSE_ERROR, None),
        (b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":NaN}}', PARSE_ERROR, None),
        (b"[" * 5000 + b"]" * 5000, PARSE_ERROR, None),
        (b"1", INVALID_REQUEST, None),
        (b'"x"', INVALID_REQUEST, None),
        (b"null", INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","id":{},"method":"ping"}', INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","id":"\\udc00","method":"ping"}', INVALID_REQUEST, None),
        (b'{"id":3,"method":"ping"}', INVALID_REQUEST, 3),
        (b'{"jsonrpc":"1.0","id":3,"method":"ping"}', INVALID_REQUEST, 3),
        (b'{"jsonrpc":"2.0","id":3,"method":123}', INVALID_REQUEST, 3),
        (b'{"jsonrpc":"2.0","id":3,"method":null}', INVALID_REQUEST, 3),
        (b'{"jsonrpc":"2.0","id":3}', INVALID_REQUEST, 3),
        (b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":"x"}', INVALID_REQUEST, 3),
        (b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":123}', INVALID_REQUEST, 3),
        (b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":null}', INVALID_REQUEST, 3),
        (b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[]}', INVALID_PARAMS, 3),
        (b'{"jsonrpc":"2.0","method":123}', INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","id":"a","method":"\\ud800"}', INVALID_REQUEST, "a"),
    ],
)
def test_frames_that_are_not_one_valid_message_get_one_error_with_the_right_code_and_id(
    frame: bytes, code: int, request_id: Any
) -> None:
    reply = reply_of(frame)
    assert reply["jsonrpc"] == "2.0" and reply["id"] == request_id
    assert reply["error"]["code"] == code and reply["error"]["message"]


def test_a_batch_gets_one_error_per_request_in_it_as_an_array() -> None:
    frame = (
        b'[{"jsonrpc":"2.0","id":8,"method":"ping"},{"jsonrpc":"2.0","method":"x"},'
        b'{"jsonrpc":"2.0","id":"b"},7]'
    )
    replies = reply_of(frame)
    assert [r["id"] for r in replies] == [8, "b", None]
    assert {r["error"]["code"] for r in replies} == {INVALID_REQUEST}
    assert "batches are not supported" in replies[0]["error"]["message"]
    assert reply_of(b"[]")["error"]["code"] == INVALID_REQUEST


@pytest.mark.parametrize(
    ("arguments", "where"),
    [
        ('{"path":"\\ud800"}', "argument 'path' of tool 'read_text_file'"),
        ('{"path":"d/\\udfff.txt"}', "argument 'path' of tool 'read_text_file'"),
        ('{"path":"ok","tail":["x","\\ud800"]}', "argument 'tail'[1] of tool 'read_text_file'"),
        ('{"\\ud800":"x"}', "argument '<name>' of tool 'read_text_file'"),
    ],
)
def test_a_lone_surrogate_in_an_argument_is_invalid_params_naming_it(arguments: str, where: str) -> None:
    reply = reply_of(call(arguments))
    assert reply["id"] == 5 and reply["error"]["code"] == INVALID_PARAMS
    assert where in reply["error"]["message"]
    assert "not valid Unicode" in reply["error"]["message"] and "C-quoted" in reply["error"]["message"]


def test_bytes_that_are_not_utf8_are_invalid_params_naming_the_argument_and_the_byte() -> None:
    reply = reply_of(call('{"path":"bad_.txt"}').replace(b"bad_", b"bad\xff"))
    assert reply["id"] == 5 and reply["error"]["code"] == INVALID_PARAMS
    assert "argument 'path'" in reply["error"]["message"] and "byte 0xff" in reply["error"]["message"]


def test_surrogate_pairs_are_fine_and_reach_the_server_as_one_character() -> None:
    verdict = check_frame(call('{"path":"\\ud83d\\ude00.txt"}'))
    assert isinstance(verdict, Accepted) and isinstance(verdict.message, JSONRPCRequest)
    assert verdict.message.params is not None
    assert verdict.message.params["arguments"]["path"] == "\U0001f600.txt"


def test_nesting_beyond_the_limit_is_invalid_params_naming_the_argument() -> None:
    deep = '{"a":' * (MAX_DEPTH + 10) + "1" + "}" * (MAX_DEPTH + 10)
    reply = reply_of(call(f'{{"where":{deep}}}'))
    assert reply["id"] == 5 and reply["error"]["code"] == INVALID_PARAMS
    assert "argument 'where'" in reply["error"]["message"] and str(MAX_DEPTH) in reply["error"]["message"]
    shallow = '{"a":' * 20 + "1" + "}" * 20
    assert isinstance(check_frame(call(f'{{"where":{shallow}}}')), Accepted)


def test_valid_messages_are_accepted_unchanged_and_blank_lines_are_ignored() -> None:
    assert check_frame(b"  \r") is None
    for frame, kind in [
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"}', JSONRPCRequest),
        (b'{"jsonrpc":"2.0","method":"notifications/initialized"}', JSONRPCNotification),
        (b'{"jsonrpc":"2.0","id":1,"result":{}}', JSONRPCResponse),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}', JSONRPCError),
        (call('{"path":"{[[{{"}'), JSONRPCRequest),
    ]:
        verdict = check_frame(frame)
        assert isinstance(verdict, Accepted) and isinstance(verdict.message, kind) and not verdict.rewritten


def test_an_unusable_client_response_fails_our_pending_request_instead_of_vanishing() -> None:
    for frame in (
        b'{"jsonrpc":"2.0","id":4,"result":{"roots":[{"uri":"file:///\\ud800"}]}}',
        b'{"jsonrpc":"2.0","id":4,"error":{"code":"x"}}',
    ):
        verdict = check_frame(frame)
        assert isinstance(verdict, Accepted) and verdict.rewritten
        assert isinstance(verdict.message, JSONRPCError) and verdict.message.id == 4


def test_a_notification_with_a_lone_surrogate_is_dropped_without_a_reply() -> None:
    assert (
        check_frame(b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"m":"\\ud800"}}') is None
    )


def test_an_oversized_frame_is_answered_with_its_id_when_its_head_names_one() -> None:
    head = b'{"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"x": "aaaa'
    reply = json.loads(oversized_reply(head, 10**9, 1024).body)
    assert (
        reply["id"] == 42
        and reply["error"]["code"] == INVALID_REQUEST
        and "1,024" in reply["error"]["message"]
    )
    assert json.loads(oversized_reply(b'{"method": "x", "id": 4', 10**9, 1024).body)["id"] is None


def test_encoding_a_normal_message_gives_its_json() -> None:
    message = JSONRPCResponse(jsonrpc="2.0", id=1, result={"text": "caf\u00e9 \U0001f600"})
    encoded = encode_message(message)
    assert isinstance(encoded, bytes)
    assert json.loads(encoded) == {"jsonrpc": "2.0", "id": 1, "result": {"text": "caf\u00e9 \U0001f600"}}


def test_an_unencodable_reply_becomes_an_error_for_its_id_naming_where_the_bad_text_is() -> None:
    message = JSONRPCResponse(
        jsonrpc="2.0", id=9, result={"content": [{"type": "text", "text": "bad\udcffname"}]}
    )
    encoded = encode_message(message)
    assert isinstance(encoded, bytes)
    reply = json.loads(encoded)
    assert reply["id"] == 9 and reply["error"]["code"] == INTERNAL_ERROR
    assert "result.content[0].text" in reply["error"]["message"] and "\\udcff" in reply["error"]["message"]


def test_an_unencodable_notification_is_dropped_and_our_unencodable_request_fails_its_waiter() -> None:
    note = JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"message": "\ud800"})
    assert encode_message(note) is None
    request = JSONRPCRequest(jsonrpc="2.0", id=3, method="roots/list", params={"x": "\ud800"})
    unsendable = encode_message(request)
    assert isinstance(unsendable, Unsendable) and unsendable.request_id == 3
    bad_error = JSONRPCError.model_validate(
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "no such file \udcff"}}
    )
    assert json.loads(encode_message(bad_error))["id"] == 2  # type: ignore[arg-type]


def test_the_depth_limit_is_the_fast_parsers_so_what_it_accepts_needs_no_walk() -> None:
    pydantic_core.from_json(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)
    with pytest.raises(ValueError, match="recursion limit"):
        pydantic_core.from_json(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))
