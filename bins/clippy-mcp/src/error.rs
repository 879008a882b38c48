//! What can stop `clippy-mcp` as a whole (a failing tool call is a tool result, never this).

/// Why the server cannot start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// No `--socket` and no usable `XDG_RUNTIME_DIR` to find the broker's socket in.
    #[error(
        "XDG_RUNTIME_DIR is not set to an absolute path: set it (as a login session does) or pass --socket"
    )]
    NoRuntimeDir,
    /// The async runtime could not be built.
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The MCP session could not be set up over stdio (the client hung up during `initialize`,
    /// or spoke something else).
    #[error("cannot start the MCP session on stdio: {0}")]
    Initialize(String),
    /// The MCP session ended abnormally.
    #[error("the MCP session failed: {0}")]
    Session(String),
}
