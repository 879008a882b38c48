"""The MCP client of clippy-mcp's end-to-end tests (tests/mcp_client.rs).

Drives `clippy-mcp` over stdio with the official MCP Python SDK (`mcp` from PyPI) against the real
broker and the real sessions the Rust test started, one scenario per run:

    python3 drive.py SCENARIO

The environment names what to use (the Rust test sets it):
- CLIPPY_MCP: the clippy-mcp binary; CLIPPY_CTL: clippy-ctl (to spawn a session mid-scenario);
- CLIPPY_TEST_DIR: the test's private folder (clippy-mcp runs there; its stderr goes to
  mcp-LABEL.stderr there, which the Rust side checks for panics; delivered files go there too);
- CLIPPY_TEST_PYTHON: the interpreter the sessions run; CLIPPY_TEST_GUESS: guess.py;
- XDG_RUNTIME_DIR (the test's broker) and HOME: clippy-mcp gets this whole environment.

Every call and its result are printed as they happen, so a failure shows what was asked and what
came back. A fact the Rust side checks is a line `RESULT {json}`. The last line is
`PASS SCENARIO`; a failed check raises AssertionError (exit 1), except the few expectations
checked with `check_later`, which let the scenario go on and fail it at its end, so one known bug
does not hide the checks after it. Nothing here sleeps to synchronise: every wait is the server's
own, or a poll of a condition under a deadline.
"""

import base64
import fcntl
import json
import os
import queue
import subprocess
import sys
import threading
import time
from contextlib import asynccontextmanager

import anyio
import mcp
from jsonschema.validators import validator_for
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

MCP = os.environ["CLIPPY_MCP"]
CTL = os.environ["CLIPPY_CTL"]
DIR = os.environ["CLIPPY_TEST_DIR"]
PYTHON = os.environ["CLIPPY_TEST_PYTHON"]
GUESS = os.environ["CLIPPY_TEST_GUESS"]
# The test agent that runs the hooks clippy-session wires (bins/clippy-session/tests/programs).
HOOKED_AGENT = os.environ.get("CLIPPY_TEST_HOOKED_AGENT", "")
HOME = os.environ["HOME"]

# How long one call may take before the client gives up: longer than any wait's own deadline.
CALL_TIMEOUT = 120.0
# The deadline of every wait that must succeed: generous, they normally end in milliseconds.
WAIT_MS = 60_000
# How long a condition is polled for (events arriving, a notification) before the test fails.
POLL_DEADLINE = 60.0
# A whole scenario.
SCENARIO_DEADLINE = 400.0

# The catalogue, in the order tools/list gives it (src/tools.rs).
TOOLS = [
    "list_sessions",
    "list_turns",
    "get_turn",
    "read_spool",
    "wait_for",
    "wait_prompt",
    "send",
    "expect_send",
    "exec",
    "status",
    "screen",
    "capture",
    "paste",
    "deliver",
    "route_add",
    "route_list",
    "route_remove",
    "events_since",
    "end_session",
    # Starting sessions, history, gated handoffs (issue 30).
    "spawn_session",
    "history",
    "search_history",
    "inbox",
    "answer",
    "approve",
    "deny",
]

# ---------------------------------------------------------------------------------------------
# Checks and the transcript
# ---------------------------------------------------------------------------------------------

LAST = ["(no call yet)"]


def show(value, limit=2000):
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def check(condition, what):
    """Fails the scenario with `what`, and the last request and its response, unless `condition`."""
    if not condition:
        raise AssertionError(f"{what}\n    last exchange: {LAST[0]}")


def equal(got, want, what):
    check(got == want, f"{what}: got {show(got)}, want {show(want)}")


# Failed expectations that let the scenario go on, so one bug does not hide the others: the
# scenario fails at its end with all of them.
LATER = []


def check_later(condition, what):
    if not condition:
        print(f"   FAILED (reported at the end): {what}", flush=True)
        LATER.append(f"{what}\n    last exchange: {LAST[0]}")


def no_key(value, key):
    """Whether no object anywhere in `value` has the key `key`."""
    if isinstance(value, dict):
        return key not in value and all(no_key(v, key) for v in value.values())
    if isinstance(value, list):
        return all(no_key(v, key) for v in value)
    return True


def report(key, value):
    """A fact for the Rust side to check."""
    print("RESULT " + json.dumps({key: value}), flush=True)


def now_ms():
    return int(time.time() * 1000)


def real(path):
    return os.path.realpath(path)


# ---------------------------------------------------------------------------------------------
# clippy-mcp through the SDK
# ---------------------------------------------------------------------------------------------


class Server:
    """One clippy-mcp process, driven through the SDK's ClientSession."""

    def __init__(self, session, label, init):
        self.session = session
        self.label = label
        self.init = init

    async def call(self, tool, args):
        """`tools/call`: (isError, structuredContent), after checking the result's shape."""
        print(f"[{self.label}] >> {tool} {show(args)}", flush=True)
        LAST[0] = f"[{self.label}] {tool} {show(args)} -> (no answer)"
        result = await self.session.call_tool(tool, args, read_timeout_seconds=CALL_TIMEOUT)
        value = result.structured_content
        LAST[0] = f"[{self.label}] {tool} {show(args)} -> isError={result.is_error} {show(value)}"
        print(f"[{self.label}] << isError={result.is_error} {show(value)}", flush=True)
        check(isinstance(value, dict), "structuredContent is a JSON object")
        check(
            len(result.content) == 1 and result.content[0].type == "text",
            f"one text content block: {result.content!r}",
        )
        equal(json.loads(result.content[0].text), value, "the text block is the structured JSON")
        check(no_key(value, "next_cursor"), "no next_cursor anywhere (seed 002 §3.7)")
        return bool(result.is_error), value

    async def ok(self, tool, args):
        is_error, value = await self.call(tool, args)
        check(not is_error, f"{tool} succeeds")
        return value

    async def fails(self, tool, args, reason, later=False):
        """A failed call: isError, and `reason` with a message in the structured content (a
        different reason reported at the scenario's end when `later`)."""
        is_error, value = await self.call(tool, args)
        check(is_error, f"{tool} fails (isError true) with reason {reason}")
        got = value.get("reason")
        (check_later if later else check)(
            got == reason, f"{tool}'s reason: got {got!r}, want {reason!r}"
        )
        message = value.get("message")
        check(isinstance(message, str) and message.strip(), f"{tool}'s failure has a message")
        return value

    async def status(self, session):
        return (await self.ok("status", {"session": session}))["status"]

    async def exec(self, session, command):
        return await self.ok(
            "exec", {"session": session, "command": command, "timeout_ms": WAIT_MS}
        )

    async def read_all(self, session, strip_escapes=False):
        """The whole spool from 0, read on from each resume_cursor until a read returns nothing."""
        data = b""
        cursor = 0
        while True:
            value = await self.ok(
                "read_spool",
                {"session": session, "from": cursor, "strip_escapes": strip_escapes},
            )
            equal(value["cursor"], cursor, "read_spool starts at the cursor asked for")
            if "data_b64" in value:
                chunk = base64.b64decode(value["data_b64"])
            else:
                chunk = value["data"].encode()
            if not strip_escapes:
                equal(len(chunk), value["bytes"], "read_spool's byte count")
            equal(value["resume_cursor"], cursor + value["bytes"], "resume_cursor after the bytes")
            if value["bytes"] == 0:
                return data
            data += chunk
            cursor = value["resume_cursor"]

    async def poll(self, what, tool, args, done):
        """Calls `tool` until `done(result)` is true, for at most POLL_DEADLINE seconds."""
        deadline = time.monotonic() + POLL_DEADLINE
        while True:
            value = await self.ok(tool, args)
            if done(value):
                return value
            check(time.monotonic() < deadline, f"{what} within {POLL_DEADLINE} s")
            await anyio.sleep(0.05)


async def new_turn(srv, session, previous):
    """The session's newest turn once it is not `previous` (a turn id, or None): a turn is
    recorded when the wrapper reports it, just after the prompt that ends it, so a wait_prompt
    can answer before the turn is listed."""
    listed = await srv.poll(
        f"a turn of {session} after {previous}",
        "list_turns",
        {"session": session, "limit": 1},
        lambda v: v["turns"] and v["turns"][0]["turn_id"] != previous,
    )
    return listed["turns"][0]


class Heard:
    """What the server sent unasked: notifications, and transport faults (never expected)."""

    def __init__(self):
        self.updated = []
        self.list_changed = 0
        self.faults = []
        self.changed = anyio.Event()

    async def __call__(self, message):
        if isinstance(message, Exception):
            self.faults.append(repr(message))
        elif isinstance(message, mcp.types.ResourceUpdatedNotification):
            self.updated.append(str(message.params.uri))
        elif isinstance(message, mcp.types.ResourceListChangedNotification):
            self.list_changed += 1
        print(f"   (heard {message!r})", flush=True)
        self.changed.set()
        self.changed = anyio.Event()

    async def until(self, condition, timeout):
        """Waits for `condition()` for at most `timeout` seconds; whether it holds."""
        with anyio.move_on_after(timeout):
            while not condition():
                await self.changed.wait()
        return condition()


@asynccontextmanager
async def connect(label, *args, heard=None):
    """clippy-mcp ARGS… started over stdio by the SDK, initialised; stderr to mcp-LABEL.stderr."""
    params = StdioServerParameters(command=MCP, args=list(args), env=dict(os.environ), cwd=DIR)
    heard = heard if heard is not None else Heard()
    with open(os.path.join(DIR, f"mcp-{label}.stderr"), "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, message_handler=heard) as session:
                init = await session.initialize()
                print(f"[{label}] initialized: {init.protocol_version} {init.server_info!r}")
                equal(init.server_info.name, "clippy-mcp", "serverInfo.name")
                check(init.capabilities.tools is not None, "the tools capability")
                check(init.capabilities.resources is not None, "the resources capability")
                check(init.instructions and "resume_cursor" in init.instructions, "instructions")
                yield Server(session, label, init)
    check(not heard.faults, f"no transport fault from clippy-mcp {label}: {heard.faults}")


# ---------------------------------------------------------------------------------------------
# 1. The catalogue
# ---------------------------------------------------------------------------------------------


async def scenario_tools():
    async with connect("tools") as srv:
        listed = await srv.session.list_tools()
        names = [tool.name for tool in listed.tools]
        report("tools", names)
        equal(names, TOOLS, "tools/list names every tool, in catalogue order")
        for tool in listed.tools:
            LAST[0] = f"tools/list: {tool.name}: {show(tool.model_dump(mode='json'))}"
            check(tool.description and len(tool.description.strip()) > 40, "a description")
            schema = tool.input_schema
            equal(schema.get("type"), "object", f"{tool.name}'s input schema is an object")
            # A valid JSON Schema of the draft it names (2020-12 by default).
            validator_for(schema).check_schema(schema)
            properties = schema.get("properties", {})
            for field in schema.get("required", []):
                check(field in properties, f"{tool.name}: required {field} is a property")
            for field, spec in properties.items():
                check(spec.get("description"), f"{tool.name}.{field} has a description")
            check(tool.annotations is not None, f"{tool.name} has annotations")

        by_name = {tool.name: tool for tool in listed.tools}

        def required(name):
            return sorted(by_name[name].input_schema.get("required", []))

        equal(required("wait_for"), ["pattern", "session"], "wait_for's required arguments")
        equal(required("exec"), ["command", "session"], "exec's required arguments")
        equal(required("expect_send"), ["pattern", "session", "text"], "expect_send's")
        equal(required("list_sessions"), [], "list_sessions takes nothing")
        equal(required("get_turn"), [], "get_turn takes turn_id or session")
        equal(by_name["status"].annotations.read_only_hint, True, "status only reads")
        equal(by_name["exec"].annotations.read_only_hint, False, "exec acts")
        equal(by_name["end_session"].annotations.destructive_hint, True, "end_session destroys")

        # The schemas say what a call may carry.
        def valid(name, args):
            validator = validator_for(by_name[name].input_schema)(by_name[name].input_schema)
            return validator.is_valid(args)

        check(valid("wait_for", {"session": "sh", "pattern": "x", "from": 3}), "a wait_for")
        check(not valid("wait_for", {"session": "sh"}), "wait_for without a pattern")
        check(not valid("wait_for", {"session": "sh", "pattern": "x", "from": -1}), "from >= 0")
        check(not valid("status", {"session": 7}), "a session is a string")
        check(valid("get_turn", {"session": "sh", "format": "raw"}), "get_turn raw")
        check(not valid("get_turn", {"session": "sh", "format": "pdf"}), "formats are listed")

        # A tool nobody has: a JSON-RPC error, not a tool result; the session goes on.
        LAST[0] = "tools/call no_such_tool {}"
        try:
            result = await srv.session.call_tool("no_such_tool", {})
        except MCPError as error:
            print(f"   no_such_tool -> MCPError {error.code} {error.message!r}", flush=True)
            equal(error.code, -32602, "an unknown tool is invalid params (-32602)")
            check("no_such_tool" in error.message, "the error names the tool")
        else:
            check(False, f"an unknown tool is a JSON-RPC error, not a result: {result!r}")
        again = await srv.session.list_tools()
        equal(len(again.tools), len(TOOLS), "tools/list still answers")
        templates = await srv.session.list_resource_templates()
        equal(
            sorted(t.uri_template for t in templates.resource_templates),
            ["clippy://session/{session}/screen", "clippy://session/{session}/turn/latest"],
            "the resource templates",
        )


# ---------------------------------------------------------------------------------------------
# 1b. Raw lines: what is not a request gets an error or nothing, and the server answers on
# ---------------------------------------------------------------------------------------------


class Raw:
    """clippy-mcp with pipes of our own, lines written as they are."""

    def __init__(self, label):
        self.errlog = open(os.path.join(DIR, f"mcp-{label}.stderr"), "wb")
        self.proc = subprocess.Popen(
            [MCP],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errlog,
            env=dict(os.environ),
            cwd=DIR,
        )
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 1000

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def write(self, line):
        data = line if isinstance(line, bytes) else line.encode()
        print(f"   raw >> {data[:200]!r}", flush=True)
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def send(self, message):
        self.write(json.dumps(message))

    def read(self):
        """The next message the server wrote (every line it writes is one JSON-RPC message)."""
        try:
            line = self.lines.get(timeout=CALL_TIMEOUT)
        except queue.Empty:
            check(False, f"clippy-mcp answered within {CALL_TIMEOUT} s")
        check(line is not None, f"clippy-mcp is still running (exit {self.proc.poll()})")
        print(f"   raw << {line[:300]!r}", flush=True)
        try:
            message = json.loads(line)
        except ValueError:
            check(False, f"clippy-mcp writes only JSON-RPC on stdout: {line!r}")
        check(isinstance(message, dict), f"a JSON-RPC message is an object: {line!r}")
        equal(message.get("jsonrpc"), "2.0", "jsonrpc")
        return message

    def request(self, method, params=None):
        """A request of ours and its reply; everything else read meanwhile is returned too."""
        self.next_id += 1
        ident = self.next_id
        message = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        others = []
        while True:
            got = self.read()
            if got.get("id") == ident and ("result" in got or "error" in got):
                return got, others
            others.append(got)

    def close(self):
        """Closes stdin: the server ends, exit 0."""
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=CALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
            check(False, "clippy-mcp ends when its stdin closes")
        self.errlog.close()
        equal(code, 0, "clippy-mcp's exit code once its client closed stdin")


def initialize(raw):
    reply, others = raw.request(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw-lines", "version": "0"},
        },
    )
    check("result" in reply, f"initialize succeeds: {reply}")
    equal(reply["result"]["serverInfo"]["name"], "clippy-mcp", "serverInfo.name")
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return others


def is_error(message):
    error = message.get("error")
    return (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and isinstance(error.get("message"), str)
        and "result" not in message
    )


async def scenario_raw():
    # Garbage before initialize is not fatal either.
    raw = Raw("raw-early")
    raw.write(b"this is not JSON-RPC")
    for other in initialize(raw):
        check(is_error(other), f"only an error answers a bad line: {other}")
    reply, others = raw.request("tools/list")
    equal(len(reply["result"]["tools"]), len(TOOLS), "tools/list after early garbage")
    raw.close()

    raw = Raw("raw")
    initialize(raw)
    # Its stdout pipe was grown to hold a whole reply (about 3x the 64 KiB reply limit) in one
    # write: 256 KiB, or the most the system lets a user have when that is less.
    with open("/proc/sys/fs/pipe-max-size") as limit:
        most = int(limit.read())
    F_GETPIPE_SZ = 1032
    pipe = fcntl.fcntl(raw.proc.stdout.fileno(), F_GETPIPE_SZ)
    check(pipe >= min(256 * 1024, most), f"clippy-mcp's stdout pipe holds a reply: {pipe} bytes")
    report("stdout_pipe_bytes", pipe)
    # Each bad line, then a ping: whatever came before the ping's reply answers the bad line and
    # must be a JSON-RPC error; nothing at all is fine too (a line that is not JSON has no id).
    bad_lines = [
        b"this is not json",
        b"{",
        b"",
        b"x" * 200_000,
        b"\xff\xfe\x00 not UTF-8",
        b"42",
        b'"a string"',
        b"null",
        b"[1, 2]",
        b"[]",
        b'{"jsonrpc": "2.0"}',
        b'{"jsonrpc": "2.0", "foo": 1}',
        b'{"jsonrpc": "2.0", "id": 5}',
        b'{"jsonrpc": "1.0", "id": 6, "method": "tools/list"}',
        b'{"id": 7, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "id": {"an": "object"}, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "method": 17}',
        b'{"jsonrpc": "2.0", "id": 8, "result": {"unasked": true}}',
        b'{"jsonrpc": "2.0", "method": "notifications/no_such_thing"}',
    ]
    answered = {}
    for line in bad_lines:
        raw.write(line)
        reply, others = raw.request("ping")
        equal(reply.get("result"), {}, "ping is answered after a bad line")
        for other in others:
            check(is_error(other), f"only a JSON-RPC error answers a bad line: {other}")
        answered[line[:60].decode("latin-1")] = [o["error"]["code"] for o in others]

    # Requests of methods that exist or not, with bad params: an error reply with their id.
    requests = [
        ("no/such/method", None, -32601),
        ("tools/call", {"name": "no_such_tool", "arguments": {}}, -32602),
        ("resources/read", {"uri": "clippy://nowhere"}, -32002),
        ("tools/call", {"name": "status", "arguments": [1]}, None),
        ("tools/call", None, None),
        ("tools/call", {"arguments": {}}, None),
        ("resources/read", {}, None),
    ]
    for method, params, code in requests:
        reply, others = raw.request(method, params)
        for other in others:
            check(is_error(other), f"only errors besides the reply: {other}")
        check(is_error(reply), f"{method} {show(params)} is a JSON-RPC error: {reply}")
        if code is not None:
            equal(reply["error"]["code"], code, f"{method} {show(params)}'s error code")
        answered[f"{method} {show(params)}"] = reply["error"]["code"]
    report("raw_errors", answered)

    # The server answers on: a real call.
    reply, _ = raw.request("tools/call", {"name": "list_sessions", "arguments": {}})
    check("result" in reply, f"a tool call after the bad lines: {reply}")
    check(not reply["result"].get("isError"), f"list_sessions succeeds: {reply}")
    sessions = reply["result"]["structuredContent"]["sessions"]
    check(isinstance(sessions, list), f"list_sessions lists: {reply}")
    raw.close()


# ---------------------------------------------------------------------------------------------
# 2. Seed 002 §8.1 and §8.5: cursors, timeouts, exec's exit code and cwd
# ---------------------------------------------------------------------------------------------


async def scenario_seed_cursors():
    tmp = real("/tmp")
    home = real(HOME)
    async with connect("cursors") as srv:
        # §8.1: exec, then the two words from 0 and from the resume_cursor.
        ex = await srv.exec("sh", 'cd /tmp && printf "hello\\nworld\\n"')
        equal(ex["output"], "hello\nworld", "exec's output")
        equal(ex["exit_code"], 0, "exec's exit code")
        equal(real(ex["cwd"]), tmp, "exec's cwd")
        check(isinstance(ex["turn_id"], str), "exec names its turn")
        equal(ex["truncated"], False, "a short output is whole")
        after_exec = ex["resume_cursor"]

        hello = await srv.ok(
            "wait_for", {"session": "sh", "pattern": "hello", "from": 0, "timeout_ms": WAIT_MS}
        )
        equal(hello["matched"], True, "matched")
        equal(hello["match_text"], "hello", "match_text")
        resume = hello["resume_cursor"]
        equal(hello["match_span"][1], resume, "resume_cursor = match_span.end")
        equal(hello["match_span"][1] - hello["match_span"][0], 5, "the span is the word")

        world = await srv.ok(
            "wait_for",
            {"session": "sh", "pattern": "world", "from": resume, "timeout_ms": WAIT_MS},
        )
        equal(world["match_text"], "world", "the second wait finds world")
        check(world["match_span"][0] >= resume, "world is found at or after the resume_cursor")
        equal(world["match_span"][1], world["resume_cursor"], "resume_cursor = match_span.end")
        check(world["resume_cursor"] <= after_exec, "the output comes before exec's prompt")

        # The spans are the spool's first occurrences: nothing skipped, nothing matched twice.
        spool = await srv.read_all("sh")
        equal(spool.find(b"hello"), hello["match_span"][0], "the first hello in the spool")
        equal(spool.find(b"world", resume), world["match_span"][0], "the next world")
        check(b"hello" in spool[hello["match_span"][0] : hello["match_span"][1]], "the span")

        # A timeout: an error with reason timeout and resume_cursor = the spool's size.
        timeout = await srv.fails(
            "wait_for",
            {
                "session": "sh",
                "pattern": "NOT_IN_THE_SPOOL",
                "from": world["resume_cursor"],
                "timeout_ms": 300,
            },
            "timeout",
        )
        check(isinstance(timeout.get("resume_cursor"), int), "a timeout carries resume_cursor")
        status = await srv.status("sh")
        equal(timeout["resume_cursor"], status["resume_cursor"], "= status's resume_cursor")
        equal(timeout["resume_cursor"], len(spool), "= the spool's size as read")
        equal(timeout["resume_cursor"], os.path.getsize(status["spool"]), "= the spool file's size")
        # A regex timeout from 0 (looked over the whole spool) says the same.
        timeout = await srv.fails(
            "wait_for",
            {"session": "sh", "pattern": "NOT_[0-9]+_HERE", "regex": True, "timeout_ms": 200},
            "timeout",
        )
        equal(timeout["resume_cursor"], len(spool), "a regex timeout's resume_cursor")

        failed = await srv.exec("sh", "false")
        equal(failed["exit_code"], 1, "false exits 1")
        equal(real(failed["cwd"]), tmp, "the cwd stays")

        # §8.5: a prompt, with its exit code, cwd and time, after each of several commands.
        steps = [
            ("cd ~", 0, home, None),
            ("cd /tmp", 0, tmp, None),
            ("true", 0, tmp, None),
            ("false", 1, tmp, None),
            ("echo x", 0, tmp, "x"),
            ("cd -", 0, home, home),
            ("(exit 3)", 3, home, None),
            ("pwd", 0, home, home),
        ]
        last_cursor = failed["resume_cursor"]
        last_ms = 0
        for command, code, where, output in steps:
            before = now_ms()
            ex = await srv.exec("sh", command)
            equal(ex["exit_code"], code, f"{command}: exec's exit code")
            equal(real(ex["cwd"]), where, f"{command}: exec's cwd")
            check(ex["resume_cursor"] > last_cursor, f"{command}: the cursor moves on")
            if output is not None:
                equal(real(ex["output"]) if output == home else ex["output"], output, command)
            prompt = await srv.ok(
                "wait_prompt",
                {"session": "sh", "from": ex["resume_cursor"], "timeout_ms": WAIT_MS},
            )
            equal(prompt["matched"], True, f"{command}: the prompt")
            equal(prompt["match_span"][0], ex["resume_cursor"], f"{command}: exec's prompt")
            check(prompt["resume_cursor"] >= prompt["match_span"][1], "resume after the prompt")
            equal(prompt["exit_code"], code, f"{command}: the prompt's exit code")
            equal(prompt["cwd"], ex["cwd"], f"{command}: the prompt's cwd")
            stamp = prompt.get("timestamp_ms")
            check(isinstance(stamp, int), f"{command}: the prompt's time")
            check(before - 1 <= stamp <= now_ms(), f"{command}: the prompt came in this step")
            check(stamp >= last_ms, f"{command}: prompt times go forward")
            status = await srv.status("sh")
            equal(status["mode"], "idle", f"{command}: idle at the prompt")
            equal(status["exit_code"], code, f"{command}: status's exit code")
            equal(status["cwd"], ex["cwd"], f"{command}: status's cwd")
            equal(status["prompt_cursor"], prompt["match_span"][0], f"{command}: prompt_cursor")
            last_cursor = prompt["resume_cursor"]
            last_ms = stamp

        turns = (await srv.ok("list_turns", {"session": "sh"}))["turns"]
        echo = [t for t in turns if t["input"] == "echo x"]
        equal(len(echo), 1, "the echo x turn is listed once")
        equal(echo[0]["exit_code"], 0, "its exit code")
        equal(real(echo[0]["cwd"]), tmp, "its cwd")

        # The shell idle at its prompt: a last timeout's cursor, for the Rust side to compare
        # with the spool file once everything has stopped.
        timeout = await srv.fails(
            "wait_for",
            {"session": "sh", "pattern": "NOT_IN_THE_SPOOL", "from": 0, "timeout_ms": 200},
            "timeout",
        )
        report("final_resume_cursor", timeout["resume_cursor"])
        report("spool_path", (await srv.status("sh"))["spool"])


# ---------------------------------------------------------------------------------------------
# 2b. Seed 002 §8.2–8.4: the guessing program, answered with expect_send and send; busy
# ---------------------------------------------------------------------------------------------


async def start_guess(srv):
    """Types the guess program's command line into the idle shell and waits for its question:
    (the cursor before, the question's match)."""
    status = await srv.status("sh")
    equal(status["mode"], "idle", "the shell is idle before the program starts")
    before = status["resume_cursor"]
    previous = status["last_turn_id"]
    command = f"{PYTHON} {GUESS}"
    sent = await srv.ok("send", {"session": "sh", "text": command, "enter": True})
    equal(sent["bytes"], len(command.encode()) + 1, "send's byte count")
    question = await srv.ok(
        "wait_for",
        {"session": "sh", "pattern": "Guess a number", "from": before, "timeout_ms": WAIT_MS},
    )
    check(question["match_span"][0] >= before, "the question comes after the cursor")
    status = await srv.status("sh")
    equal(status["mode"], "busy", "the program runs")
    check("guess.py" in (status["current_input"] or ""), "the running input is the program")
    return before, question, previous


async def guess_turn(srv, previous, want_exit, want_text):
    status = await srv.status("sh")
    equal(status["mode"], "idle", "idle after the program")
    equal(status["exit_code"], want_exit, "status's exit code")
    turn = await new_turn(srv, "sh", previous)
    status = await srv.status("sh")
    check_later(
        "guess.py" in (turn["input"] or ""),
        f"the latest turn's input is the program's command line, not {turn['input']!r}",
    )
    equal(turn["exit_code"], want_exit, "the turn's exit code")
    equal(turn["turn_id"], status["last_turn_id"], "the latest turn")
    got = await srv.ok("get_turn", {"turn_id": turn["turn_id"]})
    check(want_text in got["content"], f"the turn's text holds {want_text!r}")
    return status


async def scenario_seed_guess():
    home = real(HOME)
    async with connect("guess") as srv:
        # §8.4 then §8.2: while the program waits for input, exec is refused; expect_send answers.
        before, question, previous = await start_guess(srv)
        await srv.fails(
            "exec", {"session": "sh", "command": "echo SHOULD_FAIL", "timeout_ms": WAIT_MS}, "busy"
        )
        status = await srv.status("sh")
        equal(status["mode"], "busy", "the program still waits")
        equal(status["exec_running"], False, "no exec runs")

        answered = await srv.ok(
            "expect_send",
            {
                "session": "sh",
                "pattern": "Guess a number",
                "from": before,
                "text": "7",
                "timeout_ms": WAIT_MS,
            },
        )
        equal(answered["match_span"], question["match_span"], "expect_send matched the question")
        equal(answered["resume_cursor"], question["resume_cursor"], "and resumes after it")
        correct = await srv.ok(
            "wait_for",
            {
                "session": "sh",
                "pattern": "Correct!",
                "from": answered["resume_cursor"],
                "timeout_ms": WAIT_MS,
            },
        )
        prompt = await srv.ok(
            "wait_prompt",
            {"session": "sh", "from": correct["resume_cursor"], "timeout_ms": WAIT_MS},
        )
        check(prompt["match_span"][0] >= correct["resume_cursor"], "the prompt after the answer")
        equal(prompt["exit_code"], 0, "the correct guess exits 0")
        equal(real(prompt["cwd"]), home, "the prompt's cwd")
        status = await guess_turn(srv, previous, 0, "Correct!")
        equal(status["prompt_cursor"], prompt["match_span"][0], "status's prompt_cursor")

        # §8.3: the error path, answered with send.
        before, question, previous = await start_guess(srv)
        await srv.ok("send", {"session": "sh", "text": "11", "enter": True})
        out_of_range = await srv.ok(
            "wait_for",
            {
                "session": "sh",
                "pattern": "Out of range",
                "from": question["resume_cursor"],
                "timeout_ms": WAIT_MS,
            },
        )
        prompt = await srv.ok(
            "wait_prompt",
            {"session": "sh", "from": out_of_range["resume_cursor"], "timeout_ms": WAIT_MS},
        )
        equal(prompt["exit_code"], 2, "out of range exits 2")
        await guess_turn(srv, previous, 2, "Out of range")

        # The refused exec typed nothing; the program read only what was sent.
        spool = await srv.read_all("sh", strip_escapes=True)
        check(b"SHOULD_FAIL" not in spool, "the refused exec typed nothing")
        check(b"Not a number" not in spool, "the program read only the answers")

        # §8.5 after it all: execs in a row, each with its prompt.
        for command, code in [("true", 0), ("false", 1), ("echo done", 0)]:
            ex = await srv.exec("sh", command)
            equal(ex["exit_code"], code, f"{command}'s exit code")
            equal(real(ex["cwd"]), home, f"{command}'s cwd")


# ---------------------------------------------------------------------------------------------
# 3. A Python REPL: send, wait_prompt, get_turn, read_spool, screen
# ---------------------------------------------------------------------------------------------


async def scenario_repl():
    async with connect("repl") as srv:
        status = await srv.status("py")
        equal(status["mode"], "idle", "the REPL waits at its prompt")
        before = status["resume_cursor"]
        previous = status["last_turn_id"]
        line = 'print("\\n".join(f"row {i}" for i in range(3)))'
        await srv.ok("send", {"session": "py", "text": line, "enter": True})
        prompt = await srv.ok(
            "wait_prompt", {"session": "py", "from": before, "timeout_ms": WAIT_MS}
        )
        check(prompt["match_span"][0] >= before, "a new prompt")
        check(prompt["match_text"].startswith(">>>"), "the REPL's prompt")
        check(isinstance(prompt.get("timestamp_ms"), int), "the prompt's time")

        listed = await new_turn(srv, "py", previous)
        latest = await srv.ok("get_turn", {"session": "py"})
        equal(latest["turn_id"], listed["turn_id"], "get_turn by session: the latest")
        equal(latest["content"], "row 0\nrow 1\nrow 2", "the turn's text")
        equal(latest["format"], "text", "format text by default")
        equal(latest["input"], line, "the turn's input")
        equal(latest["truncated"], False, "whole")
        equal(latest["total_bytes"], len(latest["content"].encode()), "total_bytes")
        equal(latest["offset"], 0, "offset")
        turns = (await srv.ok("list_turns", {"session": "py"}))["turns"]
        equal(turns[0]["turn_id"], latest["turn_id"], "list_turns lists it first")
        equal(turns[0]["input"], line, "with its input")
        by_id = await srv.ok("get_turn", {"turn_id": turns[0]["turn_id"], "format": "text"})
        equal(by_id["content"], latest["content"], "by turn_id: the same text")
        raw = await srv.ok("get_turn", {"turn_id": turns[0]["turn_id"], "format": "raw"})
        equal(raw["format"], "raw", "format raw")
        equal(raw["content"], "row 0\r\nrow 1\r\nrow 2\r\n", "the raw bytes")
        equal(turns[0]["byte_length"], len(raw["content"].encode()), "byte_length is the raw's")

        # The spool from 0, then on from its resume_cursor: nothing new, then only what came.
        spool = await srv.ok("read_spool", {"session": "py", "from": 0})
        equal(spool["cursor"], 0, "read from 0")
        equal(spool["escapes_stripped"], True, "escapes stripped by default")
        check(spool["data"].startswith(">>> "), "the spool starts with the first prompt")
        check(line in spool["data"], "the typed line is echoed in the spool")
        check("row 0\nrow 1\nrow 2\n" in spool["data"], "the output is in the spool")
        equal(spool["resume_cursor"], spool["cursor"] + spool["bytes"], "resume_cursor")
        status = await srv.status("py")
        equal(spool["resume_cursor"], status["resume_cursor"], "read to the spool's end")
        rest = await srv.ok("read_spool", {"session": "py", "from": spool["resume_cursor"]})
        equal((rest["bytes"], rest["data"]), (0, ""), "nothing past the end")
        equal(rest["resume_cursor"], spool["resume_cursor"], "the cursor stays")

        # Escapes: stripped by default, kept with strip_escapes false.
        before = spool["resume_cursor"]
        line = 'print("\\x1b[31mred\\x1b[0m")'
        await srv.ok("send", {"session": "py", "text": line, "enter": True})
        await srv.ok("wait_prompt", {"session": "py", "from": before, "timeout_ms": WAIT_MS})
        red_turn = await new_turn(srv, "py", latest["turn_id"])
        stripped = await srv.ok("read_spool", {"session": "py", "from": before})
        check("red\n" in stripped["data"], "the printed word")
        check("\x1b" not in stripped["data"], "no escape left")
        kept = await srv.ok(
            "read_spool", {"session": "py", "from": before, "strip_escapes": False}
        )
        equal(kept["escapes_stripped"], False, "escapes kept")
        check("\x1b[31mred\x1b[0m" in kept["data"], "the escapes as printed")
        equal(kept["resume_cursor"], stripped["resume_cursor"], "the same bytes read")
        equal(kept["bytes"], stripped["bytes"], "the same byte count")
        check(kept["data"].startswith(line), "the read starts where the last one ended")
        red = await srv.ok("get_turn", {"session": "py"})
        equal(red["turn_id"], red_turn["turn_id"], "the latest turn")
        equal(red["content"], "red", "the text view has no escapes")
        red_raw = await srv.ok("get_turn", {"session": "py", "format": "raw"})
        check("\x1b[31mred\x1b[0m" in red_raw["content"], "the raw view has them")

        screen = await srv.ok("screen", {"session": "py"})
        lines = screen["text"].split("\n")
        check(lines[-1].startswith(">>>"), "the screen ends at the prompt")
        check("row 2" in screen["text"] and "red" in screen["text"], "the screen shows output")
        equal(screen["alternate_screen"], False, "the main screen")
        check(screen["cols"] > 0 and screen["rows"] > 0, "the screen's size")
        history = await srv.ok("screen", {"session": "py", "history": 5})
        check(history["text"].endswith(screen["text"].split("\n")[-1]), "history, then the screen")


# ---------------------------------------------------------------------------------------------
# 4. Large turns: cut with the total and how to read on, reassembled exactly
# ---------------------------------------------------------------------------------------------


async def scenario_truncation():
    limit = 1024
    async with connect("small", "--max-reply-bytes", str(limit)) as small, connect(
        "large"
    ) as large:
        # Lines of multi-byte characters, so cuts must fall between characters.
        command = 'print("\\n".join(f"line {i:03d} " + "é€" * 15 for i in range(100)))'
        want = "\n".join(f"line {i:03d} " + "é€" * 15 for i in range(100))
        total = len(want.encode())
        check(total > 5 * limit, "the text is several replies long")

        ex = await small.exec("py", command)
        equal(ex["truncated"], True, "exec's output is cut")
        equal(ex["total_bytes"], total, "exec's total_bytes")
        check(0 < ex["returned_bytes"] <= limit, "at most the limit")
        equal(len(ex["output"].encode()), ex["returned_bytes"], "returned_bytes")
        equal(ex["next_offset"], ex["returned_bytes"], "next_offset")
        check(want.startswith(ex["output"]), "the output's beginning")
        check("get_turn" in ex.get("hint", "") and ex["turn_id"] in ex["hint"], "a hint")
        turn_id = ex["turn_id"]

        pieces = []
        offset = 0
        while True:
            got = await small.ok("get_turn", {"turn_id": turn_id, "offset": offset})
            equal(got["offset"], offset, "the piece starts at the offset asked for")
            equal(got["total_bytes"], total, "total_bytes")
            check(got["returned_bytes"] <= limit, "a piece is at most the limit")
            equal(len(got["content"].encode()), got["returned_bytes"], "returned_bytes")
            pieces.append(got["content"])
            if not got["truncated"]:
                check("next_offset" not in got, "no next_offset on the last piece")
                equal(offset + got["returned_bytes"], total, "the last piece ends the content")
                break
            equal(got["next_offset"], offset + got["returned_bytes"], "next_offset")
            check(got["returned_bytes"] > 0, "each piece moves on")
            check("offset" in got.get("hint", ""), "a hint says how to read on")
            offset = got["next_offset"]
        check(len(pieces) > total // limit, f"read in {len(pieces)} pieces")
        equal("".join(pieces), want, "the pieces reassemble the text exactly")
        whole = await large.ok("get_turn", {"turn_id": turn_id})
        equal(whole["truncated"], False, "under the default limit it is whole")
        equal(whole["content"], want, "and the same text")

        # read_spool: max_bytes is capped at the limit; reading on reassembles the spool.
        capped = await small.ok("read_spool", {"session": "py", "from": 0, "max_bytes": 100_000})
        check(capped["bytes"] <= limit, "read_spool reads at most the limit")
        screen = await small.ok("screen", {"session": "py", "history": 200})
        check(len(screen["text"].encode()) <= limit, "the screen fits the limit")
        check(screen.get("truncated") is True and screen.get("hint"), "the screen says it is cut")
        check(screen["text"].split("\n")[-1].startswith(">>>"), "the newest lines are kept")
        # Read on from each resume_cursor, the pieces are the spool (UTF-8 cut at the limit).
        equal(await small.read_all("py"), await large.read_all("py"), "the spool read in pieces")


# ---------------------------------------------------------------------------------------------
# 5. Every error reason
# ---------------------------------------------------------------------------------------------


async def scenario_errors():
    nowhere = os.path.join(DIR, "no-broker-here", "broker.sock")
    async with connect("errors") as srv, connect("nobroker", "--socket", nowhere) as lost:
        sh = (await srv.status("sh"))["session"]
        unknown = "no-such-session"

        # session_not_found, from every tool that names a session.
        for tool, args in [
            ("status", {}),
            ("list_turns", {}),
            ("read_spool", {}),
            ("send", {"text": "x"}),
            ("screen", {}),
            ("capture", {}),
            ("end_session", {}),
        ]:
            failed = await srv.fails(tool, {"session": unknown, **args}, "session_not_found")
            check(unknown in failed["message"], "the message names the session")
        await srv.fails("route_add", {"from": unknown, "to": "sh"}, "session_not_found")
        # exec, like the waits, waits for a session to register (CONTRACTS/BROKER.md).
        failed = await srv.fails(
            "exec", {"session": unknown, "command": "true", "timeout_ms": 200}, "timeout"
        )
        check("never registered" in failed["message"], "the message says why")

        # invalid_argument: unknown field, missing field, wrong type, both or neither of two.
        failed = await srv.fails("status", {"session": "sh", "bogus": 1}, "invalid_argument")
        check("bogus" in failed["message"], "the unknown field is named")
        failed = await srv.fails("wait_for", {"session": "sh"}, "invalid_argument")
        check("pattern" in failed["message"], "the missing field is named")
        failed = await srv.fails("status", {}, "invalid_argument")
        check("session" in failed["message"], "the missing field is named")
        for tool, args, _field in WRONG_TYPES:
            await srv.fails(tool, args, "invalid_argument")
        failed = await srv.fails(
            "get_turn", {"session": "sh", "turn_id": f"{sh}:1"}, "invalid_argument"
        )
        check("turn_id" in failed["message"] and "session" in failed["message"], "names both")
        await srv.fails("get_turn", {}, "invalid_argument")
        await srv.fails("capture", {}, "invalid_argument")
        await srv.fails("exec", {"session": "sh", "command": "echo a\necho b"}, "invalid_argument")
        await srv.fails("exec", {"session": "sh", "command": "  "}, "invalid_argument")
        await srv.fails("send", {"session": "sh", "text": ""}, "invalid_argument")
        await srv.fails("read_spool", {"session": "sh", "max_bytes": 0}, "invalid_argument")
        await srv.fails("deliver", {"path": ""}, "invalid_argument")
        await srv.fails("get_turn", {"session": "sh", "format": "pdf"}, "invalid_argument")

        # invalid_pattern, invalid_cursor.
        await srv.fails(
            "wait_for",
            {"session": "sh", "pattern": "(", "regex": True, "timeout_ms": WAIT_MS},
            "invalid_pattern",
        )
        await srv.fails(
            "expect_send",
            {"session": "sh", "pattern": "[z-a]", "regex": True, "text": "x"},
            "invalid_pattern",
        )
        await srv.fails("read_spool", {"session": "sh", "from": 10**12}, "invalid_cursor")

        # timeout, with resume_cursor = the spool's size.
        failed = await srv.fails(
            "wait_for", {"session": "sh", "pattern": "NEVER_PRINTED", "timeout_ms": 200}, "timeout"
        )
        equal(failed["resume_cursor"], (await srv.status("sh"))["resume_cursor"], "resume_cursor")
        failed = await srv.fails(
            "wait_prompt",
            {"session": "sh", "from": failed["resume_cursor"] + 0, "timeout_ms": 200},
            "timeout",
        )
        check(isinstance(failed.get("resume_cursor"), int), "wait_prompt's timeout cursor")

        # turn_not_found, no_turn.
        await srv.fails("get_turn", {"turn_id": f"{sh}:9999"}, "turn_not_found")
        await srv.fails("capture", {"turn_id": f"{sh}:9999"}, "turn_not_found")
        await srv.fails("get_turn", {"session": "empty"}, "no_turn", later=True)
        await srv.fails("capture", {"session": "empty"}, "no_turn")

        # broker_unavailable: nothing listens at --socket (and none is started there).
        failed = await lost.fails("list_sessions", {}, "broker_unavailable")
        check(nowhere in failed["message"], "the message names the socket")
        await lost.fails("status", {"session": "sh"}, "broker_unavailable")
        await lost.fails("wait_for", {"session": "sh", "pattern": "x"}, "broker_unavailable")
        check(not os.path.exists(nowhere), "no broker was started at an explicit --socket")

        # route_not_found.
        await srv.fails("route_remove", {"route": "r999"}, "route_not_found")

        # buffer_empty: nothing captured yet on this broker.
        early = os.path.join(DIR, "early.txt")
        await srv.fails("deliver", {"path": early}, "buffer_empty")
        check(not os.path.exists(early), "nothing written")
        await srv.fails("paste", {"session": "empty"}, "buffer_empty")

        # capture, then deliver: to a folder that does not exist (sink_failed), then to a file.
        ex = await srv.exec("sh", "echo DELIVER-ME; echo second line")
        captured = await srv.ok("capture", {"session": "sh"})
        equal(captured["turn_id"], ex["turn_id"], "capture takes the latest turn")
        turn = await srv.ok("get_turn", {"turn_id": ex["turn_id"]})
        equal(turn["content"], "DELIVER-ME\nsecond line", "the turn's text")
        raw = await srv.ok("get_turn", {"turn_id": ex["turn_id"], "format": "raw"})
        equal(captured["byte_length"], len(raw["content"].encode()), "capture's byte_length")
        missing = os.path.join(DIR, "no-such-folder", "out.txt")
        await srv.fails("deliver", {"path": missing}, "sink_failed")
        target = os.path.join(DIR, "delivered.txt")
        delivered = await srv.ok("deliver", {"path": target})
        equal((delivered["path"], delivered["delivered"]), (target, True), "deliver's answer")
        with open(target, encoding="utf-8") as f:
            equal(f.read(), turn["content"], "the delivered file holds the turn's text")
        report("delivered", {"path": target, "text": turn["content"]})
        relative = await srv.ok("deliver", {"path": "relative.txt", "format": "raw"})
        equal(relative["path"], os.path.join(DIR, "relative.txt"), "from clippy-mcp's cwd")

        # paste: into the empty shell, where it shows; into nobody, session_not_found.
        before = (await srv.status("empty"))["resume_cursor"]
        pasted = await srv.ok("paste", {"session": "empty"})
        equal(pasted["pasted"], True, "pasted")
        await srv.ok(
            "wait_for",
            {"session": "empty", "pattern": "DELIVER-ME", "from": before, "timeout_ms": WAIT_MS},
        )
        await srv.fails("paste", {"session": unknown}, "session_not_found")


# Arguments of the wrong type, and the field each message must name (CONTRACTS/MCP.md: "unknown
# fields, missing required fields and wrong types are a tool error with reason invalid_argument
# naming the field (so a model can correct itself)").
WRONG_TYPES = [
    ("wait_for", {"session": "sh", "pattern": "x", "timeout_ms": "soon"}, "timeout_ms"),
    ("send", {"session": "sh", "text": "x", "enter": "yes"}, "enter"),
    ("status", {"session": 42}, "session"),
    ("read_spool", {"session": "sh", "from": -1}, "from"),
    ("list_turns", {"session": "sh", "limit": 1.5}, "limit"),
]


async def scenario_wrong_types():
    async with connect("wrong-types") as srv:
        unnamed = []
        for tool, args, field in WRONG_TYPES:
            failed = await srv.fails(tool, args, "invalid_argument")
            if field not in failed["message"]:
                unnamed.append(f"{tool} {show(args)}: {failed['message']!r} lacks {field!r}")
        check(
            not unnamed,
            "a wrong type's message names the field:\n      " + "\n      ".join(unnamed),
        )


# ---------------------------------------------------------------------------------------------
# 6. Routes and events
# ---------------------------------------------------------------------------------------------


async def scenario_routes_events():
    async with connect("routes") as srv:
        sh = (await srv.status("sh"))["session"]
        py = (await srv.status("py"))["session"]
        equal((await srv.ok("route_list", {}))["routes"], [], "no route yet")
        route = (await srv.ok("route_add", {"from": "sh", "to": "py", "kind": "report"}))["route"]
        equal((route["from"], route["to"], route["kind"]), (sh, py, "report"), "the route")
        rid = route["route"]
        check(isinstance(rid, str) and rid, "a route id")
        routes = (await srv.ok("route_list", {}))["routes"]
        equal([r["route"] for r in routes], [rid], "route_list lists it")
        removed = await srv.ok("route_remove", {"route": rid})
        equal((removed["route"], removed["removed"]), (rid, True), "removed")
        equal((await srv.ok("route_list", {}))["routes"], [], "no route left")
        await srv.fails("route_remove", {"route": rid}, "route_not_found")

        first = await srv.exec("sh", "echo first-event")
        everything = await srv.poll(
            "the first turn's event",
            "events_since",
            {"limit": 1000},
            lambda v: any(e.get("turn_id") == first["turn_id"] for e in v["events"]),
        )
        ids = [e["id"] for e in everything["events"]]
        equal(ids, sorted(set(ids)), "events oldest first, each once")
        equal(everything["last_event_id"], max(ids), "last_event_id is the newest id")
        registered = {e["name"] for e in everything["events"] if e["type"] == "session.registered"}
        check({"sh", "py"} <= registered, "the sessions' registrations")
        completed = [e for e in everything["events"] if e["type"] == "turn.completed"]
        check(any(e["turn_id"] == first["turn_id"] for e in completed), "turn.completed")
        last = everything["last_event_id"]

        second = await srv.exec("sh", "echo second-event")
        newer = await srv.poll(
            "the second turn's event",
            "events_since",
            {"since": last, "types": ["turn.completed"]},
            lambda v: any(e.get("turn_id") == second["turn_id"] for e in v["events"]),
        )
        check(all(e["id"] > last for e in newer["events"]), "only events after since")
        check(all(e["type"] == "turn.completed" for e in newer["events"]), "only the types asked")
        check(not any(e.get("turn_id") == first["turn_id"] for e in newer["events"]), "no old")
        check(newer["last_event_id"] > last, "last_event_id moves on")
        again = await srv.ok("events_since", {"since": newer["last_event_id"]})
        check(
            all(e["id"] > newer["last_event_id"] for e in again["events"]),
            "since the newest: only what is newer still",
        )
        check(again["last_event_id"] >= newer["last_event_id"], "last_event_id never goes back")

        one = await srv.ok("events_since", {"limit": 1})
        equal(len(one["events"]), 1, "limit 1")
        equal(one["more"], True, "more follow")
        check(str(one["last_event_id"]) in one.get("hint", ""), "the hint names the cursor")
        following = await srv.ok("events_since", {"since": one["last_event_id"], "limit": 1})
        check(following["events"][0]["id"] > one["last_event_id"], "the next one")


# ---------------------------------------------------------------------------------------------
# 7. Resources, their notifications, and end_session
# ---------------------------------------------------------------------------------------------


async def read_resource_fails(srv, uri):
    LAST[0] = f"resources/read {uri}"
    try:
        result = await srv.session.read_resource(uri)
    except MCPError as error:
        print(f"   resources/read {uri} -> MCPError {error.code} {error.message!r}", flush=True)
        equal(error.code, -32002, f"{uri}: resource not found")
        return error
    check(False, f"reading {uri} is a JSON-RPC error, not {result!r}")


async def scenario_resources():
    heard = Heard()
    async with connect("resources", heard=heard) as srv:
        sh = (await srv.status("sh"))["session"]
        ex = await srv.exec("sh", "echo RESOURCE-TEXT")
        listed = await srv.session.list_resources()
        uris = {str(r.uri): r for r in listed.resources}
        print(f"   resources/list -> {sorted(uris)}", flush=True)
        for uri in [
            "clippy://session/sh/screen",
            "clippy://session/sh/turn/latest",
            "clippy://session/empty/screen",
        ]:
            check(uri in uris, f"{uri} is listed: {sorted(uris)}")
            equal(uris[uri].mime_type, "text/plain", f"{uri}'s type")
        check("clippy://session/empty/turn/latest" not in uris, "no latest turn without a turn")

        turn = await srv.ok("get_turn", {"session": "sh"})
        equal(turn["turn_id"], ex["turn_id"], "the latest turn")
        for uri in ["clippy://session/sh/turn/latest", f"clippy://session/{sh}/turn/latest"]:
            LAST[0] = f"resources/read {uri}"
            read = await srv.session.read_resource(uri)
            equal(len(read.contents), 1, f"{uri}: one content")
            equal(str(read.contents[0].uri), uri, f"{uri}: its uri")
            equal(read.contents[0].text, turn["content"], f"{uri}: the latest turn's text")
        equal(turn["content"], "RESOURCE-TEXT", "the text")
        screen = await srv.session.read_resource("clippy://session/sh/screen")
        check("RESOURCE-TEXT" in screen.contents[0].text, "the screen resource shows the output")

        for uri in [
            "clippy://session/no-such-session/turn/latest",
            "clippy://session/no-such-session/screen",
            "clippy://session/empty/turn/latest",
            "clippy://session/sh/turn/1",
            "file:///etc/passwd",
        ]:
            await read_resource_fails(srv, uri)

        # A subscribed latest turn: a completed turn sends resources/updated. The event follower
        # starts at `initialized`; a turn it may not have seen yet is followed by another.
        uri = "clippy://session/sh/turn/latest"
        await srv.session.subscribe_resource(uri)
        deadline = time.monotonic() + POLL_DEADLINE
        n = 0
        while uri not in heard.updated:
            check(time.monotonic() < deadline, f"resources/updated for {uri}: {heard.updated}")
            n += 1
            await srv.exec("sh", f"echo update-{n}")
            await heard.until(lambda: uri in heard.updated, 5)
        read = await srv.session.read_resource(uri)
        equal(read.contents[0].text, f"update-{n}", "the updated turn")

        # A session that registers now: resources/list_changed, and it is listed.
        changed = heard.list_changed
        spawned = subprocess.run(
            [CTL, "spawn", "--name", "late", "--shell-integration", "--cwd", HOME, "--",
             "bash", "--norc", "--noprofile"],
            capture_output=True,
            text=True,
            timeout=CALL_TIMEOUT,
        )
        print(f"   clippy-ctl spawn late -> {spawned!r}", flush=True)
        equal(spawned.returncode, 0, f"spawn late: {spawned.stderr}")
        report("late_session", spawned.stdout.strip())
        check(
            await heard.until(lambda: heard.list_changed > changed, POLL_DEADLINE),
            "resources/list_changed when a session registers",
        )
        listed = await srv.session.list_resources()
        check(
            "clippy://session/late/screen" in {str(r.uri) for r in listed.resources},
            "the new session is listed",
        )

        # end_session: nothing runs (idle, once at its first prompt), then a running command is
        # interrupted.
        await srv.ok("wait_prompt", {"session": "late", "from": 0, "timeout_ms": WAIT_MS})
        ended = await srv.ok("end_session", {"session": "late", "timeout_ms": WAIT_MS})
        equal(ended["outcome"], "idle", "nothing ran")
        before = (await srv.status("late"))["resume_cursor"]
        await srv.ok("send", {"session": "late", "text": "sleep 1000", "enter": True})
        await srv.poll(
            "sleep running",
            "status",
            {"session": "late"},
            lambda v: v["status"]["mode"] == "busy" and v["status"]["current_input"],
        )
        ended = await srv.ok("end_session", {"session": "late", "timeout_ms": WAIT_MS})
        equal(ended["outcome"], "interrupted", "Ctrl+C brought the prompt back")
        check(ended["resume_cursor"] >= before, "end_session's resume_cursor")
        status = await srv.status("late")
        equal(status["mode"], "idle", "idle after the interrupt")
        ex = await srv.exec("late", "echo alive")
        equal(ex["output"], "alive", "the shell works on")


# ---------------------------------------------------------------------------------------------
# 8. An orchestrator's loop: spawn_session, send / wait_prompt / get_turn, a permission wait,
#    gated handoffs approved and denied, history and search_history (issue 30)
# ---------------------------------------------------------------------------------------------


def agent_bin():
    """A folder with the hooked test agent as `claude` (it runs Claude Code's hooks) and the
    clippy-ctl its hooks call."""
    bin_dir = os.path.join(DIR, "agent-bin")
    os.makedirs(bin_dir, exist_ok=True)
    for name, target in [("claude", HOOKED_AGENT), ("clippy-ctl", CTL)]:
        link = os.path.join(bin_dir, name)
        if not os.path.lexists(link):
            os.symlink(target, link)
    return bin_dir


async def spawn_idle(srv, args):
    """spawn_session, checked, and its first prompt waited for; the result."""
    spawned = await srv.ok("spawn_session", args)
    check(isinstance(spawned["session"], str) and spawned["session"], "a session id")
    equal(spawned["name"], args.get("name"), "the name it was given")
    equal(spawned["status"]["session"], spawned["session"], "its status is its own")
    await srv.ok("wait_prompt", {"session": spawned["session"], "from": 0, "timeout_ms": WAIT_MS})
    return spawned


async def ask(srv, session, text):
    """send + wait_prompt from the cursor before it: the turn_id of the turn that answered."""
    cursor = (await srv.status(session))["resume_cursor"]
    await srv.ok("send", {"session": session, "text": text, "enter": True})
    done = await srv.ok(
        "wait_prompt", {"session": session, "from": cursor, "timeout_ms": WAIT_MS}
    )
    check(done.get("turn_id"), f"wait_prompt names the turn that answered {text!r}")
    return done


async def scenario_orchestrate():
    check(HOOKED_AGENT and os.path.exists(HOOKED_AGENT), f"the hooked agent: {HOOKED_AGENT!r}")
    bin_dir = agent_bin()
    async with connect("orchestrate") as srv:
        check("spawn_session" in srv.init.instructions, "the instructions teach spawn_session")
        check("answer" in srv.init.instructions, "and answering a waiting agent")

        # Two sessions started through MCP: the hooked agent (words, env, size) and bash (one
        # command line, shell integration).
        agent = await spawn_idle(
            srv,
            {
                "command": [os.path.join(bin_dir, "claude")],
                "name": "agent",
                "cwd": HOME,
                "env": {"PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin"},
                "size": {"cols": 100, "rows": 30},
            },
        )
        sh = await spawn_idle(
            srv,
            {
                "command": "bash --norc --noprofile",
                "name": "sh",
                "cwd": HOME,
                "env": {"ORCH_MARK": "on"},
                "shell_integration": True,
            },
        )
        report("spawned", {"agent": agent["session"], "sh": sh["session"]})
        screen = await srv.ok("screen", {"session": "agent"})
        equal((screen["cols"], screen["rows"]), (100, 30), "the size asked for")
        listed = {s["name"]: s for s in (await srv.ok("list_sessions", {}))["sessions"]}
        check({"agent", "sh"} <= set(listed), f"both are listed: {sorted(listed)}")
        equal(listed["sh"]["command"], ["bash", "--norc", "--noprofile"], "the line's words")
        pwd = await srv.exec("sh", "pwd")
        equal(pwd["output"], real(HOME), "cwd is the folder asked for")
        mark = await srv.exec("sh", "echo mark=$ORCH_MARK")
        equal(mark["output"], "mark=on", "the env asked for")

        # Driven from the orchestrator's side: send, wait_prompt, get_turn (the agent's own
        # message through its hooks, and the screen's text).
        done = await ask(srv, "agent", "summarise the plan")
        message = await srv.ok("get_turn", {"turn_id": done["turn_id"], "format": "message"})
        equal(message["content"], "Read **18** characters.\n\nThat is all.", "the message")
        text = await srv.ok("get_turn", {"turn_id": done["turn_id"]})
        check("Read 18 characters." in text["content"], f"the text: {text['content']!r}")

        # A permission wait: the agent asks; status shows what for.
        cursor = (await srv.status("agent"))["resume_cursor"]
        await srv.ok("send", {"session": "agent", "text": "perm", "enter": True})
        waiting = await srv.poll(
            "the agent waits for a permission",
            "status",
            {"session": "agent"},
            lambda v: v["status"].get("waiting"),
        )
        report("waiting", waiting["status"]["waiting"])
        # Answered through the tool: an id that is not the wait shown now is refused, the
        # current one is pressed in the agent's dialog, and a second answer finds nothing waiting.
        wait_id = waiting["status"]["waiting"]["id"]
        await srv.fails(
            "answer", {"session": "agent", "decision": "allow", "id": wait_id + 7}, "stale_answer"
        )
        answered = await srv.ok("answer", {"session": "agent", "decision": "allow", "id": wait_id})
        equal((answered["id"], answered["decision"]), (wait_id, "allow"), "the wait answered")
        await srv.fails("answer", {"session": "agent", "decision": "deny"}, "not_waiting")
        done = await srv.ok(
            "wait_prompt", {"session": "agent", "from": cursor, "timeout_ms": WAIT_MS}
        )
        message = await srv.ok("get_turn", {"turn_id": done["turn_id"], "format": "message"})
        # The test agent draws a dialog: Enter picks its selected option, `1. Yes`.
        equal(message["content"], "You answered allow.", "the agent went on")
        await srv.poll(
            "the wait is over",
            "status",
            {"session": "agent"},
            lambda v: not v["status"].get("waiting"),
        )

        # Gated handoffs from the shell to the agent (what sh prints is the agent's next
        # prompt): one approved, one denied.
        route = (
            await srv.ok(
                "route_add", {"from": "sh", "to": "agent", "gated": True, "template": "{turn}"}
            )
        )["route"]
        equal(route["gated"], True, "a gated route")

        async def parked(turn_id):
            inbox = await srv.poll(
                f"the handoff of {turn_id} awaits approval",
                "inbox",
                {"session": "agent"},
                lambda v: any(i["turn_id"] == turn_id for i in v["items"]),
            )
            equal(inbox["session"], agent["session"], "the inbox's session")
            item = next(i for i in inbox["items"] if i["turn_id"] == turn_id)
            equal(item["state"], "awaiting_approval", "gated")
            check(item["approval"], "an approval id")
            return item["approval"]

        agent_last = (await srv.ok("list_turns", {"session": "agent", "limit": 1}))["turns"][0]
        first = await srv.exec("sh", "echo handoff-alpha")
        approval = await parked(first["turn_id"])
        approved = await srv.ok("approve", {"approval": approval})
        equal((approved["approval"], approved["approved"]), (approval, True), "approved")
        handed = await new_turn(srv, "agent", agent_last["turn_id"])
        message = await srv.ok("get_turn", {"turn_id": handed["turn_id"], "format": "message"})
        equal(
            message["content"],
            "Read **13** characters.\n\nThat is all.",
            "the approved handoff was the agent's prompt",
        )
        await srv.fails("approve", {"approval": approval}, "approval_not_found")

        second = await srv.exec("sh", "echo handoff-beta")
        approval = await parked(second["turn_id"])
        denied = await srv.ok("deny", {"approval": approval})
        equal((denied["approval"], denied["denied"]), (approval, True), "denied")
        inbox = await srv.ok("inbox", {"session": "agent"})
        equal(inbox["items"], [], "nothing waits for the agent any more")
        await srv.fails("deny", {"approval": approval}, "approval_not_found")
        resolved = await srv.poll(
            "both approvals resolved",
            "events_since",
            {"types": ["approval.resolved"], "limit": 1000},
            lambda v: len(v["events"]) >= 2,
        )
        equal(
            [e["reason"] for e in resolved["events"]],
            ["approved", "denied"],
            "approval.resolved reasons",
        )
        await srv.ok("route_remove", {"route": route["route"]})
        after = await ask(srv, "agent", "after deny")
        listed = (await srv.ok("list_turns", {"session": "agent", "limit": 2}))["turns"]
        equal(
            [t["turn_id"] for t in listed],
            [after["turn_id"], handed["turn_id"]],
            "no turn of the denied handoff in the agent",
        )

        # history: the agent's turns, newest first, and the time filters.
        history = await srv.poll(
            "the agent's turns in the history store",
            "history",
            {"session": "agent"},
            lambda v: any(t["turn_id"] == after["turn_id"] for t in v["turns"]),
        )
        ids = [t["turn_id"] for t in history["turns"]]
        check({handed["turn_id"], after["turn_id"]} <= set(ids), f"the agent's turns: {ids}")
        stamps = [t["timestamp"] for t in history["turns"]]
        equal(stamps, sorted(stamps, reverse=True), "newest first")
        check(all(t["session"] == agent["session"] for t in history["turns"]), "its own")
        recent = await srv.ok("history", {"since": "1h", "limit": 2})
        equal(len(recent["turns"]), 2, "limit 2")
        old = await srv.ok("history", {"until": "2000-01-01"})
        equal(old["turns"], [], "nothing before 2000")

        # search_history: a word only one turn has.
        found = await srv.exec("sh", "echo zebraquokka")
        hits = await srv.poll(
            "the turn with the word, found",
            "search_history",
            {"query": "zebraquokka", "session": "sh"},
            lambda v: any(h["turn_id"] == found["turn_id"] for h in v["hits"]),
        )
        hit = next(h for h in hits["hits"] if h["turn_id"] == found["turn_id"])
        check("[zebraquokka]" in hit["snippet"], f"the snippet marks the word: {hit!r}")
        equal((hit["session"], hit["name"]), (sh["session"], "sh"), "the hit's session")
        equal(hits["query"], "zebraquokka", "the query")
        none = await srv.ok("search_history", {"query": "zebraquokka", "until": "2000-01-01"})
        equal(none["hits"], [], "nothing that old")
        report("found", found["turn_id"])

        # Arguments refused, each naming what is wrong.
        for args, field in [
            ({"command": []}, "command"),
            ({"command": ""}, "command"),
            ({"command": "echo 'open"}, "command"),
            ({"command": ["bash"], "size": {"cols": 0, "rows": 10}}, "size"),
            ({"command": ["bash"], "env": {"A=B": "x"}}, "env"),
            ({"command": ["bash"], "env": {"XDG_RUNTIME_DIR": "/tmp"}}, "env"),
            ({"command": ["bash"], "name": " "}, "name"),
        ]:
            failed = await srv.fails("spawn_session", args, "invalid_argument")
            check(field in failed["message"], f"{failed['message']!r} names {field}")
        failed = await srv.fails(
            "spawn_session",
            {"command": ["bash"], "cwd": os.path.join(DIR, "no-such-folder")},
            "invalid_argument",
        )
        check("no-such-folder" in failed["message"], "the folder is named")
        # What clippy-session itself refuses: a program that does not run, an unknown preset.
        failed = await srv.fails(
            "spawn_session", {"command": ["/nonexistent/program"]}, "invalid_argument"
        )
        check("/nonexistent/program" in failed["message"], "the program is named")
        failed = await srv.fails(
            "spawn_session", {"command": ["bash"], "preset": "nosuch"}, "invalid_argument"
        )
        check("nosuch" in failed["message"], "the preset is named")
        for tool, args, field in [
            ("history", {"since": "yesterday"}, "since"),
            ("history", {"until": "2026-02-30"}, "until"),
            ("search_history", {"query": "x", "since": "soon"}, "since"),
            ("search_history", {"query": "  "}, "query"),
            ("history", {"limit": 0}, "limit"),
        ]:
            failed = await srv.fails(tool, args, "invalid_argument")
            check(field in failed["message"], f"{failed['message']!r} names {field}")
        failed = await srv.fails("history", {"since": "1h", "until": "2h"}, "invalid_argument")
        check("not before" in failed["message"], failed["message"])
        await srv.fails("inbox", {"session": "no-such-session"}, "session_not_found")
        await srv.fails("approve", {"approval": "a999"}, "approval_not_found")
        await srv.fails("deny", {"approval": "a999"}, "approval_not_found")


# ---------------------------------------------------------------------------------------------

SCENARIOS = {
    "tools": scenario_tools,
    "raw": scenario_raw,
    "seed_cursors": scenario_seed_cursors,
    "seed_guess": scenario_seed_guess,
    "repl": scenario_repl,
    "truncation": scenario_truncation,
    "errors": scenario_errors,
    "wrong_types": scenario_wrong_types,
    "routes_events": scenario_routes_events,
    "resources": scenario_resources,
    "orchestrate": scenario_orchestrate,
}


async def main(name):
    with anyio.fail_after(SCENARIO_DEADLINE):
        await SCENARIOS[name]()
    if LATER:
        raise AssertionError("\n  ".join(["failed expectations:", *LATER]))


if __name__ == "__main__":
    scenario = sys.argv[1]
    if scenario not in SCENARIOS:
        sys.exit(f"unknown scenario {scenario!r}: one of {', '.join(SCENARIOS)}")
    anyio.run(main, scenario)
    print(f"PASS {scenario}", flush=True)
