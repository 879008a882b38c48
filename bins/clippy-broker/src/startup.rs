//! Everything before the event loop: the runtime folder, the lock, a running or stale broker,
//! the socket.
//!
//! Two brokers started at once (two wrappers each starting one) must not both remove a stale
//! socket and bind: the second could unlink the first one's fresh socket. So the broker first
//! takes an exclusive `flock` on `clippy/broker.lock` and only then looks at the socket; the lock
//! is released by the kernel when the process ends, however it ends, so it is never stale.

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clippy_proto::{FrameDecoder, Message, PROTOCOL_VERSION, Role, decode, encode};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};

use crate::error::BrokerError;

/// How long a probe waits for a broker's `hello_ack`.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The broker's files under `$XDG_RUNTIME_DIR/clippy/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// `$XDG_RUNTIME_DIR/clippy`, mode 0700.
    pub dir: PathBuf,
    /// `broker.sock`, mode 0600.
    pub socket: PathBuf,
    /// `broker.lock`, held while a broker runs.
    pub lock: PathBuf,
    /// `broker.log`, used without `--foreground`.
    pub log: PathBuf,
}

impl Paths {
    /// The paths under `runtime_dir`.
    #[must_use]
    pub fn new(runtime_dir: &Path) -> Paths {
        let dir = runtime_dir.join("clippy");
        Paths {
            socket: dir.join("broker.sock"),
            lock: dir.join("broker.lock"),
            log: dir.join("broker.log"),
            dir,
        }
    }
}

/// Puts the broker in a session of its own (`setsid`), away from the terminal of the program
/// that started it on demand: a Ctrl+C or hang-up there never reaches it, and where the kernel
/// schedules each session as a group (autogroup), the broker that serves every session gets a
/// share of its own instead of sharing its starter's with the programs in that terminal.
pub fn own_session() {
    // Fails (EPERM) for a process group leader: systemd's service, a shell's job. Those already
    // run apart from any terminal, or were put there on purpose.
    let _ = rustix::process::setsid();
}

/// `$XDG_RUNTIME_DIR`, which must be an absolute path to a directory.
///
/// # Errors
///
/// [`BrokerError::NoRuntimeDir`], [`BrokerError::RuntimeDirMissing`].
pub fn runtime_dir() -> Result<PathBuf, BrokerError> {
    let dir = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .ok_or(BrokerError::NoRuntimeDir)?;
    if !dir.is_dir() {
        return Err(BrokerError::RuntimeDirMissing(dir));
    }
    Ok(dir)
}

/// Creates `dir` with mode 0700, or checks an existing one: a real folder (not a symlink) owned
/// by this user. A looser mode is narrowed to 0700; returns a note saying so.
///
/// # Errors
///
/// [`BrokerError::UnsafeDir`] for a symlink, a non-folder or another owner; [`BrokerError::Io`].
pub fn prepare_dir(dir: &Path) -> Result<Option<String>, BrokerError> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(BrokerError::io(format!("cannot create {}", dir.display()))(
                e,
            ));
        }
    }
    let meta = fs::symlink_metadata(dir)
        .map_err(BrokerError::io(format!("cannot inspect {}", dir.display())))?;
    let unsafe_dir = |reason: &str| BrokerError::UnsafeDir {
        path: dir.to_owned(),
        reason: reason.to_owned(),
    };
    if meta.file_type().is_symlink() {
        return Err(unsafe_dir("is a symbolic link; refusing to use it"));
    }
    if !meta.is_dir() {
        return Err(unsafe_dir("is not a folder"));
    }
    let uid = nix::unistd::geteuid().as_raw();
    if meta.uid() != uid {
        return Err(unsafe_dir(&format!(
            "is owned by uid {}, not by this user (uid {uid})",
            meta.uid()
        )));
    }
    let mode = meta.mode() & 0o7777;
    if mode == 0o700 {
        return Ok(None);
    }
    fs::set_permissions(dir, Permissions::from_mode(0o700)).map_err(BrokerError::io(format!(
        "cannot set mode 0700 on {}",
        dir.display()
    )))?;
    Ok(Some(format!(
        "{} had mode {mode:04o}; set it to 0700",
        dir.display()
    )))
}

/// Removes the session folders under `sessions/` whose wrapper is certainly gone
/// ([`clippy_spool::sweep_stale`]: killed wrappers leave theirs behind). Never fails: returns one
/// line per folder, `Ok` when it was removed, `Err` when it could not be (for a warning).
#[must_use]
pub fn sweep_stale_sessions(paths: &Paths) -> Vec<Result<String, String>> {
    let Some(runtime) = paths.dir.parent() else {
        return Vec::new();
    };
    clippy_spool::sweep_stale(runtime)
        .into_iter()
        .map(|(path, outcome)| match outcome {
            Ok(()) => Ok(format!(
                "removed the stale session folder {} (its wrapper is gone)",
                path.display()
            )),
            Err(e) => Err(format!(
                "cannot remove the stale session folder {}: {e}",
                path.display()
            )),
        })
        .collect()
}

/// Opens (creating, mode 0600) the log file for appending.
///
/// # Errors
///
/// [`BrokerError::Io`].
pub fn open_log(path: &Path) -> Result<File, BrokerError> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)
        .map_err(BrokerError::io(format!(
            "cannot open the log file {}",
            path.display()
        )))
}

/// Takes the broker lock; held until the returned value is dropped or the process ends.
///
/// # Errors
///
/// [`BrokerError::AlreadyRunning`] when another broker holds it; [`BrokerError::Io`].
pub fn take_lock(paths: &Paths) -> Result<Flock<File>, BrokerError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(&paths.lock)
        .map_err(BrokerError::io(format!(
            "cannot open {}",
            paths.lock.display()
        )))?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(lock),
        Err((_, Errno::EWOULDBLOCK)) => {
            let pid = match probe(&paths.socket) {
                Ok(Probe::Running { pid }) => pid,
                _ => None,
            };
            Err(BrokerError::AlreadyRunning { pid })
        }
        Err((_, errno)) => Err(BrokerError::Io {
            context: format!("cannot lock {}", paths.lock.display()),
            source: io::Error::from(errno),
        }),
    }
}

/// What is at the socket path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Nothing.
    Absent,
    /// A socket nobody listens on: a broker that died without cleaning up.
    Stale,
    /// A broker, which answered `hello`; its pid when SO_PEERCRED told it.
    Running {
        /// The broker's pid.
        pid: Option<i32>,
    },
    /// Something accepts connections but does not answer `hello` in time.
    NotAnswering,
    /// Not a socket at all.
    NotASocket,
}

/// Looks at the socket path: connects and says `hello` if there is a socket.
///
/// # Errors
///
/// [`BrokerError::Io`] when the path cannot be inspected or connecting fails for another reason
/// than "nobody listens".
pub fn probe(socket: &Path) -> Result<Probe, BrokerError> {
    match fs::symlink_metadata(socket) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Probe::Absent),
        Err(e) => {
            return Err(BrokerError::io(format!(
                "cannot inspect {}",
                socket.display()
            ))(e));
        }
        Ok(meta) if !meta.file_type().is_socket() => return Ok(Probe::NotASocket),
        Ok(_) => {}
    }
    let mut stream = match UnixStream::connect(socket) {
        Ok(stream) => stream,
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return Ok(Probe::Stale),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Probe::Absent),
        Err(e) => {
            return Err(BrokerError::io(format!(
                "cannot connect to {}",
                socket.display()
            ))(e));
        }
    };
    let pid = getsockopt(&stream, PeerCredentials)
        .ok()
        .map(|cred| cred.pid());
    Ok(if say_hello(&mut stream).is_ok() {
        Probe::Running { pid }
    } else {
        Probe::NotAnswering
    })
}

/// Sends `hello` and waits for any well-formed reply.
fn say_hello(stream: &mut UnixStream) -> io::Result<()> {
    stream.set_read_timeout(Some(PROBE_TIMEOUT))?;
    stream.set_write_timeout(Some(PROBE_TIMEOUT))?;
    let hello = encode(&Message::Hello {
        id: 1,
        version: PROTOCOL_VERSION,
        role: Role::Client,
    })
    .map_err(io::Error::other)?;
    stream.write_all(&hello)?;
    let mut decoder = FrameDecoder::default();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(payload) = decoder.next_frame().map_err(io::Error::other)? {
            return match decode(&payload) {
                Ok(Message::HelloAck { .. } | Message::Error { .. }) => Ok(()),
                Ok(_) | Err(_) => Err(io::Error::other("not a broker's reply")),
            };
        }
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        decoder.push(&buf[..n]);
    }
}

/// Binds the socket and sets its mode to 0600. Returns the listener and the socket file's
/// (device, inode), to remove it at exit only if it is still ours.
///
/// # Errors
///
/// [`BrokerError::AlreadyRunning`] if the address is taken; [`BrokerError::Io`].
pub fn bind(socket: &Path) -> Result<(UnixListener, (u64, u64)), BrokerError> {
    let listener = UnixListener::bind(socket).map_err(|e| {
        if e.kind() == io::ErrorKind::AddrInUse {
            BrokerError::AlreadyRunning { pid: None }
        } else {
            BrokerError::io(format!("cannot bind {}", socket.display()))(e)
        }
    })?;
    fs::set_permissions(socket, Permissions::from_mode(0o600)).map_err(BrokerError::io(
        format!("cannot set mode 0600 on {}", socket.display()),
    ))?;
    let meta = fs::symlink_metadata(socket).map_err(BrokerError::io(format!(
        "cannot inspect {}",
        socket.display()
    )))?;
    Ok((listener, (meta.dev(), meta.ino())))
}

/// Removes the socket file if it is still the one bound (same device and inode).
pub fn remove_socket(socket: &Path, id: (u64, u64)) -> bool {
    match fs::symlink_metadata(socket) {
        Ok(meta) if (meta.dev(), meta.ino()) == id => fs::remove_file(socket).is_ok(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            let path = std::env::temp_dir().join(format!(
                "clippy-broker-startup-{tag}-{}",
                std::process::id()
            ));
            let _ = fs::remove_dir_all(&path);
            fs::create_dir_all(&path).expect("mkdir");
            TempDir(path)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).expect("stat").mode() & 0o7777
    }

    #[test]
    fn paths_live_in_the_clippy_folder() {
        let p = Paths::new(Path::new("/run/user/1000"));
        assert_eq!(p.dir, Path::new("/run/user/1000/clippy"));
        assert_eq!(p.socket, Path::new("/run/user/1000/clippy/broker.sock"));
        assert_eq!(p.lock, Path::new("/run/user/1000/clippy/broker.lock"));
        assert_eq!(p.log, Path::new("/run/user/1000/clippy/broker.log"));
    }

    #[test]
    fn the_folder_is_created_0700_and_narrowed_to_0700() {
        let tmp = TempDir::new("dir");
        let dir = tmp.0.join("clippy");
        assert_eq!(prepare_dir(&dir).expect("create"), None);
        assert_eq!(mode(&dir), 0o700);
        fs::set_permissions(&dir, Permissions::from_mode(0o755)).expect("chmod");
        let note = prepare_dir(&dir).expect("fix").expect("a note");
        assert!(note.contains("0755"), "{note}");
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn a_symlinked_or_file_folder_is_refused() {
        let tmp = TempDir::new("unsafe");
        let real = tmp.0.join("real");
        fs::create_dir(&real).expect("mkdir");
        let link = tmp.0.join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        assert!(matches!(
            prepare_dir(&link),
            Err(BrokerError::UnsafeDir { .. })
        ));
        let file = tmp.0.join("file");
        fs::write(&file, b"").expect("write");
        assert!(matches!(
            prepare_dir(&file),
            Err(BrokerError::UnsafeDir { .. })
        ));
    }

    #[test]
    fn probe_tells_absent_stale_and_not_a_socket() {
        let tmp = TempDir::new("probe");
        let socket = tmp.0.join("broker.sock");
        assert_eq!(probe(&socket).expect("probe"), Probe::Absent);
        drop(UnixListener::bind(&socket).expect("bind"));
        assert_eq!(probe(&socket).expect("probe"), Probe::Stale);
        fs::remove_file(&socket).expect("rm");
        fs::write(&socket, b"").expect("write");
        assert_eq!(probe(&socket).expect("probe"), Probe::NotASocket);
    }

    #[test]
    fn bind_sets_0600_and_removal_checks_the_inode() {
        let tmp = TempDir::new("bind");
        let socket = tmp.0.join("broker.sock");
        let (listener, id) = bind(&socket).expect("bind");
        assert_eq!(mode(&socket), 0o600);
        assert!(matches!(
            bind(&socket),
            Err(BrokerError::AlreadyRunning { pid: None })
        ));
        drop(listener);
        // Replaced by someone else (the old file kept aside, so its inode is not reused): not
        // ours to remove.
        fs::rename(&socket, tmp.0.join("old.sock")).expect("mv");
        let (_other, other_id) = bind(&socket).expect("rebind");
        assert_ne!(other_id, id);
        assert!(!remove_socket(&socket, id));
        assert!(socket.exists());
        assert!(remove_socket(&socket, other_id));
        assert!(!socket.exists());
    }

    #[test]
    fn the_lock_is_exclusive() {
        let tmp = TempDir::new("lock");
        let paths = Paths::new(&tmp.0);
        prepare_dir(&paths.dir).expect("dir");
        let held = take_lock(&paths).expect("first");
        assert!(matches!(
            take_lock(&paths),
            Err(BrokerError::AlreadyRunning { pid: None })
        ));
        drop(held);
        take_lock(&paths).expect("free again");
    }
}
