"""A pattern written in two halves: turns the terminal's echo off, shows `split ready> `, waits
for a line, writes `abc-12`, waits for another line, writes `34-xyz` and a newline, shows
`split done> `, waits for a last line and exits 0.

With echo off the Enter typed between the halves adds nothing to the output, so the child's two
writes join into `abc-1234-xyz`, and the test decides when the second half comes: a wait for
`abc-\\d+-xyz` parked before the first half sees the first half arrive (and not match), then the
match complete across two writes of the child and two progress reports of the wrapper."""

import os
import sys
import termios

fd = sys.stdin.fileno()
attrs = termios.tcgetattr(fd)
attrs[3] &= ~termios.ECHO
termios.tcsetattr(fd, termios.TCSANOW, attrs)

out = sys.stdout.fileno()
os.write(out, b"split ready> ")
sys.stdin.readline()
os.write(out, b"abc-12")
sys.stdin.readline()
os.write(out, b"34-xyz\n")
os.write(out, b"split done> ")
sys.stdin.readline()
