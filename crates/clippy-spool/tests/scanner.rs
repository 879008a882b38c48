//! The reader half: reads by cursor, and scans that never skip a match.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

use clippy_spool::{
    DiskSpoolFiles, MAX_MATCH_BYTES, Pattern, Scanner, SpoolError, SpoolFiles, read,
};
use proptest::prelude::*;

/// The stripped text of spool bytes, computed independently of the scanner: escape sequences
/// and controls other than `\n` and `\t` dropped.
fn strip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            0x1b if bytes.get(i + 1) == Some(&b'[') => {
                i += 2;
                while i < bytes.len() && !(0x40..=0x7e).contains(&bytes[i]) {
                    i += 1;
                }
            }
            0x1b if bytes.get(i + 1) == Some(&b']') => {
                while i < bytes.len() && bytes[i] != 0x07 {
                    i += 1;
                }
            }
            b'\n' | b'\t' | 0x20..=0x7e | 0x80..=0xff => out.push(bytes[i]),
            _ => {}
        }
        i += 1;
    }
    out
}

fn decorated_text() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            "[a-z \n]{1,12}".prop_map(String::into_bytes),
            Just(b"\x1b[1;31m".to_vec()),
            Just(b"\x1b[0m".to_vec()),
            Just(b"\x1b]0;title\x07".to_vec()),
            Just("é✳".as_bytes().to_vec()),
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_chunking_finds_the_first_match_with_an_exact_span(
        before in decorated_text(),
        after in decorated_text(),
        cuts in prop::collection::vec(1usize..9, 1..30),
        escape_inside in any::<bool>(),
    ) {
        // The needle, with an escape sequence inside it or not, between two decorated texts
        // that do not contain it.
        let needle: &[u8] = if escape_inside { b"TAR\x1b[7mGET" } else { b"TARGET" };
        let spool = [&before[..], needle, &after[..]].concat();
        let base = 1000;
        let mut scanner = Scanner::new(Pattern::literal("TARGET").unwrap(), base);
        let mut rest = &spool[..];
        let mut found = None;
        for &cut in cuts.iter().cycle() {
            if rest.is_empty() || found.is_some() {
                break;
            }
            let n = cut.min(rest.len());
            found = scanner.feed(&rest[..n]);
            rest = &rest[n..];
        }
        let found = found.expect("the match is never skipped");
        let start = (found.span.0 - base) as usize;
        let end = (found.span.1 - base) as usize;
        prop_assert_eq!(start, before.len());
        prop_assert_eq!(end, before.len() + needle.len());
        prop_assert_eq!(strip(&spool[start..end]), b"TARGET".to_vec());
        prop_assert_eq!(found.resume_cursor, found.span.1);
        prop_assert_eq!(found.text, "TARGET");
    }
}

#[test]
fn no_match_leaves_the_position_at_the_end() {
    let mut scanner = Scanner::new(Pattern::literal("absent").unwrap(), 10);
    assert!(scanner.feed(b"some output\n").is_none());
    assert!(scanner.feed(b"\x1b[31mmore\x1b[0m").is_none());
    assert_eq!(scanner.position(), 10 + 12 + 13);
}

#[test]
fn the_next_scan_from_resume_cursor_finds_the_next_match() {
    let spool = b"Guess a number\nToo low\nGuess a number\nCorrect!\n";
    let mut first = Scanner::new(Pattern::literal("Guess a number").unwrap(), 0);
    let one = first.feed(spool).unwrap();
    assert_eq!(one.span, (0, 14));
    let mut second = Scanner::new(
        Pattern::literal("Guess a number").unwrap(),
        one.resume_cursor,
    );
    let two = second.feed(&spool[one.resume_cursor as usize..]).unwrap();
    assert_eq!(
        two.span,
        (23, 37),
        "the second occurrence, not the first again"
    );
    assert!(two.resume_cursor > one.resume_cursor);
}

#[test]
fn regexes_are_multi_line_and_match_on_stripped_text() {
    let mut scanner = Scanner::new(Pattern::regex(r"^Correct!\s*$").unwrap(), 0);
    let found = scanner
        .feed(b"Too high\n\x1b[32mCorrect!\x1b[0m\n")
        .unwrap();
    assert_eq!(found.text, "Correct!\n");
    // From the first byte of the match (after the colour escape) to past its last (`\n`).
    assert_eq!(found.span, (14, 27));
    let mut exit = Scanner::new(Pattern::regex(r"exit=(\d+)\n").unwrap(), 0);
    assert!(
        exit.feed(b"exit=1").is_none(),
        "an incomplete match waits for its end"
    );
    assert_eq!(exit.feed(b"7\n").unwrap().text, "exit=17\n");
}

#[test]
fn where_old_text_is_dropped_is_no_line_start_for_an_anchored_regex() {
    // A long line whose `b` lands at the front of the text kept once older text is dropped: it
    // is in the middle of a line, so `^b` must not match it; the `b` that starts a later line
    // is the match.
    for (pattern, filler, at_cut) in [
        (r"^b", b'-', b'b'),
        (r"\bb", b'x', b'b'),
        (r"^\w", b'-', b'w'),
    ] {
        let mut scanner = Scanner::new(Pattern::regex(pattern).unwrap(), 0);
        let mut line = vec![filler; MAX_MATCH_BYTES];
        line.push(at_cut);
        line.extend(std::iter::repeat_n(filler, MAX_MATCH_BYTES - 1));
        assert!(scanner.feed(&line).is_none(), "{pattern}");
        assert!(
            scanner.feed(b"yy").is_none(),
            "{pattern}: matched at the cut"
        );
        let found = scanner.feed(b"\nbw").unwrap();
        assert_eq!(found.span.0, line.len() as u64 + 3, "{pattern}");
    }
}

#[test]
fn memory_stays_bounded_without_a_match() {
    let mut scanner = Scanner::new(Pattern::regex(r"never here").unwrap(), 0);
    let junk = vec![b'x'; 1024 * 1024];
    for _ in 0..16 {
        assert!(scanner.feed(&junk).is_none());
        assert!(
            scanner.held_bytes() <= 2 * MAX_MATCH_BYTES + junk.len(),
            "{}",
            scanner.held_bytes()
        );
    }
    // Then a match still arrives and is found, with the right offset.
    let found = scanner.feed(b"never here").unwrap();
    assert_eq!(found.span.0, 16 * 1024 * 1024);
}

#[test]
fn bad_patterns_are_refused() {
    assert!(matches!(
        Pattern::literal(""),
        Err(SpoolError::InvalidPattern { .. })
    ));
    assert!(matches!(
        Pattern::regex("(open"),
        Err(SpoolError::InvalidPattern { .. })
    ));
    let empty = Pattern::regex("x*").unwrap_err().to_string();
    assert!(empty.contains("empty string"), "{empty}");
}

#[test]
fn reads_by_cursor() {
    let dir = std::env::temp_dir().join(format!("clippy-spool-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("output.spool");
    std::fs::write(&path, b"0123456789").unwrap();
    let chunk = read(&path, 2, 3).unwrap();
    assert_eq!(
        (chunk.data.as_slice(), chunk.cursor, chunk.resume_cursor),
        (&b"234"[..], 2, 5)
    );
    let end = read(&path, 10, 100).unwrap();
    assert!(end.data.is_empty());
    assert_eq!(end.resume_cursor, 10, "at the end the cursor stays");
    assert!(matches!(
        read(&path, 11, 1),
        Err(SpoolError::CursorBeyondEnd { size: 10, .. })
    ));
    assert!(matches!(
        read(&dir.join("missing"), 0, 1),
        Err(SpoolError::Read { .. })
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The broker's reader: fills what it is asked for until the end, keeps each spool open until
/// told to forget it (a spool stays readable while its session lives), and never opens one
/// through a symlink.
#[test]
fn disk_spool_files_read_kept_open_and_refuse_symlinks() {
    let dir = std::env::temp_dir().join(format!("clippy-spool-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("output.spool");
    std::fs::write(&path, b"0123456789").unwrap();
    let mut files = DiskSpoolFiles::default();
    let mut buf = [0; 4];
    assert_eq!(files.read_full(&path, 2, &mut buf).unwrap(), 4);
    assert_eq!(&buf, b"2345");
    assert_eq!(
        files.read_full(&path, 8, &mut buf).unwrap(),
        2,
        "short at the end"
    );
    assert_eq!(&buf[..2], b"89");
    assert_eq!(files.read_full(&path, 10, &mut buf).unwrap(), 0);

    // Open until forgotten: the same file is read after its name is gone.
    std::fs::remove_file(&path).unwrap();
    assert_eq!(files.read_full(&path, 0, &mut buf).unwrap(), 4);
    assert_eq!(&buf, b"0123");
    files.forget(&path);
    assert_eq!(
        files.read_full(&path, 0, &mut buf).unwrap_err().kind(),
        std::io::ErrorKind::NotFound
    );

    let target = dir.join("elsewhere");
    std::fs::write(&target, b"secret").unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let refused = files.read_full(&path, 0, &mut buf).unwrap_err();
    assert_eq!(refused.raw_os_error(), Some(nix::libc::ELOOP), "{refused}");
    std::fs::remove_dir_all(&dir).unwrap();
}
