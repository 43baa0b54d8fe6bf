"""Interop: the official Python MCP client SDK (`mcp`, pinned in requirements.txt) against the
`everything` example, in both of its connection modes.

- mode="auto" probes `server/discover` and speaks the stateless 2026-07-28 revision: every
  ask (elicitation, sampling, roots, the authorizer's approval) is an input-required result
  the SDK answers through the same callbacks and retries.
- mode="legacy" performs the initialize handshake (2025-11-25): asks are requests to the
  client, awaited in place.

Usage:
    python check.py stdio <path to the everything binary> [--auto-negotiates VERSION]
    python check.py http <http://127.0.0.1:PORT/mcp> [--auto-negotiates VERSION]

`--auto-negotiates` names the revision mode="auto" must end up with (default 2026-07-28);
2025-11-25 checks the SDK's fallback to the handshake against an endpoint that serves only
the handshake era. The checks follow the negotiated revision.

Prints one line per check and a closing count per mode; exits 1 if any check failed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp import Client, MCPDeprecationWarning, MCPError, StdioServerParameters
from mcp.shared.subscriptions import ToolsListChanged

warnings.simplefilter("ignore", MCPDeprecationWarning)

EXPECTED_VERSION = {"auto": "2026-07-28", "legacy": "2025-11-25"}


class Human:
    """Answers the questions a server asks; records them."""

    def __init__(self) -> None:
        self.approve = True
        self.questions: list[types.ElicitRequestParams] = []

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.questions.append(params)
        properties = params.requested_schema.get("properties", {})
        if "approve" in properties:
            if self.approve:
                return types.ElicitResult(action="accept", content={"approve": True})
            return types.ElicitResult(action="decline")
        if "name" in properties:
            return types.ElicitResult(action="accept", content={"name": "Grace"})
        if "color" in properties:
            return types.ElicitResult(action="accept", content={"color": "green"})
        if "ok" in properties:
            return types.ElicitResult(action="accept", content={"ok": True})
        if "context" in properties:
            return types.ElicitResult(action="accept", content={"context": "python"})
        return types.ElicitResult(action="cancel")

    async def sample(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        message = params.messages[0].content
        prompt = message.text if isinstance(message, types.TextContent) else "?"
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"echo: {prompt}"),
            model="interop-model",
            stop_reason="endTurn",
        )

    async def roots(self, context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///python/root", name="Python root")])


def server_target(kind: str, target: str) -> Any:
    if kind == "stdio":
        return StdioServerParameters(command=target, args=["--log-level", "warn"])
    return target


def text(result: Any) -> str:
    return result.content[0].text


async def run_mode(kind: str, target: str, mode: str) -> tuple[int, int]:
    modern = EXPECTED_VERSION[mode] == "2026-07-28"
    human = Human()
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    notifications: list[Any] = []

    async def on_message(message: Any) -> None:
        if not isinstance(message, Exception):
            notifications.append(message)

    client = Client(
        server_target(kind, target),
        mode=mode,
        elicitation_callback=human.elicit,
        sampling_callback=human.sample,
        list_roots_callback=human.roots,
        logging_callback=on_log,
        message_handler=on_message,
        log_level="info" if modern else None,
        read_timeout_seconds=20,
    )
    checks: list[tuple[str, Callable[[Client], Awaitable[None]]]] = []

    def check(name: str) -> Callable[[Callable[[Client], Awaitable[None]]], None]:
        def register(fn: Callable[[Client], Awaitable[None]]) -> None:
            checks.append((name, fn))

        return register

    @check("negotiated version")
    async def _(c: Client) -> None:
        assert c.protocol_version == EXPECTED_VERSION[mode], c.protocol_version
        assert c.server_info is not None and c.server_info.name == "everything", c.server_info
        caps = c.server_capabilities
        assert caps.tools is not None and caps.prompts is not None and caps.resources is not None

    @check("tools/list")
    async def _(c: Client) -> None:
        tools = (await c.list_tools()).tools
        names = {t.name for t in tools}
        for expected in ("test_simple_text", "add_note", "delete_note", "json_schema_2020_12_tool"):
            assert expected in names, f"{expected} not in {sorted(names)}"
        assert all(t.description for t in tools)
        raw = next(t for t in tools if t.name == "json_schema_2020_12_tool").input_schema
        assert raw["$defs"]["address"]["$anchor"] == "addressDef", raw

    @check("tools/call text")
    async def _(c: Client) -> None:
        r = await c.call_tool("test_simple_text", {})
        assert not r.is_error and text(r) == "This is a simple text response for testing.", r

    @check("tools/call structured")
    async def _(c: Client) -> None:
        r = await c.call_tool("add_note", {"id": f"py-{mode}", "text": "from python"})
        assert not r.is_error, r
        assert r.structured_content["id"] == f"py-{mode}", r.structured_content
        assert json.loads(text(r))["text"] == "from python"

    @check("tools/call error and bad arguments")
    async def _(c: Client) -> None:
        r = await c.call_tool("test_error_handling", {})
        assert r.is_error and text(r) == "This tool intentionally returns an error for testing", r
        r = await c.call_tool("add_note", {"id": "py"})
        assert r.is_error and "Missing required argument `text`" in text(r), r

    @check("progress")
    async def _(c: Client) -> None:
        seen: list[tuple[float, float | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total))

        r = await c.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
        assert not r.is_error, r
        await asyncio.sleep(0.05)
        assert seen == [(0, 100), (50, 100), (100, 100)], seen

    @check("logging")
    async def _(c: Client) -> None:
        if not modern:
            await c.set_logging_level("info")
        logs.clear()
        await c.call_tool("test_tool_with_logging", {})
        await asyncio.sleep(0.05)
        assert [entry.data for entry in logs] == [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ], logs

    @check("elicitation, sampling and roots inside tools")
    async def _(c: Client) -> None:
        r = await c.call_tool("test_input_required_result_elicitation", {})
        assert text(r) == "Hello, Grace!", r
        r = await c.call_tool("test_input_required_result_sampling", {})
        assert text(r) == "Sampling result: echo: What is the capital of France?", r
        r = await c.call_tool("test_input_required_result_list_roots", {})
        assert text(r) == "Found 1 root(s): file:///python/root", r
        r = await c.call_tool("test_input_required_result_multiple_inputs", {})
        assert text(r) == "Name: Grace; Greeting: echo: Generate a greeting; Roots: 1", r
        r = await c.call_tool("test_input_required_result_multi_round", {})
        assert text(r) == "Multi-round complete for Grace who likes green", r
        r = await c.call_tool("test_input_required_result_request_state", {})
        assert text(r).startswith("state-ok"), r

    @check("guarded tool: decline denies, approve runs")
    async def _(c: Client) -> None:
        note = f"py-{mode}"
        human.approve = False
        human.questions.clear()
        r = await c.call_tool("delete_note", {"id": note})
        assert r.is_error and json.loads(text(r))["error"] == "authorization_required", r
        assert len(human.questions) == 1, human.questions
        still = await c.read_resource(f"note://{note}", cache_mode="bypass")
        assert still.contents[0].text == "from python", still
        human.approve = True
        human.questions.clear()
        r = await c.call_tool("delete_note", {"id": note})
        assert not r.is_error and text(r) == f"deleted note {note}", r
        assert len(human.questions) == 1, human.questions

    @check("resources and templates")
    async def _(c: Client) -> None:
        uris = {str(r.uri) for r in (await c.list_resources()).resources}
        assert {"test://static-text", "test://static-binary", "note://welcome"} <= uris, uris
        templates = {t.uri_template for t in (await c.list_resource_templates()).resource_templates}
        assert {"test://template/{id}/data", "note://{id}"} <= templates, templates
        r = await c.read_resource("test://static-text")
        assert r.contents[0].text == "This is the content of the static text resource.", r
        r = await c.read_resource("test://static-binary")
        assert r.contents[0].mime_type == "image/png" and r.contents[0].blob.startswith("iVBORw0KGgo"), r
        r = await c.read_resource("test://template/42/data")
        assert json.loads(r.contents[0].text) == {"id": "42", "templateTest": True, "data": "Data for ID: 42"}
        try:
            await c.read_resource("test://nonexistent-resource-for-conformance-testing")
        except MCPError as e:
            assert e.error.code == (-32602 if modern else -32002), e.error
        else:
            raise AssertionError("reading a missing resource succeeded")

    @check("prompts")
    async def _(c: Client) -> None:
        prompts = (await c.list_prompts()).prompts
        assert all(p.description for p in prompts)
        r = await c.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
        assert r.messages[0].content.text == "Prompt with arguments: arg1='a', arg2='b'", r
        r = await c.get_prompt("test_prompt_with_image")
        assert r.messages[0].content.type == "image", r
        r = await c.get_prompt("test_input_required_result_prompt")
        assert r.messages[0].content.text == "Prompt with context: python", r
        r = await c.get_prompt("summarize", {"id": "welcome"})
        assert r.messages[0].content.text.startswith("Summarize this note"), r

    @check("completion")
    async def _(c: Client) -> None:
        r = await c.complete(
            types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
            {"name": "arg1", "value": "b"},
        )
        assert r.completion.values == ["beta"], r
        r = await c.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="note://{id}"),
            {"name": "id", "value": "w"},
        )
        assert r.completion.values == ["welcome"], r

    if modern:

        @check("subscriptions/listen sees a tool list change")
        async def _(c: Client) -> None:
            async with c.listen(tools_list_changed=True) as sub:
                r = await c.call_tool("test_trigger_tool_change", {})
                assert text(r).startswith("Tool list changed"), r
                event = await asyncio.wait_for(sub.__anext__(), 5)
                assert isinstance(event, ToolsListChanged), event
            await c.call_tool("test_trigger_tool_change", {})

    else:

        @check("resources/subscribe sees an update")
        async def _(c: Client) -> None:
            await c.subscribe_resource("test://watched-resource")
            notifications.clear()
            r = await c.call_tool("test_update_watched_resource", {})
            assert "revision" in text(r), r
            for _ in range(50):
                if any(isinstance(n, types.ResourceUpdatedNotification) for n in notifications):
                    break
                await asyncio.sleep(0.02)
            updates = [n for n in notifications if isinstance(n, types.ResourceUpdatedNotification)]
            assert [str(n.params.uri) for n in updates] == ["test://watched-resource"], notifications
            await c.unsubscribe_resource("test://watched-resource")
            assert (await c.send_ping()) is not None

    passed = failed = 0
    async with client as c:
        for name, fn in checks:
            try:
                await fn(c)
                passed += 1
                print(f"ok - {mode}: {name}", flush=True)
            except Exception:
                failed += 1
                print(f"not ok - {mode}: {name}\n{traceback.format_exc()}", flush=True)

    # A client that declared nothing: the tool that needs sampling says so, each era its way.
    bare = Client(server_target(kind, target), mode=mode, read_timeout_seconds=20)
    async with bare as c:
        try:
            r = await c.call_tool("test_missing_capability", {})
            ok = not modern and r.is_error and "sampling" in text(r)
            detail = r
        except MCPError as e:
            ok = modern and e.error.code == -32021 and e.error.data == {"requiredCapabilities": {"sampling": {}}}
            detail = e.error
        if ok:
            passed += 1
            print(f"ok - {mode}: a missing client capability is refused", flush=True)
        else:
            failed += 1
            print(f"not ok - {mode}: a missing client capability is refused: {detail}", flush=True)

    print(f"python-sdk {kind} {mode}: {passed} passed, {failed} failed", flush=True)
    return passed, failed


async def main() -> int:
    args = sys.argv[1:]
    if len(args) == 4 and args[2] == "--auto-negotiates":
        EXPECTED_VERSION["auto"] = args[3]
        args = args[:2]
    if len(args) != 2 or args[0] not in ("stdio", "http"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, target = args
    total_failed = 0
    for mode in ("auto", "legacy"):
        try:
            _, failed = await run_mode(kind, target, mode)
        except Exception:
            traceback.print_exc()
            failed = 1
            print(f"python-sdk {kind} {mode}: could not run", flush=True)
        total_failed += failed
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
