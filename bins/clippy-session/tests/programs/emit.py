#!/usr/bin/env python3
"""Writes a fixed byte sequence to stdout, then exits.

Used by the transparency and spool tests of clippy-session: escapes, CR LF, a lone CR,
invalid UTF-8, every byte value, a 100 KB line, and no newline at the very end.
With --wait, it prints WAITING and reads one line from stdin before the last part.
"""

import os
import sys


def payload():
    return [
        b"plain line\n",
        b"\x1b[1;31mred\x1b[0m \x1b]0;a title\x07 \x1b[2J\x1b[H\x1b[?25l\x1b[?25h\n",
        b"crlf\r\n",
        b"lone cr\roverwritten\n",
        b"invalid utf-8: \xff\xfe \xc3\x28 \xed\xa0\x80 \xf8\x88\x80\x80\x80\n",
        b"utf-8: h\xc3\xa9llo \xe2\x9c\xb3 \xf0\x9f\x98\x80\n",
        b"tab\there bs\x08 bel\x07\n",
        bytes(range(256)),
        b"\n",
        (bytes(range(33, 127)) * 1100)[:100_000],
        b"\n",
    ]


def write_all(data):
    while data:
        n = os.write(1, data)
        data = data[n:]


def main():
    for part in payload():
        write_all(part)
    if "--wait" in sys.argv[1:]:
        write_all(b"WAITING\n")
        sys.stdin.buffer.readline()
    write_all(b"END-OF-EMIT")


if __name__ == "__main__":
    main()
