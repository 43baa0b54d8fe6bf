#!/usr/bin/env python3
"""Writes the committed seed corpus of every fuzz target into fuzz/seeds/<target>/.

Run from the repository root with ../shared beside it: python3 fuzz/make-seeds.py
The official 2026-07-28 examples are copied as they are (one frame each) and, compacted
to one line, as stdio sessions; hand-written sessions cover the handshake era, batches,
the Ask, multi round-trip requests and malformed input.
"""
import json
import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent
EXAMPLES = ROOT.parent.parent / "shared" / "mcp-schema" / "2026-07-28" / "examples"
SEEDS = ROOT / "seeds"


def write(target, name, data):
    d = SEEDS / target
    d.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    (d / name).write_bytes(data)


def line(msg):
    return json.dumps(msg, separators=(",", ":"))


META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}, "roots": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "seed", "version": "0"},
}


def req(i, method, params=None):
    m = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        m["params"] = params
    return m


def note(method, params=None):
    m = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        m["params"] = params
    return m


def init(version="2025-11-25", caps=None):
    return req(0, "initialize", {"protocolVersion": version, "capabilities": caps or {},
                                 "clientInfo": {"name": "seed", "version": "0"}})


def modern(i, method, params=None):
    p = dict(params or {})
    p["_meta"] = META
    return req(i, method, p)


HANDSHAKE = [
    init(caps={"elicitation": {}, "sampling": {}, "roots": {}}),
    note("notifications/initialized"),
    req(1, "tools/list", {}),
    req(2, "tools/list", {"cursor": "bogus"}),
    req(3, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}),
    req(4, "tools/call", {"name": "add", "arguments": {"a": "x"}}),
    req(5, "tools/call", {"name": "echo", "arguments": {"text": "hi", "times": 2}}),
    req(6, "tools/call", {"name": "spend", "arguments": {}}),
    req(7, "tools/call", {"name": "forbidden", "arguments": {}}),
    req(8, "tools/call", {"name": "asker", "arguments": {}, "_meta": {"progressToken": "p"}}),
    req(9, "resources/list", {}),
    req(10, "resources/templates/list", {}),
    req(11, "resources/read", {"uri": "res://fixed"}),
    req(12, "resources/read", {"uri": "res://secret"}),
    req(13, "resources/read", {"uri": "tmpl://a/b/c%20d"}),
    req(14, "resources/subscribe", {"uri": "res://fixed"}),
    req(15, "prompts/list", {}),
    req(16, "prompts/get", {"name": "greet", "arguments": {"name": "ann"}}),
    req(17, "completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                    "argument": {"name": "name", "value": "a"}}),
    req(18, "completion/complete", {"ref": {"type": "ref/resource", "uri": "tmpl://{id}/{+rest}"},
                                    "argument": {"name": "id", "value": "b"}}),
    req(19, "completion/complete", {"ref": {"type": "ref/tool", "name": "x"},
                                    "argument": {"name": "name", "value": ""}}),
    req(20, "logging/setLevel", {"level": "debug"}),
    req(21, "ping"),
    note("notifications/cancelled", {"requestId": 8}),
    {"jsonrpc": "2.0", "id": "mcp-elicit-AAAA", "result": {"action": "accept", "content": {"approve": True}}},
]


def main():
    # Seeds are written over, never wiped: the hand-made ones (task_requests' byte
    # programs, the inputs of past findings) stay beside them.

    # The official 2026-07-28 examples: as frames, and compacted as stdio lines.
    for path in sorted(EXAMPLES.rglob("*.json")):
        name = f"{path.parent.name}-{path.stem}"
        raw = path.read_bytes()
        write("jsonrpc_frame", name, raw)
        write("jsonrpc_stdio", name, line(json.loads(raw)) + "\n")

    # Handshake-era sessions.
    write("jsonrpc_stdio", "handshake-session", "\n".join(line(m) for m in HANDSHAKE) + "\n")
    write("jsonrpc_stdio", "handshake-crlf", "\r\n".join(line(m) for m in HANDSHAKE[:4]) + "\r\n")
    batch = [init("2025-03-26"), note("notifications/initialized")]
    body = [req(i, "ping") for i in range(1, 4)] + [req(5, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})]
    write("jsonrpc_stdio", "batch-2025-03-26",
          "\n".join(line(m) for m in batch) + "\n" + line(body) + "\n" + "[]\n" + line([init()]) + "\n")
    write("jsonrpc_stdio", "malformed",
          "\n".join(['{', '{}', '[', '[1,2]', 'null', '"x"', '{"jsonrpc":"2.0"}',
                     '{"jsonrpc":"2.0","id":1}', '{"jsonrpc":"2.0","id":{},"method":"ping"}',
                     '{"jsonrpc":"1.0","id":1,"method":"ping"}', '{"jsonrpc":"2.0","id":1,"method":"tools/call"}',
                     '{"jsonrpc":"2.0","id":1.5,"method":"ping"}', '{"jsonrpc":"2.0","id":null,"method":"ping"}',
                     '{"jsonrpc":"2.0","id":1,"method":"ping","id":2}', '\x00\xff', ' ', '']) + "\n")
    # 2026-07-28 sessions: discover, lists, the Ask and a multi round-trip request.
    modern_session = [
        modern(1, "server/discover"),
        modern(2, "tools/list"),
        modern(3, "tools/call", {"name": "spend", "arguments": {}}),
        modern(4, "tools/call", {"name": "spend", "arguments": {}, "requestState": "e30.AAAA",
                                 "inputResponses": {"mcp.approve": {"action": "accept", "content": {"approve": True}}}}),
        modern(5, "tools/call", {"name": "asker", "arguments": {}, "inputResponses": {
            "elicit-1": {"action": "accept", "content": {"n": "x"}},
            "sample-2": {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"},
            "roots-3": {"roots": [{"uri": "file:///tmp"}]}}}),
        modern(6, "resources/read", {"uri": "tmpl://x/y"}),
        modern(7, "prompts/get", {"name": "greet", "arguments": {"name": "bob"}}),
        modern(8, "subscriptions/listen", {"notifications": {"toolsListChanged": True, "resourceSubscriptions": ["res://fixed"]}}),
        modern(9, "initialize"),
        note("notifications/cancelled", {"requestId": 8}),
    ]
    write("jsonrpc_stdio", "modern-session", "\n".join(line(m) for m in modern_session) + "\n")
    bad_meta = dict(modern(1, "tools/list"))
    bad_meta["params"] = {"_meta": {"io.modelcontextprotocol/protocolVersion": "1999-01-01"}}
    write("jsonrpc_stdio", "modern-bad-version", line(bad_meta) + "\n")
    for i, m in enumerate(HANDSHAKE + modern_session):
        write("jsonrpc_frame", f"message-{i:02}", line(m))
    write("jsonrpc_frame", "batch", line(body))

    # Answers to the Ask: mode byte 0 = a 2025-11-25 session, 1 = 2025-06-18, 2 = 2026-07-28.
    ok = {"action": "accept", "content": {"approve": True}}
    answers = {
        "approve": ok,
        "approve-string": {"action": "accept", "content": {"approve": "true"}},
        "accept-only": {"action": "accept"},
        "decline": {"action": "decline"},
        "cancel": {"action": "cancel"},
        "empty": {},
    }
    for name, result in answers.items():
        write("elicitation_answer", f"h-{name}", "\x00" + line({"jsonrpc": "2.0", "id": "$ID", "result": result}))
        retry = modern(2, "tools/call", {"name": "spend", "arguments": {}, "requestState": "$STATE",
                                         "inputResponses": {"mcp.approve": result}})
        write("elicitation_answer", f"m-{name}", "\x02" + line(retry))
    write("elicitation_answer", "h-error", "\x00" + line({"jsonrpc": "2.0", "id": "$ID", "error": {"code": -1, "message": "no"}}))
    write("elicitation_answer", "h-wrong-id", "\x00" + line({"jsonrpc": "2.0", "id": "mcp-elicit-x", "result": ok}))
    write("elicitation_answer", "h-number-id", "\x00" + line({"jsonrpc": "2.0", "id": 1, "result": ok}))
    write("elicitation_answer", "h-both", "\x00" + line({"jsonrpc": "2.0", "id": "$ID", "result": ok, "error": {"code": 1, "message": "x"}}))
    write("elicitation_answer", "h-batch", "\x00" + line([{"jsonrpc": "2.0", "id": "$ID", "result": ok}, req(9, "ping")]))
    write("elicitation_answer", "h-2025-06-18-approve", "\x01" + line({"jsonrpc": "2.0", "id": "$ID", "result": ok}))
    write("elicitation_answer", "h-request", "\x00" + line(req(5, "tools/call", {"name": "spend", "arguments": {}})))
    swapped = modern(2, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}, "requestState": "$STATE",
                                       "inputResponses": {"mcp.approve": ok}})
    write("elicitation_answer", "m-swapped-tool", "\x02" + line(swapped))
    other_args = modern(2, "tools/call", {"name": "spend", "arguments": {"x": 1}, "requestState": "$STATE",
                                          "inputResponses": {"mcp.approve": ok}})
    write("elicitation_answer", "m-other-args", "\x02" + line(other_args))
    no_state = modern(2, "tools/call", {"name": "spend", "arguments": {}, "inputResponses": {"mcp.approve": ok}})
    write("elicitation_answer", "m-no-state", "\x02" + line(no_state))

    # Argument texts for the audit digest: canonical ones (taken as sent) and near misses.
    for name, text in [
        ("canonical", '{"a":1,"b":[true,null,{"c":"x"}],"bb":{}}'),
        ("canonical-text", '{"text":"hello été 🦀"}'),
        ("unsorted", '{"b":1,"a":2}'),
        ("duplicate", '{"a":1,"a":2}'),
        ("spaced", '{"a": 1}'),
        ("escaped", '{"a":"\\u0041\\/"}'),
        ("float", '{"a":1.0,"b":1e3,"c":-0}'),
        ("big", '{"a":12345678901234567890}'),
        ("surrogate", '{"a":"\\udcc1"}'),
    ]:
        write("argument_digest", name, text)

    # Sealed states: mode byte, then a forged state, mutations, or another binding.
    write("request_state", "forged", b"\x00e30.AAAA")
    write("request_state", "forged-empty", b"\x00.")
    write("request_state", "mutate-flip", b"\x01\x05\x00")
    write("request_state", "mutate-insert", b"\x01\x10\x01\x20\x05")
    write("request_state", "mutate-truncate", b"\x01\x40\x03")
    write("request_state", "mutate-none", b"\x01")
    write("request_state", "swap-tool", b"\x02\x00other")
    write("request_state", "swap-principal", b"\x02\x02mallory")

    http_seeds()
    stored_seeds()

    # URI templates: template, newline, URI.

    for i, (t, u) in enumerate([
        ("greeting://{name}", "greeting://J%C3%BCrgen"),
        ("file:///{+path}", "file:///a/b/c.txt"),
        ("repo://{owner}/{+path}/raw", "repo://me/src/raw/x/raw"),
        ("tmpl://{id}/{+rest}", "tmpl://a/b/c"),
        ("x://{a}é{+b}", "x://ééé"),
        ("a://{x}.{y}", "a://1.2.3"),
        ("x://{+a}/{+b}/{+c}", "x://" + "/" * 40),
        ("x://{a}", "x://%zz"),
        ("x://{?q}", "x://"),
    ]):
        write("uri_template", f"t{i}", f"{t}\n{u}")


def http_seeds():
    """Raw requests for the http_request target: `METHOD PATH`, headers, a blank line, the
    body; `$SESSION` stands for a live session's id."""
    base = ["Host: 127.0.0.1:8080", "Content-Type: application/json",
            "Accept: application/json, text/event-stream"]
    sess = base + ["Mcp-Session-Id: $SESSION", "MCP-Protocol-Version: 2025-11-25"]
    def req_text(method, path, headers, body=""):
        return f"{method} {path}\n" + "\n".join(headers) + "\n\n" + body
    init_body = line(init(caps={"elicitation": {}}))
    seeds = {
        "initialize": req_text("POST", "/mcp", base, init_body),
        "ping": req_text("POST", "/mcp", sess, line(req(1, "ping"))),
        "call": req_text("POST", "/mcp", sess, line(req(2, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))),
        "call-progress": req_text("POST", "/mcp", sess, line(req(3, "tools/call", {"name": "asker", "arguments": {}, "_meta": {"progressToken": 1}}))),
        "notification": req_text("POST", "/mcp", sess, line(note("notifications/initialized"))),
        "answer": req_text("POST", "/mcp", sess, line({"jsonrpc": "2.0", "id": "mcp-elicit-x", "result": {"action": "decline"}})),
        "batch": req_text("POST", "/mcp", sess, line([req(4, "ping"), req(5, "tools/list", {})])),
        "get": req_text("GET", "/mcp", sess),
        "resume": req_text("GET", "/mcp", sess + ["Last-Event-ID: 0-0"]),
        "resume-junk": req_text("GET", "/mcp", sess + ["Last-Event-ID: 99999999999999999999-1"]),
        "delete": req_text("DELETE", "/mcp", sess),
        "sessionless": req_text("POST", "/mcp", base, line(req(6, "tools/list", {}))),
        "unknown-session": req_text("POST", "/mcp", base + ["Mcp-Session-Id: chosen-by-client"], init_body),
        "bad-version": req_text("POST", "/mcp", sess[:-1] + ["MCP-Protocol-Version: 2026-07-28"], line(req(7, "ping"))),
        "foreign-host": req_text("POST", "/mcp", ["Host: evil.example.com"] + base[1:], init_body),
        "foreign-origin": req_text("POST", "/mcp", base + ["Origin: http://evil.example.com"], init_body),
        "local-origin": req_text("POST", "/mcp", base + ["Origin: http://localhost:3000"], init_body),
        "ipv6-host": req_text("POST", "/mcp", ["Host: [::1]:8080"] + base[1:], init_body),
        "no-host": req_text("POST", "/mcp", base[1:], init_body),
        "text-plain": req_text("POST", "/mcp", [base[0], "Content-Type: text/plain", base[2]], init_body),
        "accept-json-only": req_text("POST", "/mcp", base[:2] + ["Accept: application/json;q=1, text/event-stream;q=0"], init_body),
        "content-length": req_text("POST", "/mcp", base + ["Content-Length: 99999999999"], init_body),
        "bearer": req_text("POST", "/mcp", base + ["Authorization: Bearer abc.def.ghi"], init_body),
        "legacy-open": req_text("GET", "/sse", [base[0], "Accept: text/event-stream"]),
        "legacy-post": req_text("POST", "/messages?sessionId=$SESSION", base, line(req(8, "ping"))),
        "health": req_text("GET", "/health", [base[0]]),
    }
    for name, text in seeds.items():
        write("http_request", name, text)



def stored_seeds():
    """Values in the shared store, one per line (see fuzz_targets/stored_records.rs)."""
    session = {"conn": "$CONN", "init": "1", "version": "2025-11-25",
               "caps": line({"elicitation": {}}), "info": line({"name": "c", "version": "1"}),
               "level": "info", "streams": "3"}
    owned = dict(session, owner=line({"subject": "alice", "issuer": "https://idp.example"}))
    stream = {"replica": "$REPLICA", "calls": [{"id": 7, "tool": "spend"}]}
    dead_stream = {"replica": "gone", "calls": [{"id": "a", "tool": None}, {"id": 7}]}
    parked = {"replica": "gone", "stream": 1, "approval": True}
    task = {"taskId": "t1", "owner": "conn:$CONN", "replica": "$REPLICA", "flavour": "core",
            "tool": "slow", "status": "working", "statusMessage": None, "createdMs": 1,
            "updatedMs": 2, "ttlMs": 60000, "pollIntervalMs": 500, "result": None,
            "error": None, "inputRequests": {}}
    done = dict(task, status="completed", result={"content": [{"type": "text", "text": "x"}]})
    asking = dict(task, flavour="extension", owner="conn:http-stateless", status="input_required",
                  inputRequests={"k": {"method": "elicitation/create",
                                       "params": {"message": "?", "requestedSchema": {"type": "object"}}}})
    huge = dict(task, createdMs=18446744073709551615, ttlMs=18446744073709551615,
                pollIntervalMs=18446744073709551615, updatedMs=0)
    envelope = {"type": "answer", "to": "$REPLICA", "session": "$SESSION",
                "frame": line({"jsonrpc": "2.0", "id": 9, "result": {"action": "accept"}}),
                "sent_at_ms": 1}
    removed = {"type": "session_removed", "origin": "other", "session": "$SESSION"}
    events = [["1-0", line({"jsonrpc": "2.0", "id": 7, "result": {}})], ["2-0", "not json\n\nid: 9"], True]
    call = line({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}})
    seeds = {
        "honest": ["", "", "", "", "", "", "", ""],
        "session": [line(session), "", "", "", "", "", call, ""],
        "owned-session": [line(owned), "", "", "", "", "", call, ""],
        "stream": [line(session), line(stream), "", "", "", "", "", "1-0"],
        "dead-stream": [line(session), line(dead_stream), line(parked), "", "", line(events), "", "1-0"],
        "parked": [line(session), "", line(parked), "", "", "", "", ""],
        "task": ["", "", "", line(task), "", "", "", ""],
        "task-done": ["", "", "", line(done), "", "", "", ""],
        "task-asking": ["", "", "", line(asking), "", "", "", ""],
        "task-huge": ["", "", "", line(huge), "", "", "", ""],
        "bus-answer": ["", "", "", "", line(envelope), "", "", ""],
        "bus-removed": ["", "", "", "", line(removed), "", "", ""],
        "replay": ["", "", "", "", "", line(events), "", "0-0"],
        "garbage": ["{", "[", "1", "null", "{}", "{", "{", "x"],
    }
    for name, lines in seeds.items():
        write("stored_records", name, "\n".join(lines))


if __name__ == "__main__":
    main()
