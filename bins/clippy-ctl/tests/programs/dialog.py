"""A program that prints 50 numbered lines, then a dialog that waits for an answer: what
`clippy-ctl screen` must show, history included."""
import os
import sys

for i in range(1, 51):
    os.write(sys.stdout.fileno(), f"line {i}\r\n".encode())
os.write(sys.stdout.fileno(), b"Allow? [y/n] ")
sys.stdin.readline()
