"""A large spool: shows `flood ready> `, waits for a line, then prints LINES numbered lines
`item 0000001 <filler>` of WIDTH bytes each (newline included) whose filler holds ANSI colour
codes and never the word "item", then `DONE`; then waits for one more line and exits 0.

Usage: flood.py LINES WIDTH
"""

import os
import sys

lines = int(sys.argv[1])
width = int(sys.argv[2])
unit = b"\x1b[32mgreen\x1b[0m lorem ipsum \x1b[1;34mblue\x1b[0m dolor sit amet, "
head = len(b"item 0000001 ")
reps = (width - head - 1) // len(unit)
rest = width - head - 1 - reps * len(unit)
filler = unit * reps + b"." * rest + b"\n"
assert head + len(filler) == width

out = sys.stdout.fileno()


def write_all(data):
    view = memoryview(data)
    while view:
        n = os.write(out, view)
        view = view[n:]


write_all(b"flood ready> ")
sys.stdin.readline()
batch = []
for i in range(1, lines + 1):
    batch.append(b"item %07d " % i)
    batch.append(filler)
    if i % 64 == 0:
        write_all(b"".join(batch))
        batch = []
write_all(b"".join(batch) + b"DONE\n")
sys.stdin.readline()
