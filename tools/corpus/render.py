#!/usr/bin/env python3
"""Replay an asciicast v2 file through pyte and print screens (for REPORT.md).

    python3 tools/corpus/render.py FILE.cast                 # final screen
    python3 tools/corpus/render.py FILE.cast --at 3.5 --at 7 # screens at given times (s)
    python3 tools/corpus/render.py FILE.cast --before-input  # screen before each Enter typed
    python3 tools/corpus/render.py FILE.cast --titles        # OSC 0/1/2 titles with times
    python3 tools/corpus/render.py FILE.cast --osc           # every OSC sequence with times
    python3 tools/corpus/render.py FILE.cast --hooks         # the agent's hook reports ("h" events)
"""
import argparse
import json
import re
import sys

import pyte


class Screen(pyte.Screen):
    def select_graphic_rendition(self, *attrs, **kw):
        if not kw.get("private"):
            super().select_graphic_rendition(*attrs)

OSC_RE = re.compile(r"\x1b\]([^\x07\x1b]*)(?:\x07|\x1b\\)")


def screen_text(screen, cursor=True):
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    out = "\n".join("%2d|%s" % (i + 1, l) for i, l in enumerate(lines))
    if cursor:
        out += "\n   (cursor row %d col %d)" % (screen.cursor.y + 1, screen.cursor.x + 1)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cast")
    ap.add_argument("--at", type=float, action="append", default=[])
    ap.add_argument("--before-input", action="store_true")
    ap.add_argument("--titles", action="store_true")
    ap.add_argument("--osc", action="store_true")
    ap.add_argument("--hooks", action="store_true")
    a = ap.parse_args()
    with open(a.cast, encoding="utf-8") as f:
        header = json.loads(f.readline())
        events = [json.loads(l) for l in f if l.strip()]
    screen = Screen(header["width"], header["height"])
    stream = pyte.Stream(screen)
    ats = sorted(a.at)
    last_title = None
    carry = ""
    for t, kind, data in events:
        while ats and t > ats[0]:
            print("==== t=%.2f ====" % ats.pop(0))
            print(screen_text(screen))
        if kind == "o":
            if a.titles or a.osc:
                buf = carry + data
                for m in OSC_RE.finditer(buf):
                    p = m.group(1)
                    num = p.split(";", 1)[0]
                    if a.osc or num in ("0", "1", "2"):
                        if a.osc or p != last_title:
                            print("%8.3f  OSC %r" % (t, p))
                            last_title = p
                i = buf.rfind("\x1b]")
                carry = buf[i:] if i >= 0 and not OSC_RE.match(buf[i:]) else ""
            stream.feed(data)
        elif kind == "h" and a.hooks:
            head, _, payload = data.partition("\n")
            try:
                p = json.loads(payload)
                event = p.get("hook_event_name") or p.get("type")
                message = (p.get("last_assistant_message") or p.get("last-assistant-message")
                           or p.get("prompt_response") or p.get("prompt") or "")
                print("%8.3f  HOOK %s %s %r" % (t, head.split()[-1], event, message[:60]))
            except ValueError:
                print("%8.3f  HOOK (not JSON) %r" % (t, data[:80]))
        elif kind == "r":
            c, r = [int(x) for x in data.split("x")]
            screen.resize(r, c)
        elif kind == "i" and a.before_input and data in ("\r", "\n"):
            print("==== before Enter at t=%.2f ====" % t)
            print(screen_text(screen))
    for t in ats:
        print("==== t=%.2f (end) ====" % t)
        print(screen_text(screen))
    if not (a.at or a.before_input or a.titles or a.osc or a.hooks):
        print(screen_text(screen))


if __name__ == "__main__":
    main()
