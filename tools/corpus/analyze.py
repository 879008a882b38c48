#!/usr/bin/env python3
"""Count the escape sequences in raw .out recordings (the evidence for REPORT.md).

    python3 tools/corpus/analyze.py [DIR] [NAME...]      # table per recording
    python3 tools/corpus/analyze.py --osc NAME            # distinct OSC payloads (titles etc.)
"""
import collections
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "..", "crates", "clippy-turn", "tests", "corpus")

PATTERNS = [
    ("bracketed paste on ?2004h", rb"\x1b\[\?2004h"),
    ("alt screen ?1049h", rb"\x1b\[\?1049h"),
    ("alt screen ?47/1047h", rb"\x1b\[\?(?:47|1047)h"),
    ("sync output ?2026h", rb"\x1b\[\?2026h"),
    ("sync output ?2026l", rb"\x1b\[\?2026l"),
    ("focus events ?1004h", rb"\x1b\[\?1004h"),
    ("mouse ?1000/1002/1003/1006h", rb"\x1b\[\?100[0236]h"),
    ("kitty kbd push CSI >Nu", rb"\x1b\[>\d*u"),
    ("kitty kbd pop CSI <u", rb"\x1b\[<\d*u"),
    ("kitty kbd query CSI ?u", rb"\x1b\[\?u"),
    ("modifyOtherKeys CSI >4;Nm", rb"\x1b\[>4;\d*m"),
    ("app cursor keys ?1h", rb"\x1b\[\?1h"),
    ("keypad DECKPAM ESC=", rb"\x1b="),
    ("cursor hide ?25l", rb"\x1b\[\?25l"),
    ("cursor show ?25h", rb"\x1b\[\?25h"),
    ("CUP CSI r;cH", rb"\x1b\[\d*(?:;\d*)?[Hf]"),
    ("CHA CSI nG", rb"\x1b\[\d*G"),
    ("CUU CSI nA", rb"\x1b\[\d*A"),
    ("CUD CSI nB", rb"\x1b\[\d*B"),
    ("CUF CSI nC", rb"\x1b\[\d*C"),
    ("CUB CSI nD", rb"\x1b\[\d*D"),
    ("VPA CSI nd", rb"\x1b\[\d*d"),
    ("ED CSI nJ", rb"\x1b\[\d*J"),
    ("EL CSI nK", rb"\x1b\[\d*K"),
    ("DECSTBM CSI t;br", rb"\x1b\[\d*;\d*r"),
    ("RI ESC M", rb"\x1bM"),
    ("IL/DL CSI nL/M", rb"\x1b\[\d*[LM]"),
    ("SU/SD CSI nS/T", rb"\x1b\[\d*[ST]"),
    ("DECSC/DECRC ESC7/8", rb"\x1b[78]"),
    ("CPR query CSI 6n", rb"\x1b\[\??6n"),
    ("DA1 query CSI c", rb"\x1b\[0?c"),
    ("XTVERSION CSI >q", rb"\x1b\[>0?q"),
    ("OSC 0/2 title", rb"\x1b\][02];"),
    ("OSC 7501", rb"\x1b\]7501;"),
    ("OSC 133", rb"\x1b\]133;"),
    ("OSC 7 cwd", rb"\x1b\]7;"),
    ("OSC 8 hyperlink", rb"\x1b\]8;"),
    ("OSC 9 / 9;4 progress", rb"\x1b\]9;"),
    ("OSC 10/11 colour query", rb"\x1b\]1[01];\?"),
    ("OSC 52 clipboard", rb"\x1b\]52;"),
    ("CR", rb"\r"),
    ("BS", rb"\x08"),
]

OSC_RE = re.compile(rb"\x1b\](\d+)(;[^\x07\x1b]*)?(?:\x07|\x1b\\)")


def table(dirname, names):
    rows = {}
    for n in names:
        raw = open(os.path.join(dirname, n + ".out"), "rb").read()
        rows[n] = [len(raw)] + [len(re.findall(p, raw)) for _, p in PATTERNS]
    labels = ["bytes"] + [l for l, _ in PATTERNS]
    w = max(len(l) for l in labels)
    print(" " * w + " " + " ".join("%9s" % n[:9] for n in names))
    print(" " * w + " " + " ".join("%9s" % n[9:18] for n in names))
    for i, l in enumerate(labels):
        print(l.ljust(w) + " " + " ".join("%9d" % rows[n][i] for n in names))


def oscs(dirname, name):
    raw = open(os.path.join(dirname, name + ".out"), "rb").read()
    c = collections.Counter()
    order = []
    for m in OSC_RE.finditer(raw):
        k = m.group(0)
        if k not in c:
            order.append(k)
        c[k] += 1
    for k in order:
        print("%5d  %r" % (c[k], k))


def main():
    args = sys.argv[1:]
    if args and args[0] == "--osc":
        for n in args[1:]:
            print("== " + n)
            oscs(DEFAULT, n)
        return
    dirname = args.pop(0) if args and os.path.isdir(args[0]) else DEFAULT
    names = args or sorted(f[:-4] for f in os.listdir(dirname) if f.endswith(".out"))
    table(dirname, names)


if __name__ == "__main__":
    main()
