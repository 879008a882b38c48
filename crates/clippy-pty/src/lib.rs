//! PTY pair, child spawn, raw-mode guard, window size, signals and exit status (filled by issue 2).
