#!/usr/bin/env python3
"""Puts its terminal in raw mode and records every byte it reads.

Usage: rawdump.py OUT. Prints READY once in raw mode, reads until the input ends with the
sentinel @@END@@, writes the bytes before the sentinel as hex to OUT, prints DONE and exits.
"""

import os
import sys
import termios
import tty

SENTINEL = b"@@END@@"


def main():
    out = sys.argv[1]
    saved = termios.tcgetattr(0)
    tty.setraw(0)
    os.write(1, b"READY\r\n")
    data = b""
    while not data.endswith(SENTINEL):
        chunk = os.read(0, 4096)
        if not chunk:
            break
        data += chunk
    termios.tcsetattr(0, termios.TCSADRAIN, saved)
    with open(out + ".tmp", "w") as f:
        f.write(data[: -len(SENTINEL)].hex())
    os.rename(out + ".tmp", out)
    os.write(1, b"DONE\r\n")


if __name__ == "__main__":
    main()
