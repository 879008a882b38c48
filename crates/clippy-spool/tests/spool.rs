//! The spool folder and writer on real files.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use clippy_spool::{SpoolDir, SpoolError, SpoolWriter};
use common::{TempDir, mode, normalise};
use proptest::prelude::*;

#[test]
fn folders_are_0700_and_the_spool_is_0600() {
    let runtime = TempDir::new("modes");
    let dir = SpoolDir::create(runtime.path(), "s1").unwrap();
    assert_eq!(dir.path(), runtime.path().join("clippy/sessions/s1"));
    assert_eq!(dir.session_id(), "s1");
    let spool_path = dir.spool_path();
    let writer = SpoolWriter::create(dir).unwrap();
    assert_eq!(writer.path(), Some(spool_path.as_path()));
    assert_eq!(mode(&runtime.path().join("clippy")), 0o700);
    assert_eq!(mode(&runtime.path().join("clippy/sessions")), 0o700);
    assert_eq!(mode(&runtime.path().join("clippy/sessions/s1")), 0o700);
    assert_eq!(mode(&spool_path), 0o600);
    assert_eq!(
        spool_path.file_name().unwrap(),
        clippy_spool::SPOOL_FILE_NAME
    );

    // A second session reuses clippy/ and sessions/.
    let other = SpoolDir::create(runtime.path(), "s2").unwrap();
    assert_eq!(mode(other.path()), 0o700);
}

#[test]
fn loose_folders_of_ours_are_tightened() {
    let runtime = TempDir::new("loose");
    let clippy = runtime.path().join("clippy");
    fs::create_dir(&clippy).unwrap();
    fs::set_permissions(&clippy, fs::Permissions::from_mode(0o755)).unwrap();
    fs::create_dir(clippy.join("sessions")).unwrap();
    fs::set_permissions(clippy.join("sessions"), fs::Permissions::from_mode(0o2777)).unwrap();
    SpoolDir::create(runtime.path(), "s").unwrap();
    assert_eq!(mode(&clippy), 0o700);
    assert_eq!(mode(&clippy.join("sessions")), 0o700);
}

#[test]
fn folders_of_another_user_are_refused() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: making a folder owned by another user needs root");
        return;
    }
    let runtime = TempDir::new("owner");
    let clippy = runtime.path().join("clippy");
    fs::create_dir(&clippy).unwrap();
    fs::set_permissions(&clippy, fs::Permissions::from_mode(0o777)).unwrap();
    std::os::unix::fs::chown(&clippy, Some(65534), Some(65534)).unwrap();
    let err = SpoolDir::create(runtime.path(), "s").unwrap_err();
    match &err {
        SpoolError::NotOwned { path, owner, uid } => {
            assert_eq!(path, &clippy);
            assert_eq!(*owner, 65534);
            assert_eq!(*uid, 0);
        }
        other => panic!("unexpected: {other:?}"),
    }
    // Left alone: neither tightened nor used.
    assert_eq!(mode(&clippy), 0o777);
    assert!(!clippy.join("sessions").exists());
    assert!(err.to_string().contains("owned by uid 65534"));
}

#[test]
fn symlinks_and_files_on_the_path_are_refused() {
    let runtime = TempDir::new("symlink");
    let elsewhere = TempDir::new("elsewhere");
    std::os::unix::fs::symlink(elsewhere.path(), runtime.path().join("clippy")).unwrap();
    assert!(matches!(
        SpoolDir::create(runtime.path(), "s"),
        Err(SpoolError::NotADirectory { .. })
    ));
    assert!(!elsewhere.path().join("sessions").exists());

    let runtime = TempDir::new("file");
    fs::write(runtime.path().join("clippy"), b"").unwrap();
    assert!(matches!(
        SpoolDir::create(runtime.path(), "s"),
        Err(SpoolError::NotADirectory { .. })
    ));
}

#[test]
fn an_existing_session_folder_is_refused() {
    let runtime = TempDir::new("exists");
    let _first = SpoolDir::create(runtime.path(), "same").unwrap();
    assert!(matches!(
        SpoolDir::create(runtime.path(), "same"),
        Err(SpoolError::SessionExists { .. })
    ));
}

#[test]
fn a_missing_runtime_dir_is_an_error() {
    let runtime = TempDir::new("missing");
    let missing = runtime.path().join("nope");
    assert!(matches!(
        SpoolDir::create(&missing, "s"),
        Err(SpoolError::RuntimeDir { path, .. }) if path == missing
    ));
}

/// `from_env` reads the process environment, which tests must not change in-process: each case
/// runs this test binary again as a child with the environment set up.
#[test]
fn from_env_needs_xdg_runtime_dir() {
    let runtime = TempDir::new("env");
    let result_file = runtime.path().join("result");
    // The child writes its outcome to the file named by CLIPPY_SPOOL_CHILD_MODE.
    let report = |value: Option<&Path>| {
        let _ = fs::remove_file(&result_file);
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["child_from_env", "--exact", "--test-threads=1"])
            .env("CLIPPY_SPOOL_CHILD_MODE", &result_file);
        match value {
            Some(value) => cmd.env("XDG_RUNTIME_DIR", value),
            None => cmd.env_remove("XDG_RUNTIME_DIR"),
        };
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        fs::read_to_string(&result_file).unwrap()
    };
    assert_eq!(report(None), "unset");
    assert_eq!(report(Some(Path::new(""))), "unset");
    assert_eq!(report(Some(runtime.path())), "created");
    assert!(runtime.path().join("clippy/sessions/envtest").is_dir());
}

#[test]
fn child_from_env() {
    let Some(result) = std::env::var_os("CLIPPY_SPOOL_CHILD_MODE") else {
        return;
    };
    let outcome = match SpoolDir::from_env("envtest") {
        Ok(_) => "created".to_owned(),
        Err(SpoolError::RuntimeDirUnset) => "unset".to_owned(),
        Err(other) => format!("error: {other}"),
    };
    fs::write(result, outcome).unwrap();
}

#[test]
fn finish_removes_the_session_folder() {
    let runtime = TempDir::new("finish");
    let dir = SpoolDir::create(runtime.path(), "gone").unwrap();
    let folder = dir.path().to_owned();
    let mut writer = SpoolWriter::create(dir).unwrap();
    writer.append(b"some output\r\n").unwrap();
    assert_eq!(writer.finish(None).unwrap(), None);
    assert!(!folder.exists());
    assert!(runtime.path().join("clippy/sessions").is_dir());
}

#[test]
fn dropping_the_writer_removes_the_session_folder() {
    let runtime = TempDir::new("drop");
    let dir = SpoolDir::create(runtime.path(), "dropped").unwrap();
    let folder = dir.path().to_owned();
    drop(SpoolWriter::create(dir).unwrap());
    assert!(!folder.exists());
}

#[test]
fn finish_keeps_the_spool_when_asked() {
    let runtime = TempDir::new("keep");
    let keep_parent = TempDir::new("keepdir");
    let keep = keep_parent.path().join("kept"); // created by finish
    let dir = SpoolDir::create(runtime.path(), "k1").unwrap();
    let folder = dir.path().to_owned();
    let mut writer = SpoolWriter::create(dir).unwrap();
    writer.append(b"line\r\nredraw\r").unwrap();
    let kept = writer.finish(Some(&keep)).unwrap().unwrap();
    assert_eq!(kept, keep.join("k1.spool"));
    // The held-back \r was written at the end.
    assert_eq!(fs::read(&kept).unwrap(), b"line\nredraw\r");
    assert_eq!(mode(&kept), 0o600);
    assert!(!folder.exists());
}

#[test]
fn keeping_never_overwrites_and_loses_nothing() {
    let runtime = TempDir::new("keepexists");
    let keep = TempDir::new("keepexists-dir");
    fs::write(keep.path().join("k2.spool"), b"precious").unwrap();
    let dir = SpoolDir::create(runtime.path(), "k2").unwrap();
    let spool_path = dir.spool_path();
    let mut writer = SpoolWriter::create(dir).unwrap();
    writer.append(b"data").unwrap();
    let err = writer.finish(Some(keep.path())).unwrap_err();
    assert!(matches!(&err, SpoolError::Keep { source, .. }
        if source.kind() == std::io::ErrorKind::AlreadyExists));
    assert_eq!(fs::read(keep.path().join("k2.spool")).unwrap(), b"precious");
    // The spool is still where it was.
    assert_eq!(fs::read(&spool_path).unwrap(), b"data");
}

#[test]
fn keeping_across_filesystems_copies() {
    // /dev/shm is a tmpfs like the usual XDG_RUNTIME_DIR; the temp dir is usually elsewhere.
    let shm = Path::new("/dev/shm");
    let keep = TempDir::new("xdev-keep");
    let same_device = fs::metadata(shm)
        .map(|m| m.dev() == fs::metadata(keep.path()).unwrap().dev())
        .unwrap_or(true);
    if same_device {
        eprintln!("skipped: no second filesystem (/dev/shm) to move across");
        return;
    }
    let runtime = TempDir::new_in(shm, "xdev");
    let dir = SpoolDir::create(runtime.path(), "x1").unwrap();
    let folder = dir.path().to_owned();
    let mut writer = SpoolWriter::create(dir).unwrap();
    writer.append(b"across\r\n").unwrap();
    let kept = writer.finish(Some(keep.path())).unwrap().unwrap();
    assert_eq!(fs::read(&kept).unwrap(), b"across\n");
    assert_eq!(mode(&kept), 0o600);
    assert!(!folder.exists());
}

#[test]
fn a_writer_without_folder_cannot_keep() {
    let w = SpoolWriter::with_file(OpenOptions::new().append(true).open("/dev/null").unwrap());
    assert!(matches!(
        w.finish(Some(Path::new("/tmp"))),
        Err(SpoolError::KeepWithoutFolder)
    ));
    let w = SpoolWriter::with_file(OpenOptions::new().append(true).open("/dev/null").unwrap());
    assert_eq!(w.finish(None).unwrap(), None);
}

#[test]
fn a_failing_spool_reports_once_and_keeps_counting() {
    let full = OpenOptions::new().append(true).open("/dev/full").unwrap();
    let mut w = SpoolWriter::with_file(full);
    assert!(!w.failed());
    let err = w.append(b"first\r\n").unwrap_err();
    match &err {
        SpoolError::Write { path: None, source } => {
            assert_eq!(source.raw_os_error(), Some(nix::libc::ENOSPC));
        }
        other => panic!("unexpected: {other:?}"),
    }
    assert!(err.to_string().contains("(open file)"));
    assert!(w.failed());
    w.append(b"second\r\n").unwrap();
    w.append(b"third").unwrap();
    assert_eq!(w.raw_len(), 20);
    assert_eq!(w.len(), 0);
    assert_eq!(w.spool_offset_of(0), Some(0));
    assert_eq!(w.spool_offset_of(7), None, "not in the spool");
    assert_eq!(w.spool_offset_of(20), None);
    assert_eq!(w.finish(None).unwrap(), None);
}

/// Appends `raw` in the given chunks to a writer on a fresh file, checking after each append
/// that a separate reader sees exactly the normalised stream so far (minus a held-back `\r`).
fn check_chunked(raw: &[u8], cuts: &[usize]) -> Result<(), TestCaseError> {
    let tmp = TempDir::new("prop");
    let path = tmp.path().join("spool");
    let file = OpenOptions::new()
        .append(true)
        .create_new(true)
        .open(&path)
        .unwrap();
    let mut reader = File::open(&path).unwrap();
    let mut seen = Vec::new();
    let mut w = SpoolWriter::with_file(file);

    let mut bounds: Vec<usize> = cuts.iter().map(|&c| c.min(raw.len())).collect();
    bounds.push(0);
    bounds.push(raw.len());
    bounds.sort_unstable();
    for pair in bounds.windows(2) {
        w.append(&raw[pair[0]..pair[1]]).unwrap();
        let so_far = &raw[..pair[1]];
        let mut expected = normalise(so_far);
        if so_far.last() == Some(&b'\r') {
            expected.pop(); // held back until the next byte decides
        }
        reader.read_to_end(&mut seen).unwrap();
        prop_assert_eq!(&seen, &expected);
        prop_assert_eq!(w.len(), expected.len() as u64);
        prop_assert_eq!(w.raw_len(), so_far.len() as u64);
    }
    for offset in 0..=raw.len() {
        prop_assert_eq!(
            w.spool_offset_of(offset as u64),
            Some(normalise(&raw[..offset]).len() as u64),
            "raw offset {}",
            offset
        );
    }
    prop_assert_eq!(w.spool_offset_of(raw.len() as u64 + 1), None);
    w.finish(None).unwrap();
    let mut all = Vec::new();
    File::open(&path).unwrap().read_to_end(&mut all).unwrap();
    prop_assert_eq!(all, normalise(raw));
    Ok(())
}

fn line_ending_heavy_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            3 => Just(b'\r'),
            3 => Just(b'\n'),
            2 => Just(b'a'),
            1 => any::<u8>(),
        ],
        0..200,
    )
}

proptest! {
    #[test]
    fn any_stream_any_chunking(
        raw in line_ending_heavy_bytes(),
        cuts in prop::collection::vec(0usize..201, 0..12),
    ) {
        check_chunked(&raw, &cuts)?;
    }

    #[test]
    fn byte_at_a_time(raw in line_ending_heavy_bytes()) {
        let cuts: Vec<usize> = (0..raw.len()).collect();
        check_chunked(&raw, &cuts)?;
    }
}

#[test]
fn cr_at_a_chunk_boundary() {
    check_chunked(b"a\r\nb\r\rc\r", &[2, 5, 6]).unwrap();
    check_chunked(b"\r\n\r\n", &[1, 2, 3]).unwrap();
    check_chunked(b"\r\r\n\n\r", &[1, 2, 4]).unwrap();
}
