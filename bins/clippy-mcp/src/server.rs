//! The MCP side: `rmcp`'s server handler over the tool catalogue ([`crate::tools`]), the
//! calls ([`crate::calls`], each on a blocking thread so a long wait holds up nothing), and the
//! sessions as resources (`clippy://session/NAME/screen`, `clippy://session/NAME/turn/latest`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, ResourceUpdatedNotificationParam,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::Value;

use crate::bridge::Bridge;
use crate::calls::{self, Limits, Outcome, UnknownTool};
use crate::notifications::{self, Change};

/// How a model is told what this server is for (`initialize`'s instructions).
const INSTRUCTIONS: &str = "clippy wraps interactive terminal programs (coding agents such as \
    Claude Code, Codex, Gemini CLI, aider; shells; REPLs) as sessions and records each \
    submitted input and its output as a turn. list_sessions finds the sessions. An \
    orchestration loop: (1) spawn_session starts an agent or a shell (it returns once \
    registered; wait_prompt from 0 waits for its first prompt). (2) To ask a session \
    something: status (note resume_cursor), send with enter=true, then wait_prompt from that \
    cursor. (3) get_turn with the turn_id wait_prompt returns reads the answer (format message: \
    an agent's own final message, when its hooks are on). (4) An agent may stop to ask for a \
    permission instead: wait_prompt then times out, and status (or list_sessions, or \
    events_since with types [\"session.waiting\"]) shows `waiting` with the tool, its input \
    and the waiting id; answer it with answer (allow, deny or always, naming that id), then \
    wait_prompt on from the timeout's resume_cursor. exec runs one command line in a shell \
    session. route_add hands one session's turns to another; a gated route parks each \
    handoff until approved: inbox lists them, approve or deny resolves them. history and \
    search_history find turns of live and ended sessions (since/until: 2h, 3d, an ISO-8601 \
    date). Every wait returns a resume_cursor: pass it as `from` to the next wait or \
    read_spool so nothing is skipped or matched twice. A failed call is a result with \
    isError and a reason (session_not_found, busy, timeout with its resume_cursor, \
    invalid_argument naming the argument, …).";

/// The URI scheme of the sessions' resources.
const SCHEME: &str = "clippy://session/";

/// The `clippy-mcp` server: one per stdio connection.
#[derive(Debug, Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    bridge: Bridge,
    limits: Limits,
    tools: Vec<Tool>,
    /// The resource URIs the client subscribed to (`resources/subscribe`).
    subscribed: Mutex<HashSet<String>>,
}

impl Server {
    /// A server reaching the broker through `bridge`, within `limits`.
    pub fn new(bridge: Bridge, limits: Limits) -> Self {
        Self {
            inner: Arc::new(Inner {
                bridge,
                limits,
                tools: crate::tools::catalogue(),
                subscribed: Mutex::new(HashSet::new()),
            }),
        }
    }

    /// Runs the tool `name`: one that waits (on the broker, the session, a file) on a blocking
    /// thread, so it holds up nothing else; a quick one here (one round trip to a local broker,
    /// bounded by its timeout) without the hand-off's cost.
    async fn run(&self, name: String, args: JsonObject) -> Result<Outcome, ErrorData> {
        let inner = Arc::clone(&self.inner);
        let joined = if calls::waits(&name) {
            tokio::task::spawn_blocking(move || {
                calls::call(&inner.bridge, &inner.limits, &name, args)
            })
            .await
        } else {
            Ok(calls::call(&inner.bridge, &inner.limits, &name, args))
        };
        match joined {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(UnknownTool(name))) => Err(ErrorData::invalid_params(
                format!("no tool is named {name:?}: tools/list gives the tools"),
                None,
            )),
            Err(e) => Err(ErrorData::internal_error(
                format!("the tool call failed: {e}"),
                None,
            )),
        }
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("clippy-mcp", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let (changes, mut heard) = tokio::sync::mpsc::unbounded_channel();
        let socket = self.inner.bridge.socket().to_owned();
        let timeout = self.inner.bridge.timeout();
        // A plain thread, not the runtime's blocking pool: the runtime must not wait for it
        // when the client goes away. It stops once the receiver below is gone.
        let followed = std::thread::Builder::new()
            .name("events".into())
            .spawn(move || notifications::follow(socket, timeout, changes));
        if followed.is_err() {
            return; // No notifications; every tool and resource still works.
        }
        let inner = Arc::clone(&self.inner);
        let peer = context.peer;
        tokio::spawn(async move {
            while let Some(change) = heard.recv().await {
                let sent = match change {
                    Change::Sessions => peer.notify_resource_list_changed().await,
                    Change::Turn(names) => {
                        let uris: Vec<String> = names
                            .iter()
                            .map(|name| format!("{SCHEME}{name}/turn/latest"))
                            .filter(|uri| {
                                inner
                                    .subscribed
                                    .lock()
                                    .is_ok_and(|subscribed| subscribed.contains(uri))
                            })
                            .collect();
                        let mut sent = Ok(());
                        for uri in uris {
                            sent = peer
                                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                                .await;
                        }
                        sent
                    }
                };
                if sent.is_err() {
                    break; // The client is gone.
                }
            }
        });
    }

    #[allow(deprecated)] // the subscription of protocol versions before 2026-07-28
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if parse_uri(&request.uri).is_none() {
            return Err(ErrorData::resource_not_found(
                format!("no resource {:?} to subscribe to", request.uri),
                None,
            ));
        }
        if let Ok(mut subscribed) = self.inner.subscribed.lock() {
            subscribed.insert(request.uri);
        }
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut subscribed) = self.inner.subscribed.lock() {
            subscribed.remove(&request.uri);
        }
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.inner.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        Ok(match self.run(request.name.into_owned(), args).await? {
            Outcome::Done(value) => result_of(value, false),
            Outcome::Failed(value) => result_of(value, true),
        }
        .into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let sessions = match self.run("list_sessions".into(), JsonObject::new()).await? {
            Outcome::Done(value) => value,
            Outcome::Failed(value) => return Err(resource_error(&value)),
        };
        let mut resources = Vec::new();
        for session in sessions["sessions"].as_array().into_iter().flatten() {
            let id = session["session"].as_str().unwrap_or_default();
            let name = session["name"].as_str().unwrap_or(id);
            let command = command_line(&session["command"]);
            resources.push(
                Resource::new(format!("{SCHEME}{name}/screen"), format!("{name} screen"))
                    .with_description(format!("The screen of {command} ({id}) as text now"))
                    .with_mime_type("text/plain"),
            );
            if !session["last_turn_id"].is_null() {
                resources.push(
                    Resource::new(
                        format!("{SCHEME}{name}/turn/latest"),
                        format!("{name} latest turn"),
                    )
                    .with_description(format!(
                        "The latest completed turn of {command} ({id}), as text"
                    ))
                    .with_mime_type("text/plain"),
                );
            }
        }
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(format!("{SCHEME}{{session}}/screen"), "session screen")
                .with_description("A session's screen as text now (session: id, prefix or name)")
                .with_mime_type("text/plain"),
            ResourceTemplate::new(
                format!("{SCHEME}{{session}}/turn/latest"),
                "session latest turn",
            )
            .with_description("A session's latest completed turn, as text")
            .with_mime_type("text/plain"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let (tool, args) = match parse_uri(&uri) {
            Some((session, Part::Screen)) => ("screen", serde_json::json!({ "session": session })),
            Some((session, Part::LatestTurn)) => (
                "get_turn",
                serde_json::json!({ "session": session, "format": "text" }),
            ),
            None => {
                return Err(ErrorData::resource_not_found(
                    format!(
                        "no resource {uri:?}: the resources are {SCHEME}SESSION/screen and \
                         {SCHEME}SESSION/turn/latest"
                    ),
                    None,
                ));
            }
        };
        let Value::Object(args) = args else {
            return Err(ErrorData::internal_error("arguments are an object", None));
        };
        let value = match self.run(tool.into(), args).await? {
            Outcome::Done(value) => value,
            Outcome::Failed(value) => return Err(resource_error(&value)),
        };
        let text = value["text"]
            .as_str()
            .or_else(|| value["content"].as_str())
            .unwrap_or_default()
            .to_owned();
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri)]).into())
    }
}

/// A tool's result: the value as `structuredContent`, and the same JSON as its one text block
/// (as the MCP spec asks, for clients that read only text).
fn result_of(value: Value, failed: bool) -> CallToolResult {
    // `to_string` rather than the `Display` the SDK's constructor uses: a 64 KiB turn is
    // serialised in a fraction of the time.
    let text = serde_json::to_string(&value).unwrap_or_default();
    let mut result = if failed {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(value);
    result
}

/// Which part of a session a resource URI names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Screen,
    LatestTurn,
}

/// `clippy://session/NAME/screen` → (NAME, Screen); `…/turn/latest` → (NAME, LatestTurn).
fn parse_uri(uri: &str) -> Option<(&str, Part)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (session, part) = if let Some(session) = rest.strip_suffix("/screen") {
        (session, Part::Screen)
    } else {
        (rest.strip_suffix("/turn/latest")?, Part::LatestTurn)
    };
    (!session.is_empty() && !session.contains('/')).then_some((session, part))
}

/// A failed read of a resource: not found for an unknown session or turn, else internal.
fn resource_error(failure: &Value) -> ErrorData {
    let reason = failure["reason"].as_str().unwrap_or("unknown");
    let message = format!(
        "{reason}: {}",
        failure["message"].as_str().unwrap_or_default()
    );
    match reason {
        "session_not_found" | "no_turn" | "turn_not_found" => {
            ErrorData::resource_not_found(message, Some(failure.clone()))
        }
        _ => ErrorData::internal_error(message, Some(failure.clone())),
    }
}

/// A session's command line as one string.
fn command_line(command: &Value) -> String {
    let words: Vec<&str> = command
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if words.is_empty() {
        "the session".into()
    } else {
        words.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_uris_name_a_session_and_a_part() {
        assert_eq!(
            parse_uri("clippy://session/rev/screen"),
            Some(("rev", Part::Screen))
        );
        assert_eq!(
            parse_uri("clippy://session/k3f9/turn/latest"),
            Some(("k3f9", Part::LatestTurn))
        );
        for bad in [
            "clippy://session//screen",
            "clippy://session/a/b/screen",
            "clippy://session/rev/turn/3",
            "file:///etc/passwd",
            "clippy://session/rev",
        ] {
            assert_eq!(parse_uri(bad), None, "{bad}");
        }
    }
}
