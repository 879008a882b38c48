"""A busy agent for the soak and fault tests: bursts of ANSI-heavy output per input, then a prompt.

Usage: burst.py NAME        a REPL (cooked terminal) with the prompt `burst> `; per input line:
         N                  a burst for turn N: an OSC title, `BEGIN N of NAME`, lines with SGR
                            colours, cursor moves, erases, UTF-8 (CJK, emoji, box drawing), now and
                            then a long line, the marker `MARK-N.` (its number in bold, so an
                            escape sits inside it), `END N of NAME`; written in a few pieces split at
                            arbitrary bytes (even inside a character or an escape). The same
                            NAME and N always give the same bytes.
         big N [W]          N bytes of `x` without a newline (in writes of W bytes, default 65536),
                            then a newline and `BIG DONE`
         sleep S            sleeps S seconds, prints `slept`
         quit               exits 0
       burst.py --sink      a paste target: raw mode, reads and discards everything, prints
                            `sink> ` once; exits at end of input

With BURST_HUP_FILE=PATH in the environment, the program writes to PATH how its terminal went away:
`SIGHUP` (then exits 129), `EIO` (a read failed: what a program blocked reading a hung-up terminal
sees instead of the signal, whoever closed the terminal) or `EOF` (a Ctrl+D: no hang-up at all).
"""

import os
import random
import signal
import sys
import time
import tty

OUT = sys.stdout.fileno()
PROMPT = b"burst> "
WORDS = [
    "lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit",
    "日本語", "中文", "한국어", "🦀", "🚀", "✨", "é", "ñ", "→", "│", "─────", "┌──┐", "╰─╯",
]


def write_all(data):
    view = memoryview(data)
    while view:
        n = os.write(OUT, view)
        view = view[n:]


def burst(name, n):
    rng = random.Random(f"{name}/{n}")
    out = []
    out.append(f"\x1b]0;burst {name} #{n}\x07BEGIN {n} of {name}\n")
    for i in range(rng.randint(4, 30)):
        parts = []
        for _ in range(rng.randint(3, 14)):
            word = rng.choice(WORDS)
            style = rng.randint(0, 5)
            if style == 0:
                parts.append(f"\x1b[3{rng.randint(1, 7)}m{word}\x1b[0m")
            elif style == 1:
                parts.append(f"\x1b[1;38;5;{rng.randint(16, 231)}m{word}\x1b[22;39m")
            elif style == 2:
                parts.append(f"\x1b[{rng.randint(1, 9)}C{word}")
            elif style == 3:
                parts.append(f"{word}\x1b[K")
            else:
                parts.append(word)
        line = " ".join(parts)
        if rng.random() < 0.15:
            line += "\x1b[1A\x1b[1B\x1b[s\x1b[u"
        out.append(f"{i:02} {line}\n")
    if rng.random() < 0.3:
        width = rng.randint(200, 3000)
        out.append(("~" * 10 + "長い行 ") * (width // 20) + "\n")
    out.append(f"MARK-\x1b[1m{n}\x1b[0m.\n")
    out.append(f"END {n} of {name}\n")
    data = "".join(out).encode()
    cuts = sorted(rng.sample(range(1, len(data)), 3))
    start = 0
    for cut in cuts + [len(data)]:
        write_all(data[start:cut])
        start = cut


def big(total, width):
    chunk = b"x" * width
    left = total
    while left > 0:
        piece = chunk if left >= width else chunk[:left]
        write_all(piece)
        left -= len(piece)
    write_all(b"\nBIG DONE\n")


def sink():
    tty.setraw(0)
    write_all(b"sink> ")
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return


def record(how):
    with open(os.environ["BURST_HUP_FILE"], "w") as f:
        f.write(how)


def on_hangup():
    def handler(signum, frame):
        record("SIGHUP")
        os._exit(129)

    signal.signal(signal.SIGHUP, handler)


def main():
    hup_file = os.environ.get("BURST_HUP_FILE")
    if hup_file:
        on_hangup()
    if sys.argv[1:] == ["--sink"]:
        sink()
        return
    name = sys.argv[1]
    write_all(f"burst {name} ready\n".encode() + PROMPT)
    stdin = sys.stdin.buffer
    while True:
        try:
            line = stdin.readline()
        except OSError:
            if hup_file:
                record("EIO")
            return
        if not line:
            if hup_file:
                record("EOF")
            return
        words = line.decode(errors="replace").split()
        if not words:
            pass
        elif words[0] == "quit":
            return
        elif words[0] == "big":
            big(int(words[1]), int(words[2]) if len(words) > 2 else 65536)
        elif words[0] == "sleep":
            time.sleep(float(words[1]))
            write_all(b"slept\n")
        else:
            try:
                burst(name, int(words[0]))
            except ValueError:
                write_all(b"? " + line.strip() + b"\n")
        write_all(PROMPT)


if __name__ == "__main__":
    main()
