//! Append-only spool file with byte cursors (filled by issue 2).
