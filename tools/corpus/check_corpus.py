#!/usr/bin/env python3
"""Sanity-check recordings against their sidecars (needs pyte).

For every <name>.json in the corpus directory: the .cast must parse, its "o"
events must concatenate (UTF-8) to exactly the .out bytes' decoding, and every
line of each turn's "reply" and "input" must have been visible on the emulated
screen at some point (screens are sampled after every output event, so text
that scrolled away or was redrawn in place still counts).

    python3 tools/corpus/check_corpus.py [DIR] [NAME...]
    python3 tools/corpus/check_corpus.py --dir /work/staging-corpus [NAME...]

A reply line with an emoji ZWJ sequence (e.g. U+1F468 U+200D U+1F469 U+200D U+1F467) that is not
seen verbatim is also tried with each sequence cut to its first emoji: pyte 0.8.2 drops the rest of
a printed run after a ZWJ, and Claude Code/Codex treat the whole cluster as 2 cells (pyte: one
wcwidth per code point) and draw the next word over the rest of it. Such a line counts as seen,
with a "note" line in the output.
"""
import json
import os
import re
import sys

import pyte

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "..", "crates", "clippy-turn", "tests", "corpus")


class Screen(pyte.Screen):
    def select_graphic_rendition(self, *attrs, **kw):
        if not kw.get("private"):
            super().select_graphic_rendition(*attrs)

    @property
    def display(self):
        """The rows as text, cell by cell: a cell with no text (the right half of a wide
        character) adds nothing. pyte 0.8.2's own `display` skips the cell after every wide
        character instead, and fails (IndexError) when a wide character was drawn over another
        one's right half, so that an empty cell follows a narrow one (Codex redrawing CJK text
        after a resize)."""
        return ["".join(self.buffer[y][x].data for x in range(self.columns))
                for y in range(self.lines)]


def seen_lines(cast_path):
    with open(cast_path, encoding="utf-8") as f:
        header = json.loads(f.readline())
        events = [json.loads(l) for l in f if l.strip()]
    screen = Screen(header["width"], header["height"])
    stream = pyte.Stream(screen)
    seen = set()
    out = []
    last_t = -1.0
    for t, kind, data in events:
        assert t >= last_t, "timestamps go backwards at %s" % t
        last_t = t
        if kind == "o":
            out.append(data)
            stream.feed(data)
            for line in screen.display:
                seen.add(line.rstrip())
        elif kind == "r":
            c, r = [int(x) for x in data.split("x")]
            screen.resize(r, c)
    return header, "".join(out), seen


def check(dirname, name):
    side = json.load(open(os.path.join(dirname, name + ".json"), encoding="utf-8"))
    header, out_text, seen = seen_lines(os.path.join(dirname, name + ".cast"))
    raw = open(os.path.join(dirname, name + ".out"), "rb").read()
    problems = []
    if raw.decode("utf-8", "replace") != out_text:
        problems.append(".cast output != .out decoded")
    if [header["width"], header["height"]] != side["size"]:
        problems.append("size mismatch")
    blob = "\n".join(seen)
    notes = []
    for i, t in enumerate(side["turns"]):
        for key in ("reply", "input"):
            for line in t[key].split("\n"):
                line = line.strip()
                if line and line not in blob:
                    cut = ZWJ_SEQ.sub(lambda m: m.group(1), line)
                    if cut != line and cut in blob:
                        notes.append("turn %d %s line seen only with its ZWJ sequence cut to the first emoji: %r"
                                     % (i + 1, key, cut))
                        continue
                    problems.append("turn %d %s line not seen on screen: %r" % (i + 1, key, line))
    return side, problems, notes


ZWJ_SEQ = re.compile("(\\S)(?:\u200d\\S)+")


def main():
    args = sys.argv[1:]
    dirname = DEFAULT
    if "--dir" in args:
        i = args.index("--dir")
        dirname = args[i + 1]
        del args[i:i + 2]
    elif args and os.path.isdir(args[0]):
        dirname = args.pop(0)
    names = args or sorted(f[:-5] for f in os.listdir(dirname) if f.endswith(".json"))
    bad = 0
    for n in names:
        side, problems, notes = check(dirname, n)
        status = "ok" if not problems else "PROBLEM"
        bad += bool(problems)
        print("%-8s %-22s %-12s %-10s %dx%d turns=%d" % (status, n, side["agent"], side["agent_version"],
                                                          side["size"][0], side["size"][1], len(side["turns"])))
        for p in problems:
            print("         - " + p)
        for p in notes:
            print("         note: " + p)
    print("%d passed, %d failed" % (len(names) - bad, bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
