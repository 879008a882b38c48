"""A deterministic REPL-like agent for the routing tests.

Usage: echo_agent.py NAME [MODE] [--delay SECS] [--gate FILE] [--log FILE]

Prints the prompt `NAME> `; reads a line L; answers; prompts again. MODE:

  echo  (default) `NAME heard: [L]`: the reply contains the input, so content grows along a loop
  same  `OK from NAME` whatever L is: the same content every time (stall detection)
  slow  `NAME slept: [L]` after sleeping --delay SECS (default 1) or, with --gate FILE, after
        waiting until FILE exists: busy for as long as a test wants

The brackets matter: a line that is the input behind a short decoration (`NAME heard: L`, the
decoration at most 12 characters) is taken for the terminal's echo of the input by the turn
detector, and would not be the turn's content.

Ctrl+C while a reply is being prepared prints `NAME interrupted` and the prompt again (the
KeyboardInterrupt is handled); Ctrl+C at the prompt just prompts again. End of input exits 0.

--log FILE appends one line per event with CLOCK_MONOTONIC nanoseconds (comparable between
processes on the same machine): `recv NS L` as soon as a line is read, `reply NS TEXT` just
before the reply is written, `intr NS` on an interrupt.
"""

import os
import sys
import time


def parse(argv):
    name = argv[1] if len(argv) > 1 else "agent"
    mode = "echo"
    delay = 1.0
    gate = None
    log = None
    rest = argv[2:]
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--delay":
            delay = float(rest[i + 1])
            i += 2
        elif arg == "--gate":
            gate = rest[i + 1]
            i += 2
        elif arg == "--log":
            log = rest[i + 1]
            i += 2
        elif arg in ("echo", "same", "slow"):
            mode = arg
            i += 1
        else:
            sys.stderr.write("echo_agent.py: unknown argument %r\n" % arg)
            sys.exit(2)
    return name, mode, delay, gate, log


def main():
    name, mode, delay, gate, log_path = parse(sys.argv)
    log = open(log_path, "a", buffering=1) if log_path else None

    def note(kind, text=""):
        if log is not None:
            log.write("%s %d %s\n" % (kind, time.monotonic_ns(), text))
            log.flush()

    out = sys.stdout
    while True:
        try:
            out.write("%s> " % name)
            out.flush()
            line = sys.stdin.readline()
        except KeyboardInterrupt:
            out.write("\n")
            continue
        if not line:
            return 0
        line = line.rstrip("\r\n")
        note("recv", line)
        try:
            if mode == "same":
                reply = "OK from %s" % name
            elif mode == "slow":
                if gate is not None:
                    while not os.path.exists(gate):
                        time.sleep(0.01)
                else:
                    time.sleep(delay)
                reply = "%s slept: [%s]" % (name, line)
            else:
                reply = "%s heard: [%s]" % (name, line)
            note("reply", reply)
            out.write(reply + "\n")
            out.flush()
        except KeyboardInterrupt:
            note("intr")
            out.write("\n%s interrupted\n" % name)
            out.flush()


if __name__ == "__main__":
    sys.exit(main())
