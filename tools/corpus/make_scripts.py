#!/usr/bin/env python3
"""Generate scripts/<agent>-{basic,long,interrupt,permission,resize}.json for the agent CLIs
(and the second batch's <agent>-<case>-<size>, and the hooks batch's <agent>-hooks-<case>-<size>).

The generated JSON files are what record.py runs (they are committed too);
edit this file and re-run it to change them:  python3 tools/corpus/make_scripts.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "scripts")

Q1, A1 = "what is the capital of France", "The capital of France is Paris."
Q2, A2 = "what is the largest planet", "Jupiter is the largest planet in the solar system."
Q3, A3 = "what is the square root of 144", "The square root of 144 is 12."
QL, AL = "please write eighty numbered lines", "Numbered line 80 of 80 for the scrolling test."
QS, AS = "tell me a slow story", "Slow line 1: one two three four five."
QT, AT = "please create the marker file", "Done: corpus-marker.txt now exists in the working directory."

COMMON_ENV = {"NO_COLOR": None}

AGENTS = {
    "claude": {
        "agent": "claude-code", "preset": "claude", "command": ["claude"],
        "version_command": ["claude", "--version"],
        "env": {"HOME": "/tmp/corpus-work/home-$NAME", "ANTHROPIC_BASE_URL": "$MOCK_URL",
                "ANTHROPIC_AUTH_TOKEN": "mock-token", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"},
        # idle at start: footer hint is drawn once the input box is up
        # (2.1.197: '? for shortcuts'; 2.1.332: '⏵⏵ auto mode on (shift+tab to cycle)')
        "ready": [{"wait_for": "for shortcuts|auto mode on", "since": "start", "timeout": 30}, {"sleep": 1.0}],
        # after a submit: a spinner title (2.1.197: braille ⠂⠐; 2.1.332: half circles ◐◑), then the idle ✳ title
        "done": [{"wait_for_raw": "\\x1b\\]0;[\\u2800-\\u28ff\\u25d0-\\u25d3][^\\x07]*\\x07[\\s\\S]*\\x1b\\]0;\\u2733", "timeout": 60}],
        "interrupt": [{"ctrl_c": True}],
        "approve": [{"wait_for": "Do you want to proceed", "timeout": 30}, {"sleep": 1.0}, {"key": "enter"}],
        "exit": [{"send": "/exit"}, {"sleep": 0.5}, {"key": "enter"}, {"wait_exit": 20}],
        "notes": "Claude Code with ANTHROPIC_BASE_URL pointing at the mock; onboarding/trust skipped via ~/.claude.json (setup_agent.sh). The mock answers Claude Code's side request for a session title with {\"title\": \"Corpus test session\"}, so the OSC 0 title changes from 'Claude Code' to 'Corpus test session' after the first submit. The empty input box is drawn as '\u276f\u00a0' (NBSP); the submitted input is redrawn into the transcript as '\u276f <text>' on a grey background. Exit: '/exit' typed (the slash-command menu pops up while typing) + Enter.",
        "notes_long": "The reply is rendered as a markdown ordered list indented by two spaces ('  80. Numbered line 80 of 80 ...'); it scrolls past the 30-row screen into the normal scrollback (no alternate screen).",
        "notes_interrupt": "Ctrl+C (0x03, read as a key in raw mode) during streaming interrupts: the partial text stays, followed by '\u23bf  Interrupted \u00b7 What should Claude do instead?', and the title goes back to the idle \u2733 frame.",
        "notes_permission": "Bash tool call -> dialog 'Do you want to proceed? \u276f 1. Yes / 2. Yes, and always allow ... / 3. No' (it replaces the input box); answered with Enter (default Yes), which is not a turn. The title shows the idle \u2733 frame while the dialog waits, then a spinner again while the model writes the final answer.",
        "notes_resize": "Resized 120x40 -> 90x30 between the two turns (TIOCSWINSZ; the kernel sends SIGWINCH).",
    },
    "codex": {
        "agent": "codex", "preset": "codex", "command": ["codex", "--no-daemon"],
        "version_command": ["codex", "--version"],
        "env": {"HOME": "/root/corpus-homes/$NAME", "MOCK_API_KEY": "mock-key"},
        "ready": [{"wait_for_raw": "\\x1b\\]7501;state=idle", "since": "start", "timeout": 30},
                  {"wait_for": "Ask Codex to do anything", "since": "start", "timeout": 30}, {"sleep": 1.5}],
        "done": [{"wait_for_raw": "\\x1b\\]7501;state=working[\\s\\S]*\\x1b\\]7501;state=done", "timeout": 60}],
        "interrupt": [{"ctrl_c": True}],
        "approve": [{"wait_for": "Would you like to run", "timeout": 30}, {"sleep": 1.0}, {"send": "y", "typed": False}],
        "exit": [{"send": "/exit"}, {"sleep": 0.5}, {"key": "enter"}, {"wait_exit": 20}],
        "notes": "Codex (native musl binary from the npm package) with a custom model provider (wire_api=responses) pointing at the mock, approval_policy=on-request, run with --no-daemon (otherwise it starts a background app-server daemon). Full-screen TUI on the alternate screen (?1049h) with mouse tracking, kitty keyboard flags and synchronized output; every word is placed with an absolute CUP (ESC[row;colH), so text on one screen row is not contiguous in the byte stream. OSC 7501 state=idle|working|done. Exit: '/exit' + Enter; after leaving the alternate screen Codex prints token usage and a 'codex resume' hint on the normal screen.",
        "notes_long": "Codex runs on the alternate screen, so the 80 lines never reach the terminal's scrollback: Codex scrolls its own transcript viewport; each line is visible at the bottom while it streams.",
        "notes_interrupt": "Ctrl+C during streaming interrupts: partial text stays, then '\u25a0 Conversation interrupted - use /feedback if something went wrong'. OSC 7501 goes working -> idle (not done) for the interrupted turn.",
        "notes_permission": "The mock's exec_command call asks for sandbox_permissions=require_escalated, which makes Codex show 'Would you like to run the following command? ... \u203a 1. Yes, proceed (y)'; approved with a bare 'y' (no Enter). The composer is replaced by the dialog while it is up.",
        "notes_resize": "Resized 120x40 -> 90x30 between the two turns; Codex repaints the whole alternate screen.",
    },
    "gemini": {
        "agent": "gemini-cli", "preset": "gemini", "command": ["gemini"],
        "version_command": ["gemini", "--version"],
        "env": {"HOME": "/root/corpus-homes/$NAME", "GEMINI_API_KEY": "mock-key", "GOOGLE_GEMINI_BASE_URL": "$MOCK_URL",
                "GEMINI_TELEMETRY_ENABLED": "false"},
        "ready": [{"wait_for": "Type your message", "since": "start", "timeout": 30},
                  {"wait_for_raw": "\\x1b\\]0;\u25c7  Ready", "since": "start", "timeout": 30}, {"sleep": 1.5}],
        "done": [{"wait_for_raw": "\\x1b\\]0;\u2726  Working[\\s\\S]*\\x1b\\]0;\u25c7  Ready", "timeout": 60}],
        "interrupt": [{"ctrl_c": True}],
        "approve": [{"wait_for": "Allow once", "timeout": 30}, {"sleep": 1.0}, {"key": "enter"}],
        "exit": [{"send": "/quit"}, {"sleep": 0.5}, {"key": "enter"}, {"wait_exit": 20}],
        "notes": "Gemini CLI with GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL pointing at the mock; settings.json in a private HOME turns off telemetry, update checks and folder trust. Window title (OSC 0, padded with spaces to 80 chars): '\u25c7  Ready (gemini)' idle, '\u2726  Working\u2026 (gemini)' busy, '\u270b  Action Required (gemini)' in a dialog. Ink redraws the whole dynamic area (ESC[2K ESC[1A per line, then the frame) on every change, including each typed key, which makes these recordings large. Exit: '/quit' + Enter.",
        "notes_long": "The mock sends the 80 lines in chunks of 5 (like the real Gemini API). The answer scrolls into the normal scrollback (no alternate screen).",
        "notes_interrupt": "Ctrl+C during streaming cancels the request: the partial text stays, then '\u2139 Request cancelled.' and a transient 'Press Ctrl+C again to exit.' hint.",
        "notes_permission": "run_shell_command -> boxed dialog 'Allow execution of [Shell]? \u25cf 1. Allow once / 2. Allow for this session / 3. No, suggest changes (esc)'; approved with Enter, which is not a turn. The input box is hidden while the dialog is up.",
        "notes_resize": "Resized 120x40 -> 90x30 between the two turns.",
    },
    "aider": {
        "agent": "aider", "preset": "aider",
        "command": ["/opt/aider-venv/bin/aider", "--model", "openai/mock-model", "--no-git", "--no-auto-commits",
                    "--no-show-model-warnings", "--no-check-update", "--analytics-disable", "--no-show-release-notes",
                    "--edit-format", "diff", "--map-tokens", "0", "--no-detect-urls"],
        "version_command": ["/opt/aider-venv/bin/aider", "--version"],
        "env": {"HOME": "/root/corpus-homes/$NAME", "OPENAI_API_KEY": "mock-key", "OPENAI_API_BASE": "$MOCK_URL/v1",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True", "AIDER_CHECK_UPDATE": "false"},
        "ready": [{"wait_for": "Repo-map: disabled", "since": "start", "timeout": 60}, {"sleep": 2.0}],
        "done": [{"wait_for": "Tokens: .* received", "timeout": 60}, {"sleep": 1.0}],
        "interrupt": [{"ctrl_c": True}],
        "after_interrupt": [{"wait_for": "\\^C", "timeout": 10}, {"sleep": 3.0}],
        "approve": [{"wait_for": "Run shell command", "timeout": 60}, {"sleep": 1.0}, {"send": "y"}, {"sleep": 0.3}, {"key": "enter"}],
        "done_tool": [{"wait_for": "Running touch", "timeout": 30}, {"sleep": 2.0}],
        "tool_reply": "Run this command to create the marker file:",
        "exit": [{"send": "/exit"}, {"sleep": 0.5}, {"key": "enter"}, {"wait_exit": 20}],
        "notes": "Aider (prompt_toolkit input, rich markdown output) with OPENAI_API_BASE pointing at the mock (chat completions, streaming). Bracketed paste (ESC[?2004h) is switched on at each '> ' prompt and off right after the submit; no window title, no OSC. The streamed markdown is repainted in place with CR/ESC[2K/ESC[1A. Exit: '/exit' + Enter.",
        "notes_long": "rich renders the ordered list without the dots (' 80 Numbered line 80 of 80 ...'), so the reply substring leaves the number out.",
        "notes_interrupt": "Ctrl+C is a real SIGINT here (cooked tty, '^C' echoed by the line discipline); aider prints '^C again to exit', re-renders the partial reply and returns to '> '.",
        "notes_resize": "Resized 120x40 -> 90x30 between the two turns.",
        "notes_permission": "Aider has no tool calls: the mock's reply suggests a ```bash block and aider asks 'Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:', answered with 'y' + Enter (that Enter is not a new turn). The model sends no text after the command runs, so the turn's reply is the suggestion text.",
    },
}


def submit(text):
    return [{"send": text}, {"sleep": 0.3}, {"key": "enter"}]


def turn(q, a, interrupted=False):
    return {"input": q, "reply": a, "interrupted": interrupted}


def scripts_for(key, A):
    base = {"agent": A["agent"], "preset": A["preset"], "command": A["command"],
            "version_command": A["version_command"], "cwd": "/tmp/corpus-work/" + key, "mock": True,
            "setup": "bash $CORPUS_TOOLS/setup_agent.sh " + key, "env": A["env"]}
    base.update(A.get("extra", {}))
    out = {}
    wait_reply = lambda a: [{"wait_for": a.replace(".", "\\."), "timeout": 60}]  # noqa
    done = A["done"]
    settle = [{"sleep": 1.0}]

    out["basic"] = dict(base, size=[120, 40], steps=A["ready"]
                        + submit(Q1) + done + settle + submit(Q2) + done + settle + A["exit"],
                        turns=[turn(Q1, A1), turn(Q2, A2)])
    out["long"] = dict(base, size=[100, 30], steps=A["ready"] + submit(QL) + A.get("done_long", done) + settle + A["exit"],
                       turns=[turn(QL, AL)])
    out["interrupt"] = dict(base, size=[120, 40], steps=A["ready"] + submit(QS)
                            + [{"wait_for": "Slow\\s+line\\s+3", "timeout": 60}, {"sleep": 0.5}] + A["interrupt"]
                            + A.get("after_interrupt", [{"sleep": 3.0}])
                            + submit(Q2) + done + settle + A["exit"],
                            turns=[turn(QS, AS, True), turn(Q2, A2)])
    out["permission"] = dict(base, size=[120, 40], steps=A["ready"] + submit(QT) + A["approve"]
                             + A.get("done_tool", done) + settle + A["exit"],
                             turns=[turn(QT, A.get("tool_reply", AT))])
    out["resize"] = dict(base, size=[120, 40], steps=A["ready"] + submit(Q1) + done + settle
                         + [{"resize": "90x30"}, {"sleep": 1.5}] + submit(Q3) + done + settle + A["exit"],
                         turns=[turn(Q1, A1), turn(Q3, A3)])
    for k, s in out.items():
        s["name"] = "%s-%s" % (key, k)
        s["notes"] = A["notes"] + " " + A.get("notes_" + k, "")
        s["notes"] = s["notes"].strip()
    return out


# ---------------------------------------------------------------------------
# Second batch (staging corpus): sizes in the name, new reply kinds (table, unicode),
# resize during streaming, typed-ahead input, interrupt/permission at 80x24.
# Recorded with the newest agent versions; see /work/staging-corpus/NOTES.md.
# ---------------------------------------------------------------------------

QTB, ATB = "show me a table of shells", "That table lists six shells."
QU = "show me a unicode sample"
AU = "Unicode test: \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\nThumbs up \U0001F44D and a family \U0001F468\u200d\U0001F469\u200d\U0001F467 here.\nEnd of the unicode sample."
AS_LAST = "Slow line 9: one two three four five."

# Per agent: "after_a2" = the second answer's text followed by the idle signal (typed-ahead case, where the
# first turn's own end signal comes after the second question was submitted), overrides for the new cases,
# and notes describing the newest version.
NEW = {
    "claude": {
        # 2.1.332 prints a one-line reply only when it is complete, in the same write as the idle title
        # (title first), and follows it with the end line '\u273b <Verb> for Ns \u00b7 done <time>'
        "after_a2": [{"wait_for_raw": "Jupiter[\\s\\S]*\\u273b", "timeout": 60}],
        "permission_command": ["claude", "--permission-mode", "manual"],
        "notes": "Claude Code 2.1.332 (newest) with ANTHROPIC_BASE_URL pointing at the mock; onboarding/trust skipped via ~/.claude.json (setup_agent.sh). This version is a full-screen TUI: alternate screen (ESC[?1049h) with mouse tracking (?1000h ?1002h ?1003h ?1006h); every update starts from ESC[H and moves down with ESC[nB. Window title stays 'Claude Code' (no session-title side request): '\u2733 Claude Code' idle, '\u25d0 Claude Code' / '\u25d1 Claude Code' busy. Idle footer '\u23f5\u23f5 auto mode on (shift+tab to cycle) \u00b7 \u2190 for agents', busy footer '\u00b7 esc to interrupt \u00b7 \u2190 for agents'; each finished reply ends with '\u273b <Verb> for Ns \u00b7 done <h:mm AM>'. Empty input box '\u276f\u00a0' (NBSP). Startup queries: XTVERSION, kitty keyboard, OSC 7501;? (unanswered), DA1. Exit: '/exit' + Enter.",
    },
    "codex": {
        "after_a2": [{"wait_for_raw": "Jupiter[\\s\\S]*\\x1b\\]7501;state=done", "timeout": 60}],
    },
    "gemini": {
        "after_a2": [{"wait_for_raw": "Jupiter[\\s\\S]*\\x1b\\]0;\u25c7  Ready", "timeout": 60}],
    },
    "aider": {
        "after_a2": [{"wait_for": "Jupiter[\\s\\S]*Tokens: .* received", "timeout": 60}, {"sleep": 1.0}],
        "table_reply": ATB,
        # rich's markdown joins the three reply lines into one paragraph (soft breaks) and wraps it at the
        # terminal width; it measures the ZWJ family as fewer cells than pyte/xterm do, so on an emulated
        # 80-column screen the paragraph line overflows: only these pieces are reliably visible.
        "unicode_reply": "Unicode test: \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\nThumbs up \U0001F44D and a family\nunicode sample.",
        "unicode_notes": "aider/rich renders the reply as ONE paragraph (markdown soft line breaks become spaces), "
                         "wrapped by rich at 80 cells counting the ZWJ family as 2 cells: row 1 'Unicode test: \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 Thumbs "
                         "up \U0001F44D and a family \U0001F468\u200d\U0001F469\u200d\U0001F467 here. End of the', row 2 'unicode sample.'. The sidecar "
                         "reply lists only pieces visible on any emulator (pyte 0.8.2 drops the rest of a printed run after a ZWJ, "
                         "so 'here. End of the' never reaches its screen).",
    },
}

# What each agent did with the typed-ahead question (filled in from the recordings, render.py).
TYPEAHEAD = {
    "claude": {"notes": "SEPARATE TURNS: Claude Code 2.1.332 queues the typed-ahead message (shown under the "
               "transcript as '\u276f what is the largest planet' + '\u23bf  Queued \u00b7 ctrl+x ctrl+s to send now', "
               "input box placeholder 'Press up to edit queued messages'); the slow reply runs to its end ('\u273b <Verb> "
               "for 11s \u00b7 done'), the title flips to the idle '\u2733 Claude Code' for ~30 ms, then the queued "
               "question is sent as a new request and answered as a second turn with its own end line."},
    "codex": {"turns": [turn(QS + "\n" + Q2, "Slow line 1: one two three four five.\nSlow line 2: one two three four five.\n" + A2)],
              "notes": "MERGED (steer): Enter while Codex streams submits the message into the running turn: Codex "
                       "drops the first response stream at once (the mock sees the client go away after 'Slow line 3: "
                       "one two three four'), echoes '\u203a what is the largest planet' in the transcript and sends a "
                       "new request with it; the unfinished paragraph 'Slow line 3: one two three four' is removed from "
                       "the screen when the new answer streams in, and 'Slow line 9' never arrives. OSC 7501 shows one "
                       "turn: working (first Enter) ... done after the Jupiter answer, nothing at the second Enter. "
                       "Listed as one turn whose input is both questions joined with \\n and whose reply is the kept "
                       "text of the first answer plus the second answer. (The footer offers 'tab to queue message' "
                       "while typing during a turn: Tab would queue instead of steering.)"},
    "gemini": {"notes": "SEPARATE TURNS: Gemini CLI queues the typed-ahead message (shown above the spinner as "
               "'Queued (press \u2191 to edit):' + the text; the input box is empty again); the slow reply runs to its "
               "end, the title goes '\u25c7  Ready' for ~100 ms, then the queued message is echoed as ' > what is the "
               "largest planet' in the transcript and answered as a second turn ('\u2726  Working\u2026' -> "
               "'\u25c7  Ready')."},
    "aider": {"notes": "SEPARATE TURNS: while aider streams, the tty is in cooked mode, so the typed-ahead characters "
              "are echoed by the line discipline in the middle of the streamed markdown (and wiped by the next rich "
              "Live repaint); Enter is echoed as CR LF. The line waits in the tty buffer; after the first reply's "
              "'Tokens: ... received.' line and the rule, prompt_toolkit's next prompt (ESC[6n, ESC[?2004h) reads it "
              "at once: '> what is the largest planet' is drawn and submitted ~40 ms later (ESC[?2004l), without any "
              "key arriving at that moment, and answered as a second turn."},
}


def new_scripts_for(key, A):
    N = NEW[key]
    base = {"agent": A["agent"], "preset": A["preset"], "command": A["command"],
            "version_command": A["version_command"], "cwd": "/tmp/corpus-work/" + key, "mock": True,
            "setup": "bash $CORPUS_TOOLS/setup_agent.sh " + key, "env": A["env"]}
    base.update(A.get("extra", {}))
    done, settle, ready, exit_ = A["done"], [{"sleep": 1.0}], A["ready"], A["exit"]
    notes = N.get("notes", A["notes"])
    out = {}
    out["basic-80x24"] = dict(base, size=[80, 24], steps=ready + submit(Q1) + done + settle + submit(Q2) + done
                              + settle + exit_, turns=[turn(Q1, A1), turn(Q2, A2)],
                              notes="80x24, two questions.")
    out["long-80x24"] = dict(base, size=[80, 24], steps=ready + submit(QL) + A.get("done_long", done) + settle + exit_,
                             turns=[turn(QL, AL)], notes="80x24, the 80-line reply. " + A.get("notes_long", ""))
    out["table-100x30"] = dict(base, size=[100, 30], steps=ready + submit(QTB) + done + settle + exit_,
                               turns=[turn(QTB, N.get("table_reply", ATB))],
                               notes="100x30, a markdown table reply (header, separator, 6 rows: bash/zsh/fish/ksh/tcsh/dash "
                                     "with config file and year), then the line 'That table lists six shells.' "
                                     "(the sidecar reply; the table itself is re-rendered by each agent).")
    out["unicode-80x24"] = dict(base, size=[80, 24], steps=ready + submit(QU) + done + settle + exit_,
                                turns=[turn(QU, N.get("unicode_reply", AU))],
                                notes="80x24, a reply with CJK (double width), an emoji and a ZWJ family sequence "
                                      "(U+1F468 U+200D U+1F469 U+200D U+1F467). Width of the ZWJ family: Claude Code and "
                                      "Codex treat it as ONE 2-cell cluster and position the next word accordingly (Claude "
                                      "'ESC[29G<family> CR ESC[31G here.', Codex 'ESC[10;29H<family> ESC[10;32Hhere.'); Gemini "
                                      "and aider print the text in one run; a per-code-point wcwidth terminal (xterm, pyte) "
                                      "gives it 6 cells. pyte 0.8.2 also drops the rest of a printed run after a ZWJ, so "
                                      "check_corpus.py accepts the line with the family cut to its first emoji (it prints a note). "
                                      + N.get("unicode_notes", ""))
    mid = [{"wait_for": "Numbered\\s+line\\s+20\\s", "timeout": 60}, {"resize": "80x24"}]
    out["resize-120x40"] = dict(base, size=[120, 40],
                                steps=ready + submit(QL) + mid + A.get("done_long", done) + settle
                                + [{"resize": "120x40"}, {"sleep": 1.5}] + submit(Q3) + done + settle + exit_,
                                turns=[turn(QL, AL), turn(Q3, A3)],
                                notes="Starts at 120x40; resized to 80x24 while the 80-line reply streams (right after "
                                      "'Numbered line 20' appeared), then back to 120x40 at the idle prompt before the "
                                      "second question.")
    ta = TYPEAHEAD.get(key, {})
    out["typeahead-80x24"] = dict(base, size=[80, 24],
                                  steps=ready + submit(QS) + [{"wait_for": "Slow\\s+line\\s+2", "timeout": 60}]
                                  + submit(Q2) + N["after_a2"] + settle + exit_,
                                  turns=ta.get("turns", [turn(QS, AS_LAST), turn(Q2, A2)]),
                                  notes="80x24, typed-ahead: the second question is typed and submitted (Enter) while the "
                                        "slow reply still streams (after 'Slow line 2'). " + ta.get("notes", ""))
    out["interrupt-80x24"] = dict(base, size=[80, 24], steps=ready + submit(QS)
                                  + [{"wait_for": "Slow\\s+line\\s+3", "timeout": 60}, {"sleep": 0.5}] + A["interrupt"]
                                  + A.get("after_interrupt", [{"sleep": 3.0}]) + submit(Q2) + done + settle + exit_,
                                  turns=[turn(QS, AS, True), turn(Q2, A2)],
                                  notes="80x24. " + A.get("notes_interrupt", ""))
    out["permission-80x24"] = dict(base, size=[80, 24], steps=ready + submit(QT) + A["approve"]
                                   + A.get("done_tool", done) + settle + exit_,
                                   turns=[turn(QT, A.get("tool_reply", AT))],
                                   notes="80x24. " + A.get("notes_permission", ""))
    if "permission_command" in N:
        out["permission-80x24"]["command"] = N["permission_command"]
    if key == "aider":
        cmd = A["command"] + ["--chat-mode", "ask"]
        out["askmode-80x24"] = dict(base, command=cmd, size=[80, 24],
                                    steps=[{"wait_for": "ask> ", "since": "start", "timeout": 60}, {"sleep": 2.0}]
                                    + submit(Q1) + done + settle
                                    + submit("/chat-mode code")
                                    + [{"wait_for": "with diff edit format[\\s\\S]*Repo-map: disabled", "timeout": 20},
                                       {"sleep": 2.0}]
                                    + submit(Q2) + done + settle + exit_,
                                    turns=[turn(Q1, A1), turn(Q2, A2)],
                                    notes="aider --chat-mode ask: the prompt is 'ask> '. After the first answer "
                                          "'/chat-mode code' switches to code mode (prompt '> '); the command gets no "
                                          "model reply, so it is not a turn.")
    for k, s in out.items():
        s["name"] = "%s-%s" % (key, k)
        s["notes"] = (notes + " " + s["notes"]).strip()
    return out


# ---------------------------------------------------------------------------
# Third batch: the agents' own hooks wired (record.py "hooks": true), their reports recorded as
# "h" events: <agent>-hooks-<case>-<size> for claude and codex (basic, long, permission,
# typeahead) and gemini (basic, long), at 80x24 and 120x40.
# ---------------------------------------------------------------------------

# The report that ends a turn, per agent (a regex on the report's text, for "wait_hook").
HOOK_END = {"claude": '"hook_event_name":\\s*"Stop"', "codex": "agent-turn-complete",
            "gemini": '"hook_event_name":\\s*"AfterAgent"'}
HOOK_CASES = {"claude": ["basic", "long", "permission", "typeahead", "deny"],
              "codex": ["basic", "long", "permission", "typeahead"],
              "gemini": ["basic", "long"]}
HOOK_SIZES = [[80, 24], [120, 40]]
# How each agent's dialog is answered by its own keys, and what it draws when a refusal stops it.
DENY = {"claude": {"command": ["claude", "--permission-mode", "default"], "dialog": "Do you want to proceed", "allow": [{"send": "1"}], "deny": [{"send": "3"}],
                   "stopped": "What should Claude do instead", "before": "I will create the marker file with a shell command.",
                   "notes": "After '3' (No) Claude draws '\u23bf  Interrupted \u00b7 What should Claude do instead?' "
                            "(only the changed cells: the \u23bf may stay from before) and its prompt, with no Stop "
                            "hook and no new title: the turn ends there, interrupted."}}
HOOK_NOTES = ("The agent's hooks are wired for the run as clippy-session wires them (record.py \"hooks\": "
              "clippy_hooks::per_run's wiring, pointing at target/debug/clippy-ctl hook AGENT, "
              "CLIPPY_HOOK_SOCKET = the recorder's socket); each report is an \"h\" event.")


def hooks_scripts_for(key, A):
    N = NEW[key]
    base = {"agent": A["agent"], "preset": A["preset"], "command": A["command"],
            "version_command": A["version_command"], "cwd": "/tmp/corpus-work/" + key, "mock": True,
            "hooks": True, "setup": "bash $CORPUS_TOOLS/setup_agent.sh " + key, "env": A["env"]}
    done, settle, ready, exit_ = A["done"], [{"sleep": 1.0}], A["ready"], A["exit"]
    notes = N.get("notes", A["notes"])

    def ended(n):
        return [{"wait_hook": HOOK_END[key], "count": n, "timeout": 20}]

    out = {}
    for cols, rows in HOOK_SIZES:
        size = "%dx%d" % (cols, rows)
        cases = {}
        cases["basic"] = dict(steps=ready + submit(Q1) + done + ended(1) + settle + submit(Q2) + done + ended(2)
                              + settle + exit_, turns=[turn(Q1, A1), turn(Q2, A2)], notes="Two questions.")
        cases["long"] = dict(steps=ready + submit(QL) + A.get("done_long", done) + ended(1) + settle + exit_,
                             turns=[turn(QL, AL)], notes="The 80-line reply. " + A.get("notes_long", ""))
        cases["permission"] = dict(steps=ready + submit(QT) + A["approve"] + A.get("done_tool", done) + ended(1)
                                   + settle + exit_, turns=[turn(QT, A.get("tool_reply", AT))],
                                   notes=A.get("notes_permission", ""))
        if "permission_command" in N:
            cases["permission"]["command"] = N["permission_command"]
        ta = TYPEAHEAD.get(key, {})
        ta_turns = ta.get("turns", [turn(QS, AS_LAST), turn(Q2, A2)])
        cases["typeahead"] = dict(steps=ready + submit(QS) + [{"wait_for": "Slow\\s+line\\s+2", "timeout": 60}]
                                  + submit(Q2) + N["after_a2"] + ended(len(ta_turns)) + settle + exit_,
                                  turns=ta_turns,
                                  notes="Typed-ahead: the second question is typed and submitted (Enter) while the "
                                        "slow reply still streams (after 'Slow line 2'). " + ta.get("notes", ""))
        # Allowed, refused, allowed again (issue 30): after "No" Claude Code stops the turn with
        # `Interrupted · What should Claude do instead?`, no Stop hook and no new title.
        deny = DENY.get(key)
        if deny:
            dialog = [{"wait_for": deny["dialog"], "timeout": 30}, {"sleep": 0.8}]
            cases["deny"] = dict(
                steps=ready + submit(QT) + dialog + deny["allow"] + ended(1) + settle
                + submit(QT) + dialog + deny["deny"] + [{"wait_for": deny["stopped"], "timeout": 30},
                                                        {"sleep": 2.5}]
                + submit(QT) + dialog + deny["allow"] + ended(2) + settle + exit_,
                turns=[turn(QT, A.get("tool_reply", AT)), turn(QT, deny["before"], interrupted=True),
                       turn(QT, A.get("tool_reply", AT))],
                notes="A tool allowed, refused, allowed again, each answered with the dialog's own key. "
                      + deny["notes"])
            cases["deny"]["command"] = deny["command"]
        for case in HOOK_CASES[key]:
            name = "%s-hooks-%s-%s" % (key, case, size)
            out[name] = dict(base, size=[cols, rows], **cases[case])
            out[name]["notes"] = (notes + " " + HOOK_NOTES + " " + size + ". " + out[name]["notes"]).strip()
    for name, s in out.items():
        s["name"] = name
    return out


# ---------------------------------------------------------------------------
# Fourth batch (issue 27): questions pasted (bracketed paste, one write), pasted then edited, a
# long paste an agent shows as a placeholder; Gemini's long reply at 80x24 with resizes; Claude
# Code with a question typed right before a long reply ends. <agent>-<case>-<size>.
# ---------------------------------------------------------------------------

QP = "Translate these notes into French:\nred apple\nfresh bread\ncold milk"
AP = "Here are the notes in French:\npomme rouge\npain frais\nlait froid\nThose three notes are part 1 of the list."
QPL = "Summarize these pasted lines:\n" + "\n".join(
    "note %d: the quick brown fox jumps over the lazy dog" % n for n in range(1, 12))
APL = "The pasted note has twelve lines about one topic.\nEach of them repeats the same sentence."
PASTE_AGENTS = ["claude", "codex", "gemini", "aider"]


def one_message(q, a):
    """A question of several lines, pasted: one message, one answer (`sent_as_one`)."""
    return dict(turn(q, a), sent_as_one=True)


def paste(text):
    return [{"paste": text}, {"sleep": 0.8}, {"key": "enter"}]


def paste_scripts_for(key, A):
    base = {"agent": A["agent"], "preset": A["preset"], "command": A["command"],
            "version_command": A["version_command"], "cwd": "/tmp/corpus-work/" + key, "mock": True,
            "setup": "bash $CORPUS_TOOLS/setup_agent.sh " + key, "env": A["env"]}
    done, settle, ready, exit_ = A["done"], [{"sleep": 1.0}], A["ready"], A["exit"]
    out = {}
    for cols, rows in [[80, 24], [120, 40]]:
        size = "%dx%d" % (cols, rows)
        # Pasted then edited: the head pasted, the rest typed, one word deleted with backspaces.
        edited = [{"paste": "what is the largest"}, {"sleep": 0.5}, {"send": " planet moon"},
                  {"sleep": 0.3}] + [{"key": "backspace"}] * 5 + [{"sleep": 0.5}, {"key": "enter"}]
        out["paste-" + size] = dict(
            base, size=[cols, rows],
            steps=ready + paste(QP) + done + settle + edited + done + settle + paste(QPL) + done + settle + exit_,
            # aider's rich markdown joins the two reply lines into one paragraph, wrapped at the width.
            turns=[one_message(QP, AP), turn(Q2, A2),
                   one_message(QPL, APL.split("\n")[0] if key == "aider" else APL)],
            notes=size + ". Pasted questions, each in one write inside ESC[200~ ESC[201~ (bracketed paste, which "
                  "the agent turns on), then Enter 0.8 s later: a 4-line question; 'what is the largest' pasted, "
                  "' planet moon' typed and ' moon' deleted with five backspaces; a 12-line question (agents show "
                  "long pastes as a placeholder in their input box).")
    if key == "gemini":
        mid = [{"wait_for": "Numbered\\s+line\\s+30\\s", "timeout": 60}, {"resize": "100x30"},
               {"wait_for": "Numbered\\s+line\\s+55\\s", "timeout": 60}, {"resize": "80x24"}]
        out["long-resize-80x24"] = dict(
            base, size=[80, 24], steps=ready + submit(QL) + mid + done + settle + submit(Q3) + done + settle + exit_,
            turns=[turn(QL, AL), turn(Q3, A3)],
            notes="80x24, the 80-line reply, resized to 100x30 after 'Numbered line 30' and back to 80x24 after "
                  "'Numbered line 55' while it streams; then a second question. Gemini CLI clears the screen and its "
                  "scrollback (ESC[2J ESC[3J) and reprints its transcript after each resize.")
        out["long2-80x24"] = dict(
            base, size=[80, 24], steps=ready + submit(Q1) + done + settle + submit(QL) + done + settle + exit_,
            turns=[turn(Q1, A1), turn(QL, AL)],
            notes="80x24, a short answer, then the 80-line reply (its live area outgrows the screen).")
    if key in ("claude", "codex"):
        grow = [{"wait_for": "Numbered\\s+line\\s+25\\s", "timeout": 60}, {"resize": "140x46"}, {"sleep": 1.5},
                {"resize": "120x40"}]
        out["long-resize-120x40"] = dict(
            base, size=[120, 40], steps=ready + submit(QL) + grow + done + settle + submit(Q3) + done + settle + exit_,
            turns=[turn(QL, AL), turn(Q3, A3)],
            notes="120x40, the 80-line reply, resized to 140x46 after 'Numbered line 25' and back to 120x40 1.5 s "
                  "later while it streams (found live: a line at the seam went missing); then a second question.")
    if key == "claude":
        late = [{"wait_for": "Numbered\\s+line\\s+7[6-9]\\s", "timeout": 60}, {"send": Q2, "delay": 0.04},
                {"sleep": 0.3}, {"key": "enter"}]
        out["typeahead-late-80x24"] = dict(
            base, size=[80, 24], steps=ready + submit(QL) + late + [{"wait_for": "Jupiter", "timeout": 60}] + done
            + settle + exit_,
            turns=[turn(QL, AL), turn(Q2, A2)],
            notes="80x24, the 80-line reply; the second question is typed (40 ms a key) from the moment "
                  "'Numbered line 76'-'79' shows, across the reply's end, then Enter.")
    for k, s in out.items():
        s["name"] = "%s-%s" % (key, k)
        s["notes"] = (A["notes"] + " " + s["notes"]).strip()
    return out


# ---------------------------------------------------------------------------
# Agents clippy has no preset for (issue 27), run as a new user would (preset "generic": the
# screen going still ends turns). Qwen Code's recordings are in the corpus; OpenCode's scripts
# are for the held-out check (record them with --out elsewhere, never into the corpus).
# Installed with `npm install --prefix /opt/agents/<agent> <package>`.
# ---------------------------------------------------------------------------

UNKNOWN = {
    "qwen": {
        "agent": "qwen-code", "command": ["/opt/agents/qwen/node_modules/.bin/qwen"],
        "version_command": ["/opt/agents/qwen/node_modules/.bin/qwen", "--version"],
        "env": {"HOME": "/root/corpus-homes/$NAME", "OPENAI_API_KEY": "mock-key",
                "OPENAI_BASE_URL": "$MOCK_URL/v1", "OPENAI_MODEL": "mock-model"},
        "ready": [{"wait_for": "Type your message", "since": "start", "timeout": 60}, {"sleep": 1.5}],
        "exit": [{"send": "/quit"}, {"sleep": 0.5}, {"key": "enter"}, {"wait_exit": 20}],
        "notes": "Qwen Code (npm @qwen-code/qwen-code, a Gemini CLI fork) with OPENAI_BASE_URL pointing at the "
                 "mock's Chat Completions endpoint (no proxy variables: it ignores NO_PROXY). Ink, inline (no "
                 "alternate screen); its title carries no state. Idle line '>   Type your message or "
                 "@path/to/file' between two rules, footer '? for shortcuts'; while it works a spinner line "
                 "'<braille> <phrase>... (0s, tokens, esc to cancel)' over the input box, which stays. "
                 "The cursor is hidden and left under the live area. After each reply it sends a side request "
                 "(memory extraction) that draws nothing. Exit: '/quit' + Enter.",
    },
    "opencode": {
        "agent": "opencode", "command": ["/opt/agents/opencode/node_modules/.bin/opencode"],
        "version_command": ["/opt/agents/opencode/node_modules/.bin/opencode", "--version"],
        "env": {"HOME": "/root/corpus-homes/$NAME", "OPENCODE_DISABLE_AUTOUPDATE": "1",
                "OPENCODE_DISABLE_MODELS_FETCH": "1"},
        "ready": [{"wait_for": "Ask anything", "since": "start", "timeout": 90}, {"sleep": 1.5}],
        "exit": [{"ctrl_c": True}, {"sleep": 0.5}, {"ctrl_c": True}, {"wait_exit": 20}],
        "notes": "OpenCode (npm opencode-ai, a native binary) with a provider of its own for the mock "
                 "(setup_agent.sh). Full-screen on the alternate screen, cells positioned run by run; the cursor "
                 "stays visible in its input box; busy footer 'esc interrupt'. Held out: not in the corpus.",
    },
}
UNKNOWN_CASES = {"qwen": ["basic", "long"], "opencode": ["basic", "long"]}


def unknown_scripts_for(key, A):
    base = {"agent": A["agent"], "preset": "generic", "command": A["command"],
            "version_command": A["version_command"], "cwd": "/tmp/corpus-work/" + key, "mock": True,
            "setup": "bash $CORPUS_TOOLS/setup_agent.sh " + key, "env": A["env"]}
    ready, exit_ = A["ready"], A["exit"]

    def answered(text):
        # No signal to wait for: the reply's last words on screen, then the screen at rest.
        return [{"wait_for": text, "timeout": 60}, {"sleep": 2.0}]

    cases = {
        "basic": dict(steps=ready + submit(Q1) + answered("Paris") + submit(Q2) + answered("solar\\s+system")
                      + exit_, turns=[turn(Q1, A1), turn(Q2, A2)], notes="Two questions."),
        "long": dict(steps=ready + submit(QL) + answered("That\\s+was\\s+all\\s+80\\s+lines") + exit_,
                     turns=[turn(QL, AL)], notes="The 80-line reply."),
    }
    out = {}
    for case in UNKNOWN_CASES[key]:
        name = "%s-%s-80x24" % (key, case)
        out[name] = dict(base, size=[80, 24], **cases[case])
        out[name]["name"] = name
        out[name]["notes"] = (A["notes"] + " 80x24. " + out[name]["notes"]).strip()
    return out


if __name__ == "__main__":
    import sys
    os.makedirs(SCRIPTS, exist_ok=True)
    keys = sys.argv[1:] or list(AGENTS) + list(UNKNOWN)
    for key in keys:
        if key in UNKNOWN:
            generated = list(unknown_scripts_for(key, UNKNOWN[key]).items())
        else:
            generated = list(scripts_for(key, AGENTS[key]).items()) + list(new_scripts_for(key, AGENTS[key]).items())
        if key in HOOK_CASES:
            generated += list(hooks_scripts_for(key, AGENTS[key]).items())
        if key in PASTE_AGENTS:
            generated += list(paste_scripts_for(key, AGENTS[key]).items())
        for kind, s in generated:
            order = ["name", "agent", "preset", "command", "version_command", "size", "cwd", "mock", "hooks", "setup",
                     "env", "steps", "turns", "notes"]
            s = {k: s[k] for k in order if k in s}
            with open(os.path.join(SCRIPTS, s["name"] + ".json"), "w") as f:
                json.dump(s, f, indent=1, ensure_ascii=False)
                f.write("\n")
            print("wrote", s["name"])
