//! The client layer against a real `clippy-broker` on a real socket in a temporary
//! `XDG_RUNTIME_DIR`, with a wrapper's side played over the protocol: every operation's request
//! reaches the broker and its reply comes back typed, refusals with the broker's reason.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clippy_client::{ClientError, Connection, Endpoint, HistoryQuery, SearchQuery, Sink};
use clippy_proto::{Client, ErrorReason, Format, RouteKind, RouteSpec, SessionInfo, TurnData};
use clippy_testkit::{Broker, TempDir, Wrapper};

/// Generous: the machine may be loaded; nothing here depends on it being short.
const TIMEOUT: Duration = clippy_testkit::DEADLINE;

/// A private temporary folder with a real broker serving `run/clippy/broker.sock` (the test kit's);
/// both go on drop (the broker's log is shown when a test failed).
struct RealBroker {
    // Dropped first: the broker, then its folder.
    _broker: Broker,
    dir: TempDir,
}

impl RealBroker {
    fn start() -> RealBroker {
        let dir = TempDir::with_runtime("clippy-client");
        let broker = Broker::in_dir(&dir).start();
        RealBroker {
            _broker: broker,
            dir,
        }
    }

    fn socket(&self) -> PathBuf {
        self.dir.socket()
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint::new(self.socket(), TIMEOUT)
    }

    fn connect(&self) -> Connection {
        Connection::connect(&self.endpoint()).expect("the broker answers")
    }
}

/// A session registered as its wrapper would, which reports `turns` completed turns.
fn wrapper(socket: &Path, session: &str, turns: &[&str]) -> Client {
    let mut wrapper = Wrapper::register(
        socket,
        SessionInfo {
            command: vec!["agent".into()],
            preset: "generic".into(),
            ..clippy_testkit::session_info(session, Some(&format!("{session}-name")))
        },
    );
    for (seq, text) in (1..).zip(turns) {
        wrapper.report(TurnData {
            timestamp: 1_795_651_200_000 + seq,
            exit_code: Some(0),
            input: Some("go".into()),
            ..clippy_testkit::turn(seq, format!("\x1b[1m{text}\x1b[0m").as_bytes(), text)
        });
    }
    wrapper.client
}

fn reason(result: Result<impl std::fmt::Debug, ClientError>) -> ErrorReason {
    match result {
        Err(err) => err
            .reason()
            .unwrap_or_else(|| panic!("not the broker's refusal: {err}")),
        Ok(value) => panic!("not refused: {value:?}"),
    }
}

#[test]
fn operations_reach_a_real_broker_and_come_back_typed() {
    let broker = RealBroker::start();
    let mut client = broker.connect();
    assert_eq!(client.list_sessions().expect("sessions"), []);
    let unknown = client.session_status("nope");
    assert!(
        matches!(&unknown, Err(err) if err.to_string().contains("nope")),
        "the refusal names the session: {unknown:?}"
    );
    assert_eq!(reason(unknown), ErrorReason::SessionNotFound);

    let _alpha = wrapper(
        &broker.socket(),
        "alpha",
        &["first answer", "second answer"],
    );
    let _beta = wrapper(&broker.socket(), "beta", &[]);
    let sessions = client.list_sessions().expect("sessions");
    let mut names: Vec<_> = sessions.iter().filter_map(|s| s.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["alpha-name", "beta-name"]);

    let turns = client.list_turns("alpha-name", None).expect("turns");
    assert_eq!(turns.len(), 2);
    let latest = client.get_turn("alpha", Format::Text).expect("a turn");
    assert_eq!(&*latest.content, b"second answer");
    assert_eq!(latest.meta.turn_id, turns[0].turn_id);
    let first = client
        .get_turn(&turns[1].turn_id, Format::Raw)
        .expect("by id");
    assert_eq!(&*first.content, b"\x1b[1mfirst answer\x1b[0m");
    assert_eq!(
        reason(client.get_turn("beta", Format::Text)),
        ErrorReason::NoTurn
    );
    assert_eq!(
        reason(client.get_turn("alpha:99", Format::Text)),
        ErrorReason::TurnNotFound
    );
    let status = client.session_status("alpha").expect("status");
    assert_eq!(status.name.as_deref(), Some("alpha-name"));
    // Attach sockets are in this process's `$XDG_RUNTIME_DIR` (CONTRACTS/ATTACH.md).
    match client.attach_target("alpha-name") {
        Ok(target) => {
            assert_eq!(target.session, "alpha");
            assert!(
                target.path.ends_with("clippy/sessions/alpha/attach.sock"),
                "{target:?}"
            );
        }
        Err(ClientError::NoRuntimeDir) => {
            assert!(
                clippy_proto::socket_path().is_err(),
                "XDG_RUNTIME_DIR is set"
            );
        }
        Err(err) => panic!("{err}"),
    }

    // The relay buffer: captured, then delivered to a file.
    let out = broker.dir.join("relay.txt");
    assert_eq!(
        reason(client.deliver(&Sink::File(out.display().to_string()), Format::Text)),
        ErrorReason::BufferEmpty
    );
    let captured = client.capture_by_id(&turns[1].turn_id).expect("captured");
    assert_eq!(captured.turn_id, turns[1].turn_id);
    client
        .deliver(&Sink::File(out.display().to_string()), Format::Text)
        .expect("delivered");
    assert_eq!(
        std::fs::read_to_string(&out).expect("the file"),
        "first answer"
    );

    // Routes.
    let route = client
        .route_add(RouteSpec {
            from: "alpha".into(),
            to: "beta".into(),
            kind: RouteKind::Report,
            template: None,
            format: None,
            interrupt: false,
            max_hops: None,
            gated: true,
            submit: None,
        })
        .expect("a route");
    assert_eq!((route.from.as_str(), route.to.as_str()), ("alpha", "beta"));
    assert_eq!(client.route_list().expect("routes").len(), 1);
    assert!(client.route_pause(&route.route).expect("paused").paused);
    assert!(!client.route_resume(&route.route).expect("resumed").paused);
    assert!(client.inbox("beta").expect("an inbox").items.is_empty());
    client.route_remove(&route.route).expect("removed");
    assert_eq!(
        reason(client.route_remove(&route.route)),
        ErrorReason::RouteNotFound
    );
    assert_eq!(
        reason(client.approve("a999", None)),
        ErrorReason::ApprovalNotFound
    );

    // Events and the history store.
    let registered = client
        .list_events(None, &["session.registered".into()])
        .expect("events");
    assert_eq!(registered.len(), 2, "{registered:?}");
    let history = client.history_status().expect("the store's state");
    assert!(history.enabled, "the store is on by default: {history:?}");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let turns = client
            .history(&HistoryQuery {
                session: Some("alpha".into()),
                ..HistoryQuery::default()
            })
            .expect("history");
        if turns.len() == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "the turns were not stored");
        std::thread::sleep(Duration::from_millis(50));
    }
    let hits = client
        .search(&SearchQuery::new("second").expect("words"))
        .expect("a search");
    assert_eq!(hits.len(), 1, "{hits:?}");
}

#[test]
fn a_follower_hears_what_happens() {
    let broker = RealBroker::start();
    let mut events = broker
        .connect()
        .subscribe(None, &["session.registered".into()], Some(TIMEOUT))
        .expect("subscribed");
    let _gamma = wrapper(&broker.socket(), "gamma", &[]);
    let event = events.next_event().expect("an event");
    assert_eq!(event.kind, "session.registered");
    assert_eq!(event.session.as_deref(), Some("gamma"));
}

#[test]
fn a_broker_that_does_not_answer_is_an_error_naming_its_socket() {
    let broker = RealBroker::start();
    // Nobody listens at an explicit socket, and no broker is started there.
    let nowhere = broker.dir.join("run/elsewhere.sock");
    let endpoint = Endpoint::new(&nowhere, Duration::from_secs(2));
    assert!(!endpoint.may_start());
    let err = Connection::connect_starting(&endpoint).expect_err("nobody listens");
    assert!(matches!(err, ClientError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains("elsewhere.sock"), "{err}");
    assert!(err.hint().is_some());
    assert!(!nowhere.exists(), "no broker was started there");

    // A socket that accepts and never says hello: an answer that did not come in time.
    let silent = broker.dir.join("run/silent.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&silent).expect("bind");
    let err = Connection::connect(&Endpoint::new(&silent, Duration::from_millis(300)))
        .expect_err("no hello");
    assert!(
        matches!(
            err,
            ClientError::NoAnswer {
                timeout_ms: 300,
                ..
            }
        ),
        "{err:?}"
    );

    // A connection whose broker went away says so between requests.
    let mut client = broker.connect();
    assert!(client.is_open());
    drop(broker);
    let deadline = Instant::now() + TIMEOUT;
    while client.is_open() {
        assert!(
            Instant::now() < deadline,
            "the closed connection looks open"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(client.list_sessions().expect_err("gone").is_unreachable());
}
