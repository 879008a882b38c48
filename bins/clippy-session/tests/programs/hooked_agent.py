#!/usr/bin/env python3
"""A line-mode agent that runs its hooks the way Claude Code, Codex or Gemini CLI do.

Run it under the name of the agent it plays (a symlink called `claude`, `codex` or `gemini`):
it finds the hooks clippy-session wired for it where that agent would (Claude: `--settings`
JSON; Codex: `-c notify=[...]`; Gemini: the JSON file in GEMINI_CLI_SYSTEM_DEFAULTS_PATH) and
runs them with that agent's payloads. As `codex` or `gemini` its prompt is `> `, which their
presets do not take for a prompt, so only the hooks can end its turns; as `claude` it draws
Claude Code's `❯` prompt and its busy and idle titles, so the screen can end them too (after
the Stop hook, as Claude Code runs it before drawing its idle frame).

Lines it understands:
  perm        asks for a permission (hook; as codex on screen only) and draws its dialog as
              that agent does (claude: a numbered menu with `❯`; codex: options with their
              keys `(y)`, `(p)`, `(esc)`; gemini: `Allow once` / `Allow for this session`),
              reads keys in cbreak mode as the agent does (an option's number or key, Enter
              on the selected one, Esc; arrows move), then says "You answered allow|always|deny."
  quiet       answers without running its turn-end hook
  anything    answers "Read <n> characters." and a second line, then runs its turn-end hook
"""

import json
import os
import select
import subprocess
import sys
import termios
import tty

AGENT = os.path.basename(sys.argv[0])


def settings_hooks():
    """The hooks of the settings layers the agent reads, each event's groups concatenated."""
    layers = []
    if AGENT == "claude" and "--settings" in sys.argv:
        layers.append(json.loads(sys.argv[sys.argv.index("--settings") + 1]))
    if AGENT == "gemini":
        paths = [
            os.environ.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH"),
            os.path.join(os.environ.get("HOME", "/nonexistent"), ".gemini", "settings.json"),
        ]
        for path in filter(None, paths):
            if os.path.exists(path):
                with open(path) as f:
                    layers.append(json.load(f))
    hooks = {}
    for layer in layers:
        for event, groups in layer.get("hooks", {}).items():
            hooks.setdefault(event, []).extend(groups)
    return hooks


def codex_notify():
    import tomllib

    args = sys.argv[1:]
    for i, arg in enumerate(args[:-1]):
        if arg == "-c" and args[i + 1].startswith("notify="):
            return tomllib.loads(args[i + 1])["notify"]
    return None


HOOKS = settings_hooks()
NOTIFY = codex_notify() if AGENT == "codex" else None


def run_hook(event, payload):
    payload = dict(payload, hook_event_name=event, session_id="s1", cwd=os.getcwd())
    for group in HOOKS.get(event, []):
        for hook in group.get("hooks", []):
            subprocess.run(
                ["sh", "-c", hook["command"]],
                input=json.dumps(payload).encode(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )


def turn_ended(prompt, message):
    if AGENT == "codex":
        if NOTIFY:
            payload = {
                "type": "agent-turn-complete",
                "turn-id": "1",
                "input-messages": [prompt],
                "last-assistant-message": message,
            }
            subprocess.run(NOTIFY + [json.dumps(payload)], check=False)
    elif AGENT == "gemini":
        run_hook("AfterAgent", {"prompt": prompt, "prompt_response": message})
    else:
        run_hook("Stop", {"last_assistant_message": message, "stop_hook_active": False})


def prompt_submitted(prompt):
    run_hook("BeforeAgent" if AGENT == "gemini" else "UserPromptSubmit", {"prompt": prompt})


PROMPT = "\u276f\u00a0" if AGENT == "claude" else "> "


def title(busy):
    if AGENT == "claude":
        out("\x1b]0;%s Claude Code\x07" % ("\u2802" if busy else "\u2733"))


def out(text):
    sys.stdout.write(text)
    sys.stdout.flush()


# The dialog's options as each agent draws them: (label, key drawn or None, what it means).
OPTIONS = {
    "claude": [
        ("Yes", None, "allow"),
        ("Yes, and don't ask again for ls commands in this project", None, "always"),
        ("No, and tell Claude what to do differently", "esc", "deny"),
    ],
    "codex": [
        ("Yes, proceed", "y", "allow"),
        ("Yes, and don't ask again for commands that start with `ls`", "p", "always"),
        ("No, and tell Codex what to do differently", "esc", "deny"),
    ],
    "gemini": [
        ("Allow once", None, "allow"),
        ("Allow for this session", None, "always"),
        ("No, suggest changes", "esc", "deny"),
    ],
}


def draw_dialog(selected):
    options = OPTIONS.get(AGENT, OPTIONS["claude"])
    mark = {"codex": "\u203a", "gemini": "\u25cf"}.get(AGENT, "\u276f")
    out(" Do you want to proceed?\r\n")
    for i, (label, key, _) in enumerate(options):
        cursor = mark if i == selected else " "
        shown = label + (" (%s)" % key if key else "")
        out(" %s %d. %s\x1b[K\r\n" % (cursor, i + 1, shown))
    out(" Esc to cancel\r\n")


def dialog():
    """Draws the dialog and reads keys until one picks an option; returns its meaning."""
    options = OPTIONS.get(AGENT, OPTIONS["claude"])
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)
    selected = 0
    try:
        while True:
            draw_dialog(selected)
            key = os.read(fd, 1)
            if key == b"\x1b":
                # An arrow, or Esc alone.
                more = b""
                while select.select([fd], [], [], 0.05)[0]:
                    more += os.read(fd, 16)
                if more.endswith(b"A"):
                    selected = max(0, selected - 1)
                elif more.endswith(b"B"):
                    selected = min(len(options) - 1, selected + 1)
                elif not more:
                    chosen = [o for o in options if o[1] == "esc"]
                    return (chosen or [options[-1]])[0][2]
            elif key in (b"\r", b"\n"):
                return options[selected][2]
            elif key.isdigit() and 1 <= int(key) <= len(options):
                return options[int(key) - 1][2]
            else:
                for label, drawn, meaning in options:
                    if drawn and key.decode(errors="replace") == drawn:
                        return meaning
            # Redraw over the old dialog.
            out("\x1b[%dA" % (len(options) + 2))
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


out("hooks: %s\r\n" % ("wired" if HOOKS or NOTIFY else "none"))
out("socket: %s\r\n" % ("set" if os.environ.get("CLIPPY_HOOK_SOCKET") else "unset"))
out(PROMPT)
for line in sys.stdin:
    line = line.strip()
    prompt_submitted(line)
    title(True)
    if line == "perm":
        if AGENT == "gemini":
            run_hook(
                "Notification",
                {
                    "notification_type": "ToolPermission",
                    "message": "Allow ls?",
                    "details": {"type": "exec", "title": "Shell", "command": "ls"},
                },
            )
        elif AGENT == "codex":
            # Codex's notify says nothing of it: only its screen does.
            out("  Would you like to run the following command?\r\n")
        else:
            run_hook("PermissionRequest", {"tool_name": "Bash", "tool_input": {"command": "ls"}})
        answer = dialog()
        message = "You answered %s." % answer
        out(message + "\r\n")
    else:
        message = "Read **%d** characters.\n\nThat is all." % len(line)
        out("Read %d characters.\r\n\r\nThat is all.\r\n" % len(line))
    if line != "quiet":
        turn_ended(line, message)
    title(False)
    out(PROMPT)
