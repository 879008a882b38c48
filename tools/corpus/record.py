#!/usr/bin/env python3
"""Record a real program running in a fresh PTY, driven by a step script.

Usage:
    python3 tools/corpus/record.py tools/corpus/scripts/claude-basic.json [--out DIR] [--no-mock]

Writes <out>/<name>.cast (asciicast v2 with "o", "i" and "r" events, and "h" events with
"hooks": true),
<out>/<name>.out (raw output bytes exactly as read from the PTY master) and
<out>/<name>.json (sidecar with the expected turns).

Script format (JSON):
{
  "name": "claude-basic", "agent": "claude-code", "preset": "claude",
  "command": ["claude"],                 # argv, run with execvpe
  "version_command": ["claude", "--version"],   # optional, fills agent_version
  "agent_version": "x",                  # optional fixed version instead
  "size": [120, 40],
  "cwd": "/tmp/corpus-work/claude",      # created if missing
  "setup": "shell snippet",              # optional, run with bash -c before the child (not recorded)
  "env": {"K": "V"},                     # added to a minimal environment; "$MOCK_URL" and "$NAME" are expanded
  "mock": true,                          # start tools/corpus/mock_model.py for this recording
  "hooks": true,                         # wire the agent's own hooks (claude/codex/gemini preset) to
                                         # `clippy-ctl hook AGENT` and record each report as an "h" event
  "steps": [
    {"wait_for": "regex", "timeout": 30, "since": "send"|"start"|"mark"|"now"},
    {"wait_for_raw": "regex"},           # same, on the decoded output with escapes kept
    {"send": "text", "typed": true, "delay": 0.05},   # typed char by char, or one write
    {"paste": "text"},                   # one write, as a terminal pastes: inside ESC[200~ … ESC[201~
                                         # when the child turned bracketed paste on, "\n" sent as "\r"
    {"key": "enter"|"ctrl_c"|"ctrl_d"|"esc"|"up"|"down"|"tab"},
    {"ctrl_c": true},
    {"sleep": 1.5},
    {"resize": "100x30"},
    {"mark": true},                      # sets the position used by since="mark"
    {"wait_exit": 15},                   # record until the child exits
    {"wait_hook": "regex", "count": 2, "timeout": 15}   # with "hooks": until `count` hook reports
                                         # in all match the regex (on the report's text)
  ],
  "turns": [...], "notes": "..."
}

Terminal queries the child sends (DSR cursor position, DA1/DA2, OSC 10/11
colour queries, XTWINOPS size, DECRQM) are answered the way xterm would, and
the replies are recorded as "i" events (they are bytes written to the child).
The cursor position for CPR replies comes from a pyte screen that follows the
output (pip install pyte); without pyte the reply is the last row.

With "hooks": true the recorder does for the agent what clippy-session does for one run: it
listens on a unix stream socket of its own, names it in CLIPPY_HOOK_SOCKET, and adds the agent's
per-run hook wiring (HookWiring below, the same as clippy_hooks::per_run) pointing at the built
`target/debug/clippy-ctl hook AGENT`. Each report (one connection, read to its end: the line
`clippy-hook 1 AGENT` and the agent's JSON payload) becomes an event [t, "h", "<the report>"],
stamped after the PTY output that was pending when it arrived.
"""
import argparse
import codecs
import errno
import fcntl
import json
import os
import re
import select
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
DEFAULT_OUT = os.path.join(REPO, "crates", "clippy-turn", "tests", "corpus")

try:
    import pyte  # optional, for realistic cursor position reports and screen dumps
except ImportError:  # pragma: no cover
    pyte = None

if pyte is not None:
    class TolerantScreen(pyte.Screen):
        """pyte.Screen that ignores private SGR (e.g. XTQMODKEYS `CSI > 4 ; ? m`)."""
        def select_graphic_rendition(self, *attrs, **kw):
            if kw.get("private"):
                return
            super().select_graphic_rendition(*attrs)

KEYS = {
    "enter": b"\r", "ctrl_c": b"\x03", "ctrl_d": b"\x04", "esc": b"\x1b",
    "up": b"\x1b[A", "down": b"\x1b[B", "right": b"\x1b[C", "left": b"\x1b[D",
    "tab": b"\t", "backspace": b"\x7f", "shift_tab": b"\x1b[Z",
}

ANSI_RE = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"      # OSC
    r"|\x1b[P^_X][^\x1b]*\x1b\\"                # DCS/PM/APC/SOS
    r"|\x1b\[[0-?]*[ -/]*[@-~]"                 # CSI
    r"|\x1b[ -/]*[0-~]"                          # other ESC sequences
)
MOVE_RE = re.compile(r"\x1b\[[0-9;]*[ABCDEFGHdf]")


def strip_ansi(text):
    """ANSI-stripped view used by wait_for: cursor moves become a space or newline."""
    def mv(m):
        return "\n" if m.group(0)[-1] in "ABEFHdf" else " "
    text = MOVE_RE.sub(mv, text)
    text = ANSI_RE.sub("", text)
    return text.replace("\r\n", "\n").replace("\r", "\n")


# Terminal queries and xterm-like answers.
QUERY_RE = re.compile(
    rb"\x1b\[(?P<cpr>\??6)n"
    rb"|\x1b\[(?P<da1>0?)c"
    rb"|\x1b\[>(?P<da2>0?)c"
    rb"|\x1b\](?P<oscn>1[01]);\?(?:\x07|\x1b\\)"
    rb"|\x1b\[(?P<winop>1[48])t"
    rb"|\x1b\[\?(?P<decrqm>\d+)\$p"
    rb"|\x1b\[\?u"
    rb"|\x1b\](?P<ps>7501);\?(?:\x07|\x1b\\)"
)


# --- the agents' own hooks ("hooks": true) -----------------------------------------------------
#
# KEEP IN SYNC with crates/clippy-hooks/src/wiring.rs (`per_run`, `claude_hooks`, `gemini_hooks`,
# `HookCommand::shell_line`, `toml_string`) and wire.rs (`SOCKET_ENV`, `MAX_REPORT_BYTES`): the
# recorder wires an agent's hooks exactly as clippy-session does for one run, so a recording
# holds the reports a wrapped agent would send. Key order is serde_json's (sorted keys).

HOOK_SOCKET_ENV = "CLIPPY_HOOK_SOCKET"
MAX_REPORT_BYTES = 16 * 1024 * 1024
# The corpus's claude-hooks-* recordings were made when clippy also wired UserPromptSubmit and ran
# the hooks in the foreground; clippy now wires neither (CONTRACTS/HOOKS.md, "Visibility").
CLAUDE_EVENTS = ["Stop", "StopFailure", "PermissionRequest"]
CLAUDE_NOTIFICATIONS = "permission_prompt|elicitation_dialog"
GEMINI_EVENTS = ["BeforeAgent", "AfterAgent", "Notification"]
CLAUDE_TIMEOUT_S = 5
GEMINI_TIMEOUT_MS = 5000
HOOK_AGENTS = ("claude", "codex", "gemini")  # clippy_hooks::Agent names (= preset names)


def shell_quote(word):
    """HookCommand::shell_line's quoting: plain words as they are, others single-quoted."""
    if word and all(c.isascii() and (c.isalnum() or c in "/._-+=:,@%") for c in word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


def toml_string(text):
    """wiring.rs toml_string: a TOML basic string."""
    out = ['"']
    for c in text:
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f:
            out.append("\\u%04X" % ord(c))
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def compact_json(value):
    """serde_json::Value::to_string: no spaces, sorted keys, UTF-8."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def hook_program():
    """The built `clippy-ctl` (absolute path; $CLIPPY_CTL overrides), checked to have `hook`."""
    program = os.path.abspath(os.environ.get("CLIPPY_CTL") or os.path.join(REPO, "target", "debug", "clippy-ctl"))
    probe = subprocess.run([program, "hook", "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise RuntimeError("%s has no `hook` command (build it: cargo build -p clippy-ctl): %s"
                           % (program, probe.stderr.strip()[:300]))
    return program


def per_run_wiring(agent, hook_argv_prefix, run_dir, env):
    """clippy_hooks::per_run for one run of `agent`: (extra args, extra env, files to write).

    `hook_argv_prefix` is HookCommand's program + args (`[/abs/clippy-ctl, hook]`); `env` the
    agent's environment (for the existing Codex notify and Gemini system defaults to keep)."""
    argv = list(hook_argv_prefix) + [agent]
    line = " ".join(shell_quote(w) for w in argv)
    if agent == "claude":
        handler = [{"type": "command", "command": line, "timeout": CLAUDE_TIMEOUT_S, "async": True}]
        hooks = {event: [{"hooks": handler}] for event in CLAUDE_EVENTS}
        hooks["Notification"] = [{"matcher": CLAUDE_NOTIFICATIONS, "hooks": handler}]
        return ["--settings", compact_json({"hooks": hooks})], {}, []
    if agent == "codex":
        home = env.get("CODEX_HOME") or (os.path.join(env["HOME"], ".codex") if env.get("HOME") else None)
        config = os.path.join(home, "config.toml") if home else None
        if config and os.path.exists(config):
            import tomllib  # Python 3.11+
            with open(config, "rb") as f:
                user = tomllib.load(f).get("notify")
            if user:
                argv += ["--chain", compact_json(list(user))]
        return ["-c", "notify=[%s]" % ", ".join(toml_string(w) for w in argv)], {}, []
    if agent == "gemini":
        handler = [{"type": "command", "name": "clippy", "command": line, "timeout": GEMINI_TIMEOUT_MS}]
        existing = env.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or "/etc/gemini-cli/system-defaults.json"
        defaults = {}
        if os.path.exists(existing):
            with open(existing) as f:
                defaults = json.load(f)
        ours = defaults.setdefault("hooks", {})
        for event in GEMINI_EVENTS:
            ours.setdefault(event, []).append({"hooks": handler})
        path = os.path.join(run_dir, "gemini-system-defaults.json")
        text = json.dumps(defaults, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        return [], {"GEMINI_CLI_SYSTEM_DEFAULTS_PATH": path}, [(path, text)]
    raise ValueError("no hooks for %r: clippy wires hooks for %s" % (agent, ", ".join(HOOK_AGENTS)))


def private_dir():
    """Where a run's hook socket and files go: $CORPUS_HOOKS_DIR, else ~/.cache/corpus-hooks.

    Not under /tmp: Gemini CLI 0.61.0 skips a system-defaults file when a directory above it is
    writable by group or others ("Security Warning: Skipping system defaults file ... Parent
    directory '/tmp' is insecure"), as clippy-session's $XDG_RUNTIME_DIR normally is not."""
    base = os.environ.get("CORPUS_HOOKS_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "corpus-hooks")
    os.makedirs(base, mode=0o700, exist_ok=True)
    path = os.path.abspath(base)
    while True:
        if os.stat(path).st_mode & 0o022:
            raise SystemExit("hooks: %s is writable by group or others; Gemini CLI would skip the wiring "
                             "(set CORPUS_HOOKS_DIR to a private folder)" % path)
        if path == "/":
            return base
        path = os.path.dirname(path)


class HookListener:
    """The recorder's hook socket: accepts each report's connection and reads it to its end."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(64)
        self.sock.setblocking(False)
        self.conns = {}  # fileno -> (socket, bytearray)

    def fds(self):
        return [self.sock] + [c for c, _ in self.conns.values()]

    def ready(self, fd):
        """Handles a readable socket; returns the reports completed (their bytes)."""
        done = []
        if fd is self.sock:
            while True:
                try:
                    conn, _ = self.sock.accept()
                except (BlockingIOError, InterruptedError):
                    break
                conn.setblocking(False)
                self.conns[conn.fileno()] = (conn, bytearray())
            return done
        conn, buf = self.conns[fd.fileno()]
        while True:
            try:
                data = conn.recv(65536)
            except (BlockingIOError, InterruptedError):
                return done
            except OSError:
                data = b""
            if not data or len(buf) + len(data) > MAX_REPORT_BYTES:
                buf += data[:MAX_REPORT_BYTES + 1 - len(buf)] if data else b""
                del self.conns[conn.fileno()]
                conn.close()
                done.append(bytes(buf))
                return done
            buf += data

    def close(self):
        for conn, _ in self.conns.values():
            conn.close()
        self.conns.clear()
        self.sock.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class Recorder:
    def __init__(self, script, out_dir):
        self.s = script
        self.out_dir = out_dir
        self.cols, self.rows = script.get("size", [120, 40])
        self.events = []
        self.raw = bytearray()
        self.text = ""            # decoded output, for wait_for
        self.send_pos = 0         # position in self.text at the last send
        self.mark_pos = 0
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.scan_carry = b""
        self.t0 = None
        self.exited = False
        self.exit_status = None
        self.screen = None
        self.stream = None
        self.hooks = None         # HookListener when the script wires the agent's hooks
        self.hook_reports = []    # the text of every hook report, in order
        if pyte is not None:
            self.screen = TolerantScreen(self.cols, self.rows)
            self.stream = pyte.ByteStream(self.screen)

    # --- process ---------------------------------------------------------
    def spawn(self, argv, env, cwd):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", self.rows, self.cols, 0, 0))
        pid = os.fork()
        if pid == 0:
            try:
                os.close(master)
                # Start from default signal dispositions, as a terminal emulator would: a
                # recorder launched from a background job inherits SIG_IGN for SIGINT/SIGQUIT
                # (and Python itself ignores SIGPIPE), which exec would pass on to the child.
                for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU,
                            signal.SIGPIPE, signal.SIGHUP, signal.SIGTERM, signal.SIGWINCH, signal.SIGCHLD):
                    signal.signal(sig, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_SETMASK, [])
                os.setsid()
                fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
                for fd in (0, 1, 2):
                    os.dup2(slave, fd)
                if slave > 2:
                    os.close(slave)
                os.chdir(cwd)
                os.execvpe(argv[0], argv, env)
            except Exception as e:  # noqa
                os.write(2, ("exec failed: %s\n" % e).encode())
            os._exit(127)
        os.close(slave)
        self.master, self.pid = master, pid
        self.t0 = time.time()
        self.ts0 = int(self.t0)

    def now(self):
        return round(time.time() - self.t0, 6)

    @property
    def bracketed_paste(self):
        """Whether the child's last bracketed-paste switch turned it on (ESC[?2004h)."""
        return self.raw.rfind(b"\x1b[?2004h") > self.raw.rfind(b"\x1b[?2004l")

    def write(self, data):
        os.write(self.master, data)
        self.events.append([self.now(), "i", data.decode("utf-8", "replace")])

    # --- output ------------------------------------------------------------
    def on_output(self, data):
        t = self.now()
        self.raw += data
        s = self.decoder.decode(data)
        if s:
            self.events.append([t, "o", s])
            self.text += s
        self.answer_queries(data)

    def answer_queries(self, data):
        carry = len(self.scan_carry)
        buf = self.scan_carry + data
        fed = 0  # offset in data already fed to the pyte screen
        for m in QUERY_RE.finditer(buf):
            end = m.end() - carry  # matches always end inside `data`
            if self.stream is not None and end > fed:
                self.feed_screen(data[fed:end])
                fed = end
            reply = self.reply_for(m)
            if reply:
                self.write(reply)
        if self.stream is not None:
            self.feed_screen(data[fed:])
        # keep an unterminated escape sequence at the end for the next read
        i = buf.rfind(b"\x1b")
        if i >= 0 and len(buf) - i < 64 and not re.match(
                rb"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[^\[\]])", buf[i:]):
            self.scan_carry = buf[i:]
        else:
            self.scan_carry = b""

    def feed_screen(self, data):
        """The pyte screen only serves CPR replies and debug dumps: never let it break a recording."""
        try:
            self.stream.feed(data)
        except Exception as e:  # noqa
            log("pyte: %r (screen model may be off)" % e)
            self.stream = pyte.ByteStream(self.screen)

    def reply_for(self, m):
        if m.group("cpr") is not None:
            if self.screen is not None:
                r, c = self.screen.cursor.y + 1, self.screen.cursor.x + 1
            else:
                r, c = self.rows, 1
            c = min(c, self.cols)
            pre = "?" if m.group("cpr").startswith(b"?") else ""
            return ("\x1b[%s%d;%dR" % (pre, r, c)).encode()
        if m.group("da1") is not None:
            return b"\x1b[?62;22c"
        if m.group("da2") is not None:
            return b"\x1b[>41;390;0c"
        if m.group("oscn") is not None:
            n = m.group("oscn").decode()
            col = "ffff/ffff/ffff" if n == "10" else "0000/0000/0000"
            return ("\x1b]%s;rgb:%s\x1b\\" % (n, col)).encode()
        if m.group("winop") is not None:
            if m.group("winop") == b"18":
                return ("\x1b[8;%d;%dt" % (self.rows, self.cols)).encode()
            return ("\x1b[4;%d;%dt" % (self.rows * 16, self.cols * 8)).encode()
        if m.group("decrqm") is not None:
            mode = int(m.group("decrqm"))
            known = {1: 2, 7: 1, 25: 1, 1000: 2, 1002: 2, 1003: 2, 1004: 2, 1006: 2,
                     1049: 2, 2004: 2, 2026: 2}
            return ("\x1b[?%d;%d$y" % (mode, known.get(mode, 0))).encode()
        if m.group("ps"):
            # OSC 7501 program-status probe: answered only when the script says the terminal
            # supports it ("answer_osc7501": true), as a terminal that shows agent states would.
            return b"\x1b]7501;?\x1b\\" if self.s.get("answer_osc7501") else None
        return None  # kitty keyboard query: xterm does not answer

    def pump(self, timeout):
        """Read output (and hook reports) for up to `timeout` seconds (returns early on exit)."""
        end = time.time() + timeout
        while True:
            left = end - time.time()
            if self.exited:
                return
            fds = [self.master] + (self.hooks.fds() if self.hooks else [])
            r, _, _ = select.select(fds, [], [], max(0, min(left, 0.05)))
            if self.master in r:
                try:
                    data = os.read(self.master, 65536)
                except OSError as e:
                    if e.errno == errno.EIO:
                        data = b""
                    else:
                        raise
                if not data:
                    self.finish_child()
                    return
                self.on_output(data)
            elif not r:
                self.check_child()
            for fd in r:
                if fd != self.master:
                    self.take_hooks(fd)
            if time.time() >= end:
                return

    def take_hooks(self, fd):
        """Reads a hook socket; each report read to its end becomes an "h" event, after the output
        the child wrote before it (what the PTY holds now is read first)."""
        for frame in self.hooks.ready(fd):
            self.drain_output()
            text = frame.decode("utf-8", "replace")
            self.hook_reports.append(text)
            self.events.append([self.now(), "h", text])
            log("hook report: %s" % text[:160].replace("\n", " | "))

    def drain_output(self):
        """Reads whatever output the PTY holds right now, without waiting."""
        while not self.exited:
            r, _, _ = select.select([self.master], [], [], 0)
            if not r:
                return
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.on_output(data)

    def take_late_hooks(self, wait):
        """After the child exited: reports still arriving (hooks run after the agent's output)."""
        if not self.hooks:
            return
        end = time.time() + wait
        while time.time() < end:
            r, _, _ = select.select(self.hooks.fds(), [], [], max(0, end - time.time()))
            if not r:
                return
            for fd in r:
                self.take_hooks(fd)

    def check_child(self):
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid:
            # drain what is left
            while True:
                r, _, _ = select.select([self.master], [], [], 0.05)
                if not r:
                    break
                try:
                    data = os.read(self.master, 65536)
                except OSError:
                    break
                if not data:
                    break
                self.on_output(data)
            self.exited = True
            self.exit_status = status

    def finish_child(self):
        try:
            _, status = os.waitpid(self.pid, 0)
            self.exit_status = status
        except ChildProcessError:
            pass
        self.exited = True

    # --- steps ---------------------------------------------------------------
    def wait_for(self, pattern, timeout, since, raw=False):
        rx = re.compile(pattern, re.M)
        start = {"send": self.send_pos, "start": 0, "mark": self.mark_pos}.get(since, None)
        if start is None:  # "now"
            start = len(self.text)
        end = time.time() + timeout
        while True:
            view = self.text[start:]
            if not raw:
                view = strip_ansi(view)
            if rx.search(view):
                return True
            if self.exited or time.time() > end:
                raise TimeoutError("wait_for %r timed out (since=%s, exited=%s)" % (pattern, since, self.exited))
            self.pump(0.1)

    def send(self, data, typed, delay):
        self.send_pos = len(self.text)
        if typed:
            for ch in data.decode("utf-8"):
                self.write(ch.encode("utf-8"))
                self.pump(delay)
        else:
            self.write(data)

    def resize(self, spec):
        cols, rows = [int(x) for x in spec.lower().split("x")]
        self.cols, self.rows = cols, rows
        # The kernel sends SIGWINCH to the tty's foreground process group when the
        # size changes (that is all a terminal emulator does).
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        if self.s.get("extra_sigwinch"):
            try:
                os.killpg(os.getpgid(self.pid), signal.SIGWINCH)
            except ProcessLookupError:
                pass
        if self.screen is not None:
            self.screen.resize(rows, cols)
        self.events.append([self.now(), "r", "%dx%d" % (cols, rows)])

    def run_steps(self):
        for i, st in enumerate(self.s["steps"]):
            log("step %d: %s" % (i, json.dumps(st)[:100]))
            if "wait_for" in st or "wait_for_raw" in st:
                raw = "wait_for_raw" in st
                self.wait_for(st.get("wait_for_raw") if raw else st["wait_for"],
                              st.get("timeout", 30), st.get("since", "send"), raw)
            elif "send" in st:
                self.send(st["send"].encode("utf-8"), st.get("typed", True), st.get("delay", 0.06))
            elif "paste" in st:
                self.send_pos = len(self.text)
                text = st["paste"].replace("\r\n", "\n").replace("\n", "\r").encode("utf-8")
                if self.bracketed_paste:
                    text = b"\x1b[200~" + text + b"\x1b[201~"
                self.write(text)
            elif "key" in st:
                self.send_pos = len(self.text)
                self.write(KEYS[st["key"]])
            elif "ctrl_c" in st:
                self.send_pos = len(self.text)
                self.write(b"\x03")
            elif "sleep" in st:
                self.pump(st["sleep"])
            elif "resize" in st:
                self.resize(st["resize"])
            elif "mark" in st:
                self.mark_pos = len(self.text)
            elif "wait_hook" in st:
                if not self.hooks:
                    raise ValueError("wait_hook in a script without \"hooks\": true")
                rx = re.compile(st["wait_hook"])
                want = st.get("count", 1)
                end = time.time() + st.get("timeout", 15)
                while sum(1 for h in self.hook_reports if rx.search(h)) < want:
                    if self.exited or time.time() > end:
                        raise TimeoutError("wait_hook %r (count %d) timed out; reports: %r"
                                           % (st["wait_hook"], want, [h[:80] for h in self.hook_reports]))
                    self.pump(0.1)
            elif "wait_exit" in st:
                end = time.time() + st["wait_exit"]
                while not self.exited and time.time() < end:
                    self.pump(0.2)
                if not self.exited:
                    raise TimeoutError("child did not exit")
            else:
                raise ValueError("unknown step %r" % st)
            self.pump(0.01)

    # --- output files ------------------------------------------------------------
    def write_files(self, version):
        os.makedirs(self.out_dir, exist_ok=True)
        name = self.s["name"]
        w, h = self.s.get("size", [120, 40])
        header = {"version": 2, "width": w, "height": h, "timestamp": self.ts0,
                  "env": {"TERM": "xterm-256color", "SHELL": "/bin/bash"}, "title": name}
        tail = self.decoder.decode(b"", final=True)
        if tail:
            self.events.append([self.now(), "o", tail])
        with open(os.path.join(self.out_dir, name + ".cast"), "w", encoding="utf-8") as f:
            f.write(json.dumps(header, ensure_ascii=False) + "\n")
            for ev in self.events:
                f.write(json.dumps(ev, ensure_ascii=False) + "\n")
        with open(os.path.join(self.out_dir, name + ".out"), "wb") as f:
            f.write(bytes(self.raw))
        side = {"name": name, "agent": self.s["agent"], "agent_version": version,
                "command": self.s["command"], "preset": self.s["preset"], "size": [w, h],
                "turns": self.s.get("turns", []), "notes": self.s.get("notes", "")}
        if self.s.get("hooks"):
            # The agent's hooks were wired (record.py "hooks"): the cast has "h" events.
            side["hooks"] = True
        with open(os.path.join(self.out_dir, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(side, f, ensure_ascii=False, indent=1)
            f.write("\n")

    def dump_screen(self):
        if self.screen is None:
            return ""
        return "\n".join(line.rstrip() for line in self.screen.display)


def log(msg):
    sys.stderr.write("[record] %s\n" % msg)
    sys.stderr.flush()


def start_mock(script):
    """Start mock_model.py on a free port; returns (proc, url)."""
    port_file = "/tmp/corpus-mock-%d.port" % os.getpid()
    if os.path.exists(port_file):
        os.unlink(port_file)
    logf = open(os.environ.get("MOCK_LOG", "/tmp/corpus-mock.log"), "a")
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "mock_model.py"), "--port", "0",
                             "--port-file", port_file, "--name", script["name"]],
                            stdout=logf, stderr=logf)
    for _ in range(100):
        if os.path.exists(port_file):
            with open(port_file) as f:
                txt = f.read().strip()
            if txt:
                return proc, "http://127.0.0.1:%s" % txt
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("mock server did not start")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("script")
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    with open(args.script) as f:
        script = json.load(f)

    mock_proc, mock_url = None, ""
    if script.get("mock"):
        mock_proc, mock_url = start_mock(script)
        log("mock at %s" % mock_url)
    cwd = script.get("cwd", "/tmp/corpus-work/" + script["agent"])
    os.makedirs(cwd, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "TERM": "xterm-256color", "SHELL": "/bin/bash", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "USER": "root", "LOGNAME": "root",
        "HOME": "/tmp/corpus-work/home",   # keep agents away from the real ~ (overridable)
        "MOCK_URL": mock_url,
    }
    for k, v in script.get("env", {}).items():
        env[k] = v.replace("$MOCK_URL", mock_url).replace("$NAME", script["name"])
    os.makedirs(env["HOME"], exist_ok=True)
    if script.get("setup"):
        senv = dict(env, CORPUS_TOOLS=HERE)
        subprocess.run(["bash", "-c", script["setup"]], cwd=cwd, env=senv, check=True)

    version = script.get("agent_version", "")
    if script.get("version_command"):
        version = subprocess.run(script["version_command"], capture_output=True, text=True,
                                 env=env, cwd=cwd).stdout.strip()
        m = re.search(r"\d+\.\d+(?:\.\d+)?", version)
        version = m.group(0) if m else version

    rec = Recorder(script, args.out)
    command = list(script["command"])
    hook_dir = None
    if script.get("hooks"):
        agent = script["preset"]
        if agent not in HOOK_AGENTS:
            raise SystemExit("hooks: no hooks for preset %r (only %s)" % (agent, ", ".join(HOOK_AGENTS)))
        hook_dir = tempfile.mkdtemp(prefix="run-", dir=private_dir())
        rec.hooks = HookListener(os.path.join(hook_dir, "hook.sock"))
        extra_args, extra_env, files = per_run_wiring(agent, [hook_program(), "hook"], hook_dir, env)
        for path, text in files:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        env.update(extra_env)
        env[HOOK_SOCKET_ENV] = rec.hooks.path
        # The wiring goes right after the program's name, as clippy-session puts it.
        command = command[:1] + extra_args + command[1:]
        log("hooks wired: %s %s" % (shlex.join(command[:1] + extra_args), json.dumps(extra_env)))
    rec.spawn(command, env, cwd)
    ok = True
    try:
        rec.run_steps()
    except Exception as e:
        ok = False
        log("FAILED: %s" % e)
        log("---- screen ----\n" + rec.dump_screen())
        log("---- stripped tail ----\n" + strip_ansi(rec.text[-3000:]))
    finally:
        if not rec.exited:
            try:
                os.kill(rec.pid, signal.SIGHUP)
                rec.pump(1)
                if not rec.exited:
                    os.kill(rec.pid, signal.SIGKILL)
                    os.waitpid(rec.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        if rec.hooks:
            rec.take_late_hooks(1.0)
            rec.hooks.close()
            shutil.rmtree(hook_dir, ignore_errors=True)
        if mock_proc:
            mock_proc.terminate()
            try:
                mock_proc.wait(5)
            except subprocess.TimeoutExpired:
                mock_proc.kill()
                mock_proc.wait()
            port_file = "/tmp/corpus-mock-%d.port" % os.getpid()
            if os.path.exists(port_file):
                os.unlink(port_file)
    if ok:
        rec.write_files(version)
        log("wrote %s (%d events, %d hook reports, %d bytes raw, exit status %s)" %
            (os.path.join(args.out, script["name"]), len(rec.events), len(rec.hook_reports), len(rec.raw),
             rec.exit_status))
        log("---- final screen ----\n" + rec.dump_screen())
    else:
        dbg = "/tmp/corpus-failed"
        rec.out_dir = dbg
        rec.write_files(version)
        log("partial recording kept in %s (not in the corpus)" % dbg)
        sys.exit(1)


if __name__ == "__main__":
    main()
