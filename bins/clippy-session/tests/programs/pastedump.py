"""A paste target: enables bracketed paste, shows a prompt, and writes every byte it reads
to the file named by argv[1] until a bracketed paste has ended (then exits 0)."""
import os
import sys
import termios
import tty

out = open(sys.argv[1], "wb", buffering=0)
fd = sys.stdin.fileno()
saved = termios.tcgetattr(fd)
tty.setraw(fd)
try:
    os.write(sys.stdout.fileno(), b"\x1b[?2004hready> ")
    seen = b""
    while b"\x1b[201~" not in seen:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        out.write(chunk)
        seen += chunk
finally:
    termios.tcsetattr(fd, termios.TCSADRAIN, saved)
