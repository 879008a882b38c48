#!/usr/bin/env python3
"""Starts a command the way a job-control shell does, for the SIGTSTP test.

Usage: jobctl.py PID_FILE PROGRAM ARGS...

The command runs in a process group of its own, made the terminal's foreground group, with this
process (in the same session, another group) as its parent: so its group is not orphaned and a
stop signal really stops it. The command's PID goes to PID_FILE. Exits like the command did.
"""

import os
import signal
import sys


def main():
    pid_file, argv = sys.argv[1], sys.argv[2:]
    # Giving the terminal away from the background would stop us otherwise.
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        os.tcsetpgrp(0, os.getpid())
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)
        os.execvp(argv[0], argv)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # The child got there first (and may have exec'd).
    os.tcsetpgrp(0, pid)
    with open(pid_file + ".tmp", "w") as f:
        f.write(str(pid))
    os.rename(pid_file + ".tmp", pid_file)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
