#!/usr/bin/env python3
"""Live matrix (issue 27): real agents under `clippy-session --name N -- AGENT`, each in a tmux server of its
own, against mock_model.py; the same cases for every agent and size; each turn's text view compared line by line
with what the mock sent, and its end against the mock's last byte of that reply.

usage:
  live_matrix.py run AGENT COLS ROWS     one agent at one size (about 1-3 minutes; more when turns go missing)
  live_matrix.py report [--failures]     the table, the delays per agent, and (--failures) each failing case
                                         with the screen when the script saw it

AGENT: claude, codex, gemini (/work/agents-text/current), claude-corpus, codex-corpus, gemini-corpus
(/work/agents-text/corpus), claude-new (/work/agents-text/new), aider, and the agents without a preset qwen,
opencode, vibe (Mistral Vibe) and grok (Grok CLI). Each binary's path can be overridden with MATRIX_BIN_<AGENT>
(e.g. MATRIX_BIN_CODEX_CORPUS=/path/codex).
Environment: CLIPPY_BIN (the folder with clippy-session and clippy-ctl; default target/release of this checkout),
MATRIX_OUT (results, default /tmp/matrix; a run already there is kept as TAG.runN), MATRIX_HOMES (HOME, work
dir and XDG_RUNTIME_DIR per run, default /root/matrix-runs: not under /tmp, where Codex refuses its CODEX_HOME
and Gemini CLI skips the hooks' system-defaults file).

Cases, in this order: a short question; a table; the 80-line reply; the 80-line reply with the window grown by
20x6 1.5 s in and shrunk back 1 s later; the 80-line reply with a question typed ahead 0.5 s in (text, Enter
0.3 s later); a 4-line bracketed paste (`tmux paste-buffer -p`) then Enter; a question sent with
`clippy-ctl send NAME --enter`; a last short one. The script goes on when the turn is there and the mock has
sent the whole reply (at most 75 s, 100 s for the typed-ahead pair), then waits 2 s.
"""
import glob, json, os, re, shlex, shutil, subprocess, sys, time

TOOLS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(TOOLS))
B = os.environ.get("CLIPPY_BIN", os.path.join(ROOT, "target", "release"))
OUT = os.environ.get("MATRIX_OUT", "/tmp/matrix")
HOMES = os.environ.get("MATRIX_HOMES", "/root/matrix-runs")
REPLIES = json.load(open(os.path.join(TOOLS, "replies.json")))
LONG = "please write eighty numbered lines"
QUESTIONS = ["what is the capital of France", "show me a table of shells", LONG, "what is the largest planet",
             "Translate these notes into French:", "what is the color of the sky", "what is the square root of 144"]
CASES = ["short", "table", "long", "long+resize", "long(typed-ahead)", "typed-ahead", "paste", "ctl-send", "last"]
ORDER = ["qwen", "opencode", "claude", "claude-corpus", "claude-new", "codex", "codex-corpus", "gemini",
         "gemini-corpus", "aider", "vibe", "grok"]
NO_PRESET = ("qwen", "opencode", "vibe", "grok")  # run as `clippy-session -- AGENT` with no preset of their own
# What an agent without a preset draws once it has loaded, where its screen alone is still for seconds before
# (Mistral Vibe draws its logo, sits 7 s or more, then `Initializing…`, dropping what is typed, and only then the
# active model under its logo, `mock[off]`).
LOADED = {"vibe": "mock["}


# ---------------------------------------------------------------------------------------------------------------
# Judging: from the turn log (its `text` is get-turn's text view) and the mock's log, so a report can be made again.

def rule_of(q):
    """The reply rule of replies.json that answers the question, and the lines it sends."""
    for r in REPLIES["rules"]:
        if r["match"].lower() in q.lower():
            if r.get("kind") == "long":
                lines = [r["intro"]] + [r["template"].format(n=n) for n in range(1, r["lines"] + 1)] + [r["outro"]]
            else:
                lines = [ln for ln in r["reply"].splitlines() if ln.strip()]
            return r["match"], lines
    return "default", [REPLIES["default"]]


BOX = r"[│┃|─━┼┬┴├┤┌┐└┘╭╮╰╯═║\-:\s\u00a0]+"


def norm(line):
    """A line without table borders, bullets, list numbers and spacing: agents draw tables and lists their own
    way (aider renders `1.` as `1`); the numbered lines still differ by the number in their text."""
    line = re.sub(BOX, " ", line).strip()
    line = re.sub(r"^[✦●•⏺\*\s]+", "", line).strip()
    return re.sub(r"^\d+[.)]?\s+", "", line).strip()


def flat(s):
    return " ".join(s.split()).lower()


def asks(e, key):
    """The request's question holds the key (the mock logs 120 characters of it: Gemini CLI's first question
    comes after its session context, so a cut-off text counts by its rule alone)."""
    user = e.get("user") or ""
    return key in user.lower() or len(user) >= 120


def reply_end(ev, q, since, before):
    """When the mock wrote the last byte of the question's main request: the last request for it that started
    after `since` and before `before` (the turn's end; OpenCode's title request comes first and matches too).
    Returns (end time, whether the agent closed the connection before the reply's end)."""
    rule, _ = rule_of(q)
    key = q.splitlines()[0].lower()
    found = (None, False)
    for i, e in enumerate(ev):
        if e.get("t", 0) >= since and e.get("rule") == rule and asks(e, key) and (before is None or e["t"] <= before):
            mine = [x for x in ev[i + 1:] if x.get("thread") == e.get("thread") and "api" not in x]
            k = next((j for j, x in enumerate(mine) if x.get("ended")), None)
            found = (None, False) if k is None else (mine[k]["t"], any(x.get("client_gone") for x in mine[:k]))
    return found


def judge(run_dir):
    """Every case of one run: the turn whose input is the question, compared with the reply's lines."""
    r = json.load(open(os.path.join(run_dir, "result.json")))
    tl = [json.loads(l) for l in open(os.path.join(run_dir, "turns.jsonl"))] if os.path.exists(
        os.path.join(run_dir, "turns.jsonl")) else []
    ev = [json.loads(l) for l in open(os.path.join(run_dir, "mock.log")) if l.startswith("{")]
    r["cases"] = [c for c in r["cases"] if "since" in c]  # (a first harness's runs noted no start)
    sinces = sorted({c["since"] for c in r["cases"]})
    for c in r["cases"]:
        for k in ("missing_turn", "late_turn", "turns_after", "turn_id", "input", "delay", "cut", "missing",
                  "repeated", "in_order", "extra", "exact", "n_lines"):
            c.pop(k, None)
        t = next((x for x in tl if flat(x["input"]) == flat(c["q"])), None)
        if t is None:
            c["missing_turn"] = True
            c["turns_after"] = [x["input"] for x in tl if x["timestamp"] / 1000 > c["since"]][:3]
            continue
        end_t = t["timestamp"] / 1000
        later = [s for s in sinces if s > c["since"]]
        c["late_turn"] = bool(later) and end_t > later[0]
        end, c["cut"] = reply_end(ev, c["q"], c["since"], end_t)
        if c["cut"]:  # the agent went on to the next question in the same turn: measured from that reply's end
            end = max([x for x in (reply_end(ev, q, c["since"], end_t)[0] for q in QUESTIONS) if x] + [end])
        c["delay"] = round(end_t - end, 3) if end else None
        want = [norm(w) for w in rule_of(c["q"])[1]]
        lines = [ln.rstrip() for ln in t["text"].splitlines() if ln.strip()]
        idx, extra = [], []
        for ln in lines:
            n = norm(ln)
            if n and n in want:
                idx.append(want.index(n))
            elif n:
                extra.append(ln.strip())
        wanted = [i for i, w in enumerate(want) if w]
        c.update(turn_id=t["turn_id"], input=t["input"], n_lines=len(lines), extra=extra,
                 missing=[i + 1 for i in wanted if idx.count(i) == 0],
                 repeated=[i + 1 for i in wanted if idx.count(i) > 1], in_order=idx == sorted(idx),
                 interrupted=t.get("interrupted"), ended_by_agent=t.get("ended_by_agent"))
        c["exact"] = not (c["missing"] or c["repeated"] or extra or c["late_turn"]) and c["in_order"]
    return r


# ---------------------------------------------------------------------------------------------------------------
# One run.

def agent_command(agent_key, url, env):
    flavor = agent_key.split("-")[0]
    rel = agent_key.split("-")[1] if "-" in agent_key else "current"
    default = {"claude": "/work/agents-text/%s/bin/claude" % rel, "codex": "/work/agents-text/%s/bin/codex" % rel,
               "gemini": "/work/agents-text/%s/bin/gemini" % rel, "aider": "/work/agents-text/aider-venv/bin/aider",
               "qwen": "/opt/agents/qwen/node_modules/.bin/qwen",
               "opencode": "/opt/agents/opencode/node_modules/.bin/opencode",
               "vibe": "/work/agents-extra/vibe-venv/bin/vibe",
               "grok": "/work/agents-extra/grok/node_modules/.bin/grok"}
    if flavor not in default:
        sys.exit("unknown agent " + agent_key)
    exe = os.environ.get("MATRIX_BIN_" + agent_key.upper().replace("-", "_"), default[flavor])
    if flavor == "claude":
        env.update(ANTHROPIC_BASE_URL=url, ANTHROPIC_AUTH_TOKEN="mock-token", DISABLE_AUTOUPDATER="1",
                   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1", DISABLE_ERROR_REPORTING="1")
        return flavor, [exe, "--permission-mode", "default"]
    if flavor == "codex":
        env.update(MOCK_API_KEY="mock-key")
        return flavor, [exe, "--no-daemon"]
    if flavor == "gemini":
        env.update(GEMINI_API_KEY="mock-key", GOOGLE_GEMINI_BASE_URL=url, GEMINI_TELEMETRY_ENABLED="false")
        return flavor, [exe]
    if flavor == "aider":
        env.update(OPENAI_API_KEY="mock-key", OPENAI_API_BASE=url + "/v1", LITELLM_LOCAL_MODEL_COST_MAP="True")
        return flavor, [exe, "--model", "openai/mock-model", "--no-git", "--no-auto-commits",
                        "--no-show-model-warnings", "--no-check-update", "--analytics-disable",
                        "--no-show-release-notes", "--edit-format", "diff", "--map-tokens", "0", "--no-detect-urls"]
    if flavor == "qwen":  # it ignores NO_PROXY: the environment has no proxy variables at all
        env.update(OPENAI_API_KEY="mock-key", OPENAI_BASE_URL=url + "/v1", OPENAI_MODEL="mock-model")
        return flavor, [exe]
    if flavor == "vibe":  # setup_agent.sh writes its provider (the mock) into HOME/.vibe/config.toml
        env.update(MOCK_API_KEY="mock-key")
        return flavor, [exe]
    if flavor == "grok":  # the endpoint, key and model come from the environment alone
        env.update(GROK_API_KEY="mock-key", GROK_BASE_URL=url + "/v1", GROK_MODEL="mock-model")
        return flavor, [exe]
    env.update(OPENCODE_DISABLE_AUTOUPDATE="1", OPENCODE_DISABLE_MODELS_FETCH="1")
    return flavor, [exe]


def run(agent_key, cols, rows):
    tag = "%s-%dx%d" % (agent_key, cols, rows)
    name = "mx-" + agent_key
    res_dir = os.path.join(OUT, tag)
    if os.path.exists(os.path.join(res_dir, "result.json")):
        n = 1
        while os.path.exists("%s.run%d" % (res_dir, n)):
            n += 1
        os.rename(res_dir, "%s.run%d" % (res_dir, n))
    shutil.rmtree(res_dir, ignore_errors=True)
    os.makedirs(res_dir)
    base = os.path.join(HOMES, tag)
    shutil.rmtree(base, ignore_errors=True)
    work, home, rt = base + "/work", base + "/home", base + "/rt"
    for d in (work, home, rt):
        os.makedirs(d)
    os.chmod(base, 0o700)
    os.chmod(rt, 0o700)
    mocklog, tl = res_dir + "/mock.log", res_dir + "/turns.jsonl"
    # The mock, each log line stamped with its connection's thread, so a reply's end pairs with its request.
    launcher = ("import sys, threading; sys.path.insert(0, %r); import mock_model as m; o = m.log\n"
                "def log(obj):\n    obj['thread'] = threading.get_ident(); o(obj)\n"
                "m.log = log; m.main()\n" % TOOLS)
    mock = subprocess.Popen(["python3", "-c", launcher, "--port", "0", "--port-file", base + "/port",
                             "--replies", TOOLS + "/replies.json"], stdin=subprocess.DEVNULL,
                            stdout=open(mocklog, "w"), stderr=subprocess.STDOUT, start_new_session=True)
    T = ["tmux", "-L", "matrix-" + agent_key]
    try:
        deadline = time.time() + 20
        while not os.path.exists(base + "/port") and time.time() < deadline:
            time.sleep(0.1)
        url = "http://127.0.0.1:" + open(base + "/port").read().strip()
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "XDG_RUNTIME_DIR": rt,
               "TERM": "xterm-256color", "LANG": "C.UTF-8", "MOCK_URL": url}
        flavor, cmd = agent_command(agent_key, url, env)
        subprocess.run(["bash", TOOLS + "/setup_agent.sh", flavor], cwd=work, env=env, check=True,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        version = subprocess.run(cmd[:1] + ["--version"], env=env, cwd=work, capture_output=True, text=True,
                                 stdin=subprocess.DEVNULL, timeout=60).stdout.strip().splitlines()
        inner = "env -i %s %s --name %s --turn-log %s -- %s 2>%s; sleep 3600" % (
            " ".join(shlex.quote("%s=%s" % kv) for kv in env.items()), shlex.quote(B + "/clippy-session"), name,
            shlex.quote(tl), " ".join(shlex.quote(c) for c in cmd), shlex.quote(res_dir + "/session.err"))
        subprocess.run(T + ["kill-server"], stderr=subprocess.DEVNULL)
        subprocess.run(T + ["-f", "/dev/null", "new-session", "-d", "-s", "m", "-x", str(cols), "-y", str(rows),
                            "-c", work, inner], check=True)
        Driver(name, T, rt, tl, mocklog, cols, rows).drive(tag, version, flavor, res_dir)
    finally:
        subprocess.run(T + ["kill-server"], stderr=subprocess.DEVNULL)
        time.sleep(1)
        os.killpg(mock.pid, 15)
        # The broker this run's session started (found by its own XDG_RUNTIME_DIR), and nothing else.
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmdline = open("/proc/%s/cmdline" % pid, "rb").read()
                environ = open("/proc/%s/environ" % pid, "rb").read()
            except OSError:
                continue
            if b"clippy-broker" in cmdline and ("XDG_RUNTIME_DIR=" + rt).encode() in environ.split(b"\0"):
                os.kill(int(pid), 15)
    r = judge(res_dir)
    for c in r["cases"]:
        print(tag, c["case"], cell(c), "load", c["load"], flush=True)


class Driver:
    """Types the cases into the agent's pane and notes, for each, when it began, the load, and the screens when
    its turn came (or when the script gave up waiting)."""

    def __init__(self, name, T, rt, tl, mocklog, cols, rows):
        self.name, self.T, self.rt, self.tl, self.mocklog = name, T, rt, tl, mocklog
        self.cols, self.rows, self.cases = cols, rows, []

    def ctl(self, *a):
        try:
            return subprocess.run([B + "/clippy-ctl"] + list(a), env={"XDG_RUNTIME_DIR": self.rt,
                                                                    "PATH": "/usr/bin:/bin"},
                                  capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(a, 124, "", "timeout")

    def n_turns(self):
        try:
            return sum(1 for _ in open(self.tl))
        except FileNotFoundError:
            return 0

    def screens(self):
        return {"ctl_screen": self.ctl("screen", self.name).stdout, "status": self.ctl("status", self.name).stdout,
                "tmux": subprocess.run(self.T + ["capture-pane", "-p", "-t", "m"], capture_output=True,
                                       text=True).stdout}

    def tmux(self, *a):
        subprocess.run(self.T + list(a), stdin=subprocess.DEVNULL)

    def keys(self, text, gap=0.5):
        self.tmux("send-keys", "-t", "m", "-l", text)
        time.sleep(gap)
        self.tmux("send-keys", "-t", "m", "Enter")

    def wait(self, qs, since, seen, timeout):
        """Until a turn per question has come and the mock has sent each question's whole reply; then 2 s."""
        deadline, snap = time.time() + timeout, None
        while time.time() < deadline:
            ev = [json.loads(l) for l in open(self.mocklog) if l.startswith("{")]
            come = self.n_turns() >= seen + len(qs)
            if come and snap is None:
                snap = self.screens()
            if come and all(reply_end(ev, q, since, None)[0] for q in qs):
                break
            time.sleep(0.1)
        time.sleep(2)
        return snap or self.screens()

    def case(self, names, qs, send, timeout=75):
        since, load, seen = time.time() - 0.05, open("/proc/loadavg").read().split()[0], self.n_turns()
        send()
        snap = self.wait(qs, since, seen, timeout)
        for n, q in zip(names, qs):
            self.cases.append({"case": n, "q": q, "since": since, "load": load, "screen": snap})

    def drive(self, tag, version, flavor, res_dir):
        t0, last, still = time.time(), None, time.time()
        # Ready: a recognised prompt (idle), or a screen that stopped changing for 5 s after 15 s. A session with
        # no preset is idle from its start, while the agent still loads (Mistral Vibe's `Initializing…` drops what
        # is typed): its idle says nothing, only the still screen counts.
        while time.time() - t0 < 120:
            try:
                mode = json.loads(self.ctl("--json", "status", self.name).stdout)["session_status"]["mode"]
            except (ValueError, KeyError, TypeError):
                mode = None
            if mode == "idle" and flavor not in NO_PRESET:
                break
            scr = self.ctl("screen", self.name).stdout
            if scr != last:
                last, still = scr, time.time()
            elif time.time() - t0 > 15 and time.time() - still > 5 and scr.strip() and LOADED.get(flavor, "") in scr:
                break
            time.sleep(0.5)
        ready_s = round(time.time() - t0, 1)
        time.sleep(5 if flavor == "aider" or flavor in NO_PRESET else 2)
        status_before = self.ctl("status", self.name).stdout

        def resize():
            self.keys(LONG + " once more")
            time.sleep(1.5)
            self.tmux("resize-window", "-t", "m", "-x", str(self.cols + 20), "-y", str(self.rows + 6))
            time.sleep(1.0)
            self.tmux("resize-window", "-t", "m", "-x", str(self.cols), "-y", str(self.rows))

        def typed_ahead():
            self.keys(LONG + " one last time")
            time.sleep(0.5)
            self.keys("what is the largest planet", gap=0.3)

        paste_q = "Translate these notes into French:\nred apple\nfresh bread\ncold milk"

        def paste():
            self.tmux("set-buffer", "-b", "mx", paste_q)
            self.tmux("paste-buffer", "-p", "-d", "-b", "mx", "-t", "m")
            time.sleep(0.5)
            self.tmux("send-keys", "-t", "m", "Enter")

        sky = "what is the color of the sky"
        self.case(["short"], ["what is the capital of France"], lambda: self.keys("what is the capital of France"))
        self.case(["table"], ["show me a table of shells"], lambda: self.keys("show me a table of shells"))
        self.case(["long"], [LONG], lambda: self.keys(LONG))
        self.case(["long+resize"], [LONG + " once more"], resize)
        self.case(["long(typed-ahead)", "typed-ahead"], [LONG + " one last time", "what is the largest planet"],
                  typed_ahead, timeout=100)
        self.case(["paste"], [paste_q], paste)
        self.case(["ctl-send"], [sky], lambda: self.ctl("send", self.name, "--enter", sky))
        self.case(["last"], ["what is the square root of 144"], lambda: self.keys("what is the square root of 144"))
        result = {"tag": tag, "version": version, "ready_s": ready_s, "status_before": status_before,
                  "status_after": self.ctl("status", self.name).stdout, "cases": self.cases}
        with open(os.path.join(res_dir, "result.json"), "w") as f:
            json.dump(result, f, ensure_ascii=False, indent=1)


# ---------------------------------------------------------------------------------------------------------------
# The report.

def label(q, i):
    if LONG in q.lower():
        return "intro" if i == 1 else ("outro" if i == 82 else str(i - 1))
    return "L%d" % i


def ranges(q, nums):
    runs = []
    for n in nums:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ",".join(label(q, r[0]) if len(r) == 1 else "%s–%s" % (label(q, r[0]), label(q, r[-1])) for r in runs)


def cell(c):
    if c is None:
        return "—"
    if c.get("missing_turn"):
        return "**no turn**"
    parts = []
    if c.get("cut"):
        parts.append("the agent cut the reply short")
    if c.get("late_turn"):
        parts.append("ended only at the next input")
    if c.get("missing"):
        parts.append("missing " + ranges(c["q"], c["missing"]))
    if c.get("repeated"):
        parts.append("twice " + ranges(c["q"], c["repeated"]))
    if c.get("in_order") is False:
        parts.append("out of order")
    if c.get("extra"):
        ex = c["extra"]
        parts.append("+%d extra (`%s`%s)" % (len(ex), ex[0][:40].strip().replace("|", "\\|"),
                                             ", …" if len(ex) > 1 else ""))
    ds = "?" if c.get("delay") is None else "%.2f s" % c["delay"]
    return ("exact, " if not parts else "**" + "; ".join(parts) + "**, ") + ds


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(round(p * (len(xs) - 1)))))]


def report(failures):
    results = {}
    for f in glob.glob(os.path.join(OUT, "*", "result.json")):
        d = os.path.dirname(f)
        r = judge(d)
        if r["cases"]:
            results[os.path.basename(d)] = r

    def order(tag):
        a, size = tag.rsplit("-", 1)
        return (ORDER.index(a) if a in ORDER else 99, int(size.split("x")[0]), size)

    print("| agent (version) | size | " + " | ".join(CASES) + " | load |")
    print("|---|---|" + "---|" * len(CASES) + "---|")
    per_agent = {}
    for tag in sorted(results, key=order):
        r = results[tag]
        a, size = tag.rsplit("-", 1)
        by = {c["case"]: c for c in r["cases"]}
        loads = [float(c["load"]) for c in r["cases"]]
        print("| %s (%s) | %s | %s | %.1f–%.1f |" % (a, (r["version"] or ["?"])[0], size,
                                                    " | ".join(cell(by.get(k)) for k in CASES), min(loads),
                                                    max(loads)))
        per_agent.setdefault(a, []).extend(c["delay"] for c in r["cases"] if c.get("delay") is not None)
    print("\n| agent | turns | min | median | p90 | max | over 1 s |\n|---|---|---|---|---|---|---|")
    for a in sorted(per_agent, key=lambda x: ORDER.index(x) if x in ORDER else 99):
        xs = per_agent[a]
        print("| %s | %d | %.2f | %.2f | %.2f | %.2f | %d |" % (a, len(xs), min(xs), pct(xs, 0.5), pct(xs, 0.9),
                                                               max(xs), sum(1 for x in xs if x > 1.0)))
    if not failures:
        return
    for tag in sorted(results, key=order):
        for c in results[tag]["cases"]:
            if c.get("exact") and c.get("delay") is not None and c["delay"] <= 1.0:
                continue
            print("\n### %s %s: %s (load %s)" % (tag, c["case"], cell(c), c["load"]))
            if c.get("input") is not None and flat(c["input"]) != flat(c["q"]):
                print("turn input: %r" % c["input"])
            if c.get("extra"):
                print("extra lines: " + json.dumps(c["extra"][:20], ensure_ascii=False))
            if c.get("turns_after") is not None:
                print("the turns after it: " + json.dumps(c["turns_after"], ensure_ascii=False))
            scr = c["screen"].get("ctl_screen") or c["screen"].get("tmux") or ""
            print("```\n" + "\n".join(l.rstrip() for l in scr.rstrip("\n").splitlines()) + "\n```")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "run":
        run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) >= 2 and sys.argv[1] == "report":
        report("--failures" in sys.argv[2:])
    else:
        sys.exit(__doc__)
