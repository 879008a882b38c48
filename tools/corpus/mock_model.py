#!/usr/bin/env python3
"""Scripted mock model server for recording real agent CLIs (stdlib only).

Listens on 127.0.0.1 and speaks just enough of:
  * Anthropic Messages API      POST /v1/messages (SSE or JSON), /v1/messages/count_tokens
  * OpenAI Responses API        POST /v1/responses (SSE)           -- Codex
  * OpenAI Chat Completions     POST /v1/chat/completions (SSE/JSON) -- Aider / litellm
  * Gemini                      POST /v1beta/models/M:streamGenerateContent, :generateContent, :countTokens
Anything else gets a harmless 200 "{}" (GET) / 404 and is logged.

The reply is chosen from replies.json by a keyword in the last user text
message; after a tool result the rule's "after" text is sent. Timing is
realistic: first token after ~300 ms, then small chunks (slow replies: one
token every 150 ms).

    python3 mock_model.py --port 0 --port-file /tmp/port [--replies replies.json] [--log FILE]
"""
import argparse
import json
import os
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
FIRST_TOKEN_DELAY = 0.3
WORD_DELAY = 0.15
LINE_DELAY = 0.05

RULES = {}
LOG_LOCK = threading.Lock()
ARGS = None


def log(obj):
    obj = dict(obj)
    obj["t"] = round(time.time(), 3)
    obj["session"] = ARGS.name if ARGS else ""
    line = json.dumps(obj, ensure_ascii=False)
    with LOG_LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


# ---------------------------------------------------------------------------
# Reply planning: a reply is a list of (delay_before, kind, payload) chunks.
#   ("text", str)  or  ("tool", {"command":..., "description":...})
# ---------------------------------------------------------------------------

def find_rule(user_text):
    t = (user_text or "").lower()
    for r in RULES["rules"]:
        if r["match"].lower() in t:
            return r
    return None


def words_chunks(text, delay=WORD_DELAY):
    """Split text into word-ish tokens keeping whitespace/newlines."""
    toks = re.findall(r"\S+\s*|\s+", text)
    out = []
    first = True
    for tok in toks:
        out.append((FIRST_TOKEN_DELAY if first else delay, "text", tok))
        first = False
    return out


def plan(user_text, after_tool, flavor):
    """Return (chunks, rule_name)."""
    chunks, name = plan1(user_text, after_tool, flavor)
    return pad(chunks), name


def plan1(user_text, after_tool, flavor):
    rule = find_rule(user_text)
    if rule is None:
        return words_chunks(RULES["default"]), "default"
    kind = rule.get("kind", "text")
    if after_tool and kind == "tool":
        return words_chunks(rule["after"]), rule["match"] + "/after"
    if kind == "text":
        return words_chunks(rule["reply"]), rule["match"]
    if kind == "long":
        lines = [rule["template"].format(n=n) for n in range(1, rule["lines"] + 1)]
        chunks = [(FIRST_TOKEN_DELAY, "text", rule["intro"] + "\n\n")]
        # The Gemini API sends big chunks (several lines each); the others stream a line at a time.
        per = 5 if flavor == "gemini" else 1
        for i in range(0, len(lines), per):
            chunks.append((LINE_DELAY * per, "text", "".join(ln + "\n" for ln in lines[i:i + per])))
        chunks.append((LINE_DELAY, "text", "\n" + rule["outro"]))
        return chunks, rule["match"]
    if kind == "slow":
        text = "\n\n".join(rule["template"].format(n=n) for n in range(1, rule["lines"] + 1))
        return words_chunks(text, rule.get("token_delay", 0.15)), rule["match"]
    if kind == "tool":
        if flavor == "chat":  # aider: no tools, it suggests a shell command in text
            return words_chunks(rule.get("aider_reply", rule["before"])), rule["match"] + "/aider"
        chunks = words_chunks(rule["before"])
        chunks.append((0.2, "tool", {"command": rule["command"], "description": rule.get("description", "")}))
        return chunks, rule["match"] + "/tool"
    return words_chunks(RULES["default"]), "default"


MIN_REPLY_SECONDS = 1.6


def pad(chunks):
    """Make every reply last at least MIN_REPLY_SECONDS so the busy state is visible."""
    total = sum(d for d, _, _ in chunks)
    if chunks and total < MIN_REPLY_SECONDS:
        d, k, p = chunks[-1]
        chunks[-1] = (d + MIN_REPLY_SECONDS - total, k, p)
    return chunks


def full_text(chunks):
    return "".join(p for _, k, p in chunks if k == "text")


# ---------------------------------------------------------------------------
# HTTP handler
# ---------------------------------------------------------------------------

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mock-model/1"

    def log_message(self, fmt, *a):  # silence default stderr logging
        pass

    # -- plumbing --
    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
        enc = self.headers.get("Content-Encoding", "")
        if enc == "gzip":
            import gzip
            raw = gzip.decompress(raw)
        elif enc:
            log({"warn": "content-encoding " + enc})
        try:
            return json.loads(raw or b"{}")
        except Exception:
            return {"_raw": raw[:500].decode("utf-8", "replace")}

    def send_json(self, obj, status=200):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def sse(self, event, obj):
        s = ""
        if event:
            s += "event: %s\n" % event
        s += "data: %s\n\n" % (obj if isinstance(obj, str) else json.dumps(obj))
        self.chunk(s)

    # -- routing --
    def do_GET(self):
        log({"method": "GET", "path": self.path})
        if re.search(r"/models/?(\?|$)", self.path):
            return self.send_json({"object": "list", "data": [{"id": "mock-model", "object": "model", "created": 0, "owned_by": "mock"}],
                                   "models": []})
        self.send_json({}, 200)

    def do_HEAD(self):
        log({"method": "HEAD", "path": self.path})
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = self.read_body()
        dump = os.environ.get("MOCK_DUMP_DIR")
        if dump:  # debugging aid: keep every request body
            os.makedirs(dump, exist_ok=True)
            with open(os.path.join(dump, "%.3f.json" % time.time()), "w") as f:
                json.dump({"path": self.path, "headers": dict(self.headers), "body": body}, f, indent=1)
        path = self.path.split("?")[0]
        try:
            if path.endswith("/messages/count_tokens"):
                log({"path": self.path, "api": "anthropic-count"})
                return self.send_json({"input_tokens": 1234})
            if path.endswith("/messages"):
                return self.anthropic(body)
            if path.endswith("/responses"):
                return self.openai_responses(body)
            if path.endswith("/chat/completions"):
                return self.chat(body)
            if ":streamGenerateContent" in path or ":generateContent" in path:
                return self.gemini(body, stream=":streamGenerateContent" in path)
            if ":countTokens" in path:
                log({"path": self.path, "api": "gemini-count"})
                return self.send_json({"totalTokens": 1234})
            log({"path": self.path, "unknown": True, "body": str(body)[:300]})
            self.send_json({"error": {"type": "not_found", "message": "mock: unknown endpoint"}}, 404)
        except (BrokenPipeError, ConnectionResetError) as e:
            log({"path": self.path, "client_gone": str(e)})
        finally:
            # When the reply (a whole stream) was written: turn-completion delays are measured from here.
            log({"path": self.path, "ended": True})

    # -- Anthropic ---------------------------------------------------------
    def anthropic(self, body):
        msgs = body.get("messages", [])
        user_text, after_tool = "", False
        for i, m in enumerate(msgs):
            if m.get("role") != "user":
                continue
            c = m.get("content")
            if isinstance(c, str):
                txt, has_result = c, False
            else:
                txt = "\n".join(b.get("text", "") for b in c if b.get("type") == "text")
                has_result = any(b.get("type") == "tool_result" for b in c)
            # ignore Claude Code's pure <system-reminder> blocks
            visible = re.sub(r"<system-reminder>.*?</system-reminder>", "", txt, flags=re.S).strip()
            if i == len(msgs) - 1:
                # A refused tool's result sent along with the next question (Claude Code after
                # "No" and a new prompt) is a new question, not the tool's outcome.
                after_tool = has_result and not visible
            if visible:
                user_text = visible
        system = body.get("system", "")
        if isinstance(system, list):
            system = "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
        tools = [t.get("name") for t in body.get("tools", []) or []]
        side = not tools
        model = body.get("model", "mock")
        if side:
            # Side requests (quota probe, topic/title detection, summaries): short neutral answers.
            if '"title"' in system:
                chunks = [(0.3, "text", json.dumps({"title": "Corpus test session"}))]
            elif "json" in system.lower() or "isNewTopic" in system:
                chunks = [(0.1, "text", json.dumps({"isNewTopic": False, "title": None}))]
            else:
                chunks = [(0.1, "text", "Mock")]
            rule = "side"
        else:
            chunks, rule = plan(user_text, after_tool, "anthropic")
        log({"api": "anthropic", "path": self.path, "model": model, "stream": body.get("stream", False),
             "tools": len(tools), "user": user_text[:120], "after_tool": after_tool, "rule": rule,
             "system": system[:1500] if side else system[:160], "max_tokens": body.get("max_tokens")})
        tool_name = "Bash" if "Bash" in tools else (tools[0] if tools else "Bash")
        mid = "msg_" + uuid.uuid4().hex[:24]
        usage = {"input_tokens": 120, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if not body.get("stream"):
            time.sleep(sum(d for d, _, _ in chunks))
            content = []
            text = full_text(chunks)
            if text:
                content.append({"type": "text", "text": text})
            stop = "end_turn"
            for _, k, p in chunks:
                if k == "tool":
                    content.append({"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": tool_name,
                                    "input": p})
                    stop = "tool_use"
            return self.send_json({"id": mid, "type": "message", "role": "assistant", "model": model,
                                   "content": content, "stop_reason": stop, "stop_sequence": None,
                                   "usage": dict(usage, output_tokens=20)})
        self.start_sse()
        self.sse("message_start", {"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}})
        idx = -1
        open_text = False
        stop = "end_turn"
        ntok = 0
        for delay, kind, payload in chunks:
            time.sleep(delay)
            if kind == "text":
                if not open_text:
                    idx += 1
                    self.sse("content_block_start", {"type": "content_block_start", "index": idx,
                                                     "content_block": {"type": "text", "text": ""}})
                    open_text = True
                self.sse("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                 "delta": {"type": "text_delta", "text": payload}})
                ntok += 1
            else:
                if open_text:
                    self.sse("content_block_stop", {"type": "content_block_stop", "index": idx})
                    open_text = False
                idx += 1
                self.sse("content_block_start", {"type": "content_block_start", "index": idx, "content_block": {
                    "type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": tool_name, "input": {}}})
                self.sse("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                 "delta": {"type": "input_json_delta", "partial_json": json.dumps(payload)}})
                self.sse("content_block_stop", {"type": "content_block_stop", "index": idx})
                stop = "tool_use"
        if open_text:
            self.sse("content_block_stop", {"type": "content_block_stop", "index": idx})
        self.sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": {"output_tokens": max(ntok, 1)}})
        self.sse("message_stop", {"type": "message_stop"})
        self.end_chunks()

    # -- OpenAI Responses (Codex) ------------------------------------------------
    def openai_responses(self, body):
        items = body.get("input", [])
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": items}]}]
        user_text, after_tool = "", False
        for it in items:
            if it.get("type", "message") == "message" and it.get("role") == "user":
                c = it.get("content")
                txt = c if isinstance(c, str) else "\n".join(p.get("text", "") for p in c or [])
                if txt.strip() and not txt.lstrip().startswith("<"):  # skip <environment_context>, <user_instructions>
                    user_text = txt
        if items:
            after_tool = items[-1].get("type", "").endswith("_output")
        tools = body.get("tools", []) or []
        tnames = [t.get("name") or t.get("type") for t in tools]
        if not tnames:  # side request (task title)
            chunks, rule = [(0.2, "text", "Corpus test session")], "side"
        else:
            chunks, rule = plan(user_text, after_tool, "responses")
        log({"api": "responses", "path": self.path, "model": body.get("model"), "user": user_text[:120],
             "after_tool": after_tool, "rule": rule, "tools": tnames, "last_item": items[-1].get("type") if items else None})
        rid = "resp_" + uuid.uuid4().hex[:24]
        self.start_sse()
        self.sse("response.created", {"type": "response.created", "response": {"id": rid, "status": "in_progress", "output": []}})
        seq = 0
        out_index = 0
        text_started = False
        msg_id = "msg_" + uuid.uuid4().hex[:24]
        text_acc = ""
        outputs = []

        def close_text():
            nonlocal out_index, text_started
            if not text_started:
                return
            item = {"type": "message", "id": msg_id, "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text_acc, "annotations": []}]}
            self.sse("response.output_text.done", {"type": "response.output_text.done", "item_id": msg_id,
                                                   "output_index": out_index, "content_index": 0, "text": text_acc})
            self.sse("response.output_item.done", {"type": "response.output_item.done", "output_index": out_index, "item": item})
            outputs.append(item)
            out_index += 1
            text_started = False

        for delay, kind, payload in chunks:
            time.sleep(delay)
            if kind == "text":
                if not text_started:
                    text_started = True
                    self.sse("response.output_item.added", {"type": "response.output_item.added", "output_index": out_index,
                             "item": {"type": "message", "id": msg_id, "role": "assistant", "status": "in_progress", "content": []}})
                    self.sse("response.content_part.added", {"type": "response.content_part.added", "item_id": msg_id,
                             "output_index": out_index, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})
                text_acc += payload
                self.sse("response.output_text.delta", {"type": "response.output_text.delta", "item_id": msg_id,
                                                        "output_index": out_index, "content_index": 0, "delta": payload})
            else:
                close_text()
                cmd = payload["command"]
                if "shell_command" in tnames:
                    name, args = "shell_command", {"command": cmd}
                elif "exec_command" in tnames:
                    name, args = "exec_command", {"cmd": cmd, "sandbox_permissions": "require_escalated",
                                                  "justification": "Do you want to create the marker file?"}
                else:
                    name, args = "shell", {"command": ["bash", "-lc", cmd]}
                item = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:20], "call_id": "call_" + uuid.uuid4().hex[:20],
                        "name": name, "arguments": json.dumps(args), "status": "completed"}
                self.sse("response.output_item.added", {"type": "response.output_item.added", "output_index": out_index, "item": dict(item, arguments="")})
                self.sse("response.output_item.done", {"type": "response.output_item.done", "output_index": out_index, "item": item})
                outputs.append(item)
                out_index += 1
        close_text()
        self.sse("response.completed", {"type": "response.completed", "response": {
            "id": rid, "status": "completed", "output": outputs,
            "usage": {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 40,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 1240}}})
        self.end_chunks()

    # -- OpenAI Chat Completions (Aider) ---------------------------------------------
    def chat(self, body):
        msgs = body.get("messages", [])
        user_text = ""
        for m in msgs:
            if m.get("role") == "user":
                c = m.get("content")
                user_text = c if isinstance(c, str) else "\n".join(p.get("text", "") for p in c or [] if isinstance(p, dict))
        after_tool = bool(msgs) and msgs[-1].get("role") == "tool"
        chunks, rule = plan(user_text, after_tool, "chat")
        log({"api": "chat", "path": self.path, "model": body.get("model"), "stream": body.get("stream"),
             "user": user_text[-160:], "rule": rule})
        cid = "chatcmpl-" + uuid.uuid4().hex[:20]
        model = body.get("model", "mock-model")
        if not body.get("stream"):
            time.sleep(sum(d for d, _, _ in chunks))
            return self.send_json({"id": cid, "object": "chat.completion", "created": int(time.time()), "model": model,
                                   "choices": [{"index": 0, "message": {"role": "assistant", "content": full_text(chunks)},
                                                "finish_reason": "stop"}],
                                   "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
        self.start_sse()
        first = True
        for delay, kind, payload in chunks:
            time.sleep(delay)
            delta = {"content": payload}
            if first:
                delta["role"] = "assistant"
                first = False
            self.sse(None, {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
                            "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        self.sse(None, {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
                        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
        self.sse(None, "[DONE]")
        self.end_chunks()

    # -- Gemini ---------------------------------------------------------------------
    def gemini(self, body, stream):
        contents = body.get("contents", [])
        user_text, after_tool = "", False
        for i, c in enumerate(contents):
            if c.get("role", "user") != "user":
                continue
            parts = c.get("parts", [])
            has_fr = any("functionResponse" in p for p in parts)
            txt = "\n".join(p.get("text", "") for p in parts if "text" in p)
            if i == len(contents) - 1:
                after_tool = has_fr
            if txt.strip() and not has_fr:
                user_text = txt
        gc = body.get("generationConfig", {}) or body.get("generation_config", {}) or {}
        decls = []
        for t in body.get("tools", []) or []:
            decls += [d.get("name") for d in t.get("functionDeclarations", []) or []]
        model = self.path.split("/models/")[-1].split(":")[0]
        if gc.get("responseMimeType") == "application/json" or gc.get("responseJsonSchema") or gc.get("responseSchema"):
            obj = {"reasoning": "The model finished its answer; the user speaks next.", "next_speaker": "user",
                   "model_choice": "flash"}
            chunks = [(0.1, "text", json.dumps(obj))]
            rule = "json-side"
        elif not decls:
            chunks, rule = [(0.1, "text", "Mock")], "side"
        else:
            chunks, rule = plan(user_text, after_tool, "gemini")
        log({"api": "gemini", "path": self.path, "model": model, "stream": stream, "user": user_text[:120],
             "after_tool": after_tool, "rule": rule, "tools": decls[:40]})
        shell_tool = next((d for d in decls if "shell" in (d or "")), "run_shell_command")

        def cand(parts, finish=None):
            c = {"content": {"role": "model", "parts": parts}, "index": 0}
            if finish:
                c["finishReason"] = finish
            return {"candidates": [c], "usageMetadata": {"promptTokenCount": 1200, "candidatesTokenCount": 20,
                                                          "totalTokenCount": 1220}, "modelVersion": model}

        if not stream:
            time.sleep(sum(d for d, _, _ in chunks))
            parts = []
            if full_text(chunks):
                parts.append({"text": full_text(chunks)})
            for _, k, p in chunks:
                if k == "tool":
                    parts.append({"functionCall": {"name": shell_tool, "args": p}})
            return self.send_json(cand(parts, "STOP"))
        self.start_sse()
        for delay, kind, payload in chunks:
            time.sleep(delay)
            if kind == "text":
                self.chunk("data: " + json.dumps(cand([{"text": payload}])) + "\r\n\r\n")
            else:
                self.chunk("data: " + json.dumps(cand([{"functionCall": {"name": shell_tool, "args": payload}}])) + "\r\n\r\n")
        self.chunk("data: " + json.dumps(cand([{"text": ""}], "STOP")) + "\r\n\r\n")
        self.end_chunks()


def main():
    global ARGS, RULES
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--port-file")
    ap.add_argument("--replies", default=os.path.join(HERE, "replies.json"))
    ap.add_argument("--name", default="")
    ARGS = ap.parse_args()
    with open(ARGS.replies) as f:
        RULES = json.load(f)
    srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    if ARGS.port_file:
        tmp = ARGS.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.rename(tmp, ARGS.port_file)
    log({"listening": port})
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
