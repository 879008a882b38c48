"""Floods its terminal and stops as soon as a key comes: raw mode, `flood> ` shown, then lines
of output (a thread writes them) until a byte arrives on stdin or LIMIT bytes were written;
then `GOT KEY after N bytes` (or `NO KEY after N bytes` when the limit ran out first), and it
waits for one more byte before exiting 0.

Usage: keys_in_flood.py LIMIT
"""

import os
import sys
import termios
import threading
import tty

limit = int(sys.argv[1])
out = sys.stdout.fileno()
stdin = sys.stdin.fileno()
saved = termios.tcgetattr(stdin)
tty.setraw(stdin)
line = b"flooding the terminal \x1b[1;32mwhile\x1b[0m a key is on its way " * 2 + b"\r\n"
chunk = line * 256
key = threading.Event()
written = [0]


def write_all(data):
    view = memoryview(data)
    while view:
        n = os.write(out, view)
        view = view[n:]


def flood():
    while not key.is_set() and written[0] < limit:
        write_all(chunk)
        written[0] += len(chunk)
    write_all(b"\r\n%s after %d bytes\r\n" % (b"GOT KEY" if key.is_set() else b"NO KEY", written[0]))


write_all(b"flood> ")
writer = threading.Thread(target=flood)
writer.start()
os.read(stdin, 1)
key.set()
writer.join()
os.read(stdin, 1)
termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
