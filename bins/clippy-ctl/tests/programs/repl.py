"""A deterministic REPL for the desktop tests: prompt `repl> `; `say WORDS` answers
`answer: WORDS`; `quit` exits. Raw mode, so it sees every byte: each byte read is appended
to the file named by argv[1], which tells a test exactly what reached the program. With
argv[2], each read is also appended there as one line of hex, which tells a test how the
input arrived (e.g. an Enter in a read of its own)."""
import os
import sys
import termios
import tty

log = open(sys.argv[1], "ab", buffering=0)
reads = open(sys.argv[2], "a", buffering=1) if len(sys.argv) > 2 else None
fd = sys.stdin.fileno()
saved = termios.tcgetattr(fd)
tty.setraw(fd)


def out(data):
    os.write(sys.stdout.fileno(), data)


try:
    out(b"repl> ")
    line = b""
    running = True
    while running:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        log.write(chunk)
        if reads:
            reads.write(chunk.hex() + "\n")
        for byte in chunk:
            c = bytes([byte])
            if c in (b"\r", b"\n"):
                out(b"\r\n")
                command = line.decode("utf-8", "replace")
                line = b""
                if command.startswith("say "):
                    out(("answer: " + command[4:] + "\r\n").encode())
                elif command == "quit":
                    running = False
                    break
                out(b"repl> ")
            elif c == b"\x1b":
                pass
            else:
                line += c
                out(c)
finally:
    termios.tcsetattr(fd, termios.TCSADRAIN, saved)
