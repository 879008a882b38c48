use super::*;

fn fed(cols: u16, rows: u16, bytes: &[u8]) -> Screen {
    let mut screen = Screen::new(cols, rows);
    screen.feed(bytes);
    screen
}

#[test]
fn rows_scrolled_out_of_a_region_at_the_top_are_kept_in_history() {
    // An inline viewport: the region is rows 1-3, the TUI's box is row 4.
    let mut screen = fed(20, 4, b"\x1b[4;1Hbox\x1b[1;3r\x1b[3;1H");
    screen.begin_recording();
    for n in 1..=6 {
        screen.feed(format!("\r\nline {n}").as_bytes());
    }
    screen.feed(b"\x1b[r");
    let turn = screen.finish_recording();
    assert_eq!(
        turn.lines,
        [
            "", "", "", "line 1", "line 2", "line 3", "line 4", "line 5", "line 6", "box"
        ]
    );
}

#[test]
fn a_region_below_the_top_keeps_no_history() {
    let mut screen = fed(20, 4, b"top\x1b[2;4r\x1b[4;1H");
    screen.begin_recording();
    screen.feed(b"a\r\nb\r\nc\r\nd");
    let turn = screen.finish_recording();
    assert_eq!(turn.lines, ["top", "b", "c", "d"]);
}

#[test]
fn wrapped_rows_are_one_line_in_history_and_on_screen() {
    let mut screen = fed(5, 2, b"");
    screen.begin_recording();
    screen.feed(b"abcdefghij\r\nxy\r\nabcdefg");
    let turn = screen.finish_recording();
    assert_eq!(turn.lines, ["abcdefghij", "xy", "abcdefg"]);
}

#[test]
fn wide_characters_and_zwj_sequences_come_out_whole() {
    let text = "日本語 👍 👨\u{200d}👩\u{200d}👧 é";
    let mut screen = fed(40, 2, text.as_bytes());
    assert_eq!(screen.snapshot(0).lines[0], text);
}

#[test]
fn a_zwj_sequence_takes_the_two_cells_its_program_gives_it() {
    // The program counts the family as two cells and moves on to column 12 absolutely.
    let family = "👨\u{200d}👩\u{200d}👧";
    let mut screen = fed(20, 2, format!("a {family}\x1b[6Gb\x1b[12Gc").as_bytes());
    assert_eq!(screen.snapshot(0).lines[0], format!("a {family} b     c"));
}

#[test]
fn a_cleared_history_keeps_only_what_came_after() {
    let mut screen = fed(10, 2, b"old 1\r\nold 2\r\nold 3\r\n");
    screen.begin_recording();
    screen.feed(b"\x1b[2J\x1b[3J\x1b[Hold 3\r\nnew\r\n> ");
    let turn = screen.finish_recording();
    assert_eq!(turn.before, ["old 1", "old 2", "old 3"]);
    assert_eq!(turn.lines, ["old 3", "new", ">"]);
}

#[test]
fn a_resize_keeps_history_as_logical_lines() {
    let mut screen = fed(10, 3, b"");
    screen.begin_recording();
    screen.feed(b"0123456789abcd\r\nx\r\n");
    screen.resize(5, 2);
    screen.feed(b"y\r\n");
    let turn = screen.finish_recording();
    let joined = turn.lines.join("|");
    assert!(joined.starts_with("0123456789abcd|x|y"), "{joined}");
    assert_eq!(screen.size(), (5, 2));
}

#[test]
fn rows_a_shrink_pushed_out_and_the_program_redrew_are_counted_once() {
    let mut screen = fed(10, 4, b"");
    screen.begin_recording();
    screen.feed(b"a\r\nb\r\nc\r\nd");
    screen.resize(10, 2);
    // The program repaints its four lines from where it thinks they begin.
    screen.feed(b"\x1b[3A\ra\r\nb\r\nc\r\nd\r\ne");
    let turn = screen.finish_recording();
    assert_eq!(turn.lines, ["a", "b", "c", "d", "e"]);
}

#[test]
fn alternate_screen_frames_are_stitched() {
    let mut screen = fed(10, 3, b"\x1b[?1049h\x1b[Hhello\r\n> ");
    screen.begin_recording();
    screen.feed(b"\x1b[?2026h\x1b[H\x1b[Jhello\r\nreply 1\r\n> \x1b[?2026l");
    screen.feed(b"\x1b[?2026h\x1b[H\x1b[Jreply 1\r\nreply 2\r\n> \x1b[?2026l");
    let turn = screen.finish_recording();
    assert!(turn.alternate);
    // The prompt drawn under `hello` at first was redrawn lower down: it is where it last was.
    assert_eq!(turn.lines, ["hello", "reply 1", "reply 2", ">"]);
    assert_eq!(turn.before, ["hello", ">"]);
}

#[test]
fn a_scrollbar_thumb_in_the_last_column_is_no_part_of_the_lines() {
    // A full-screen program's scrollbar: its thumb (a block element) moves down the last column
    // as the view scrolls. The same transcript line must read the same in every frame.
    let mut screen = fed(16, 4, b"\x1b[?1049h\x1b[Hhello\x1b[1;16H\xe2\x96\x86\r\n> ");
    screen.begin_recording();
    screen.feed(
        b"\x1b[?2026h\x1b[H\x1b[Jhello\r\n> hi\x1b[2;16H\xe2\x96\x86\r\nreply 1\r\n> \x1b[?2026l",
    );
    screen.feed(
        b"\x1b[?2026h\x1b[H\x1b[J> hi\r\nreply 1\x1b[2;16H\xe2\x96\x86\r\nreply 2\r\n> \x1b[?2026l",
    );
    let turn = screen.finish_recording();
    assert_eq!(turn.lines, ["hello", "> hi", "reply 1", "reply 2", ">"]);
    assert_eq!(turn.before, ["hello", ">"]);
    // A block element that is text (a bar chart's last cell, no blank before it) stays.
    let mut screen = fed(8, 3, b"\x1b[?1049h\x1b[H");
    screen.begin_recording();
    screen.feed(b"\x1b[Hload \xe2\x96\x86\xe2\x96\x86\xe2\x96\x86\r\n> ");
    assert_eq!(
        screen.finish_recording().lines,
        ["load \u{2586}\u{2586}\u{2586}", ">", ""]
    );
}

#[test]
fn a_recording_that_ends_mid_frame_keeps_the_last_whole_frame() {
    let mut screen = fed(10, 3, b"\x1b[?1049h\x1b[Hhello\r\n> ");
    screen.begin_recording();
    screen.feed(b"\x1b[?2026h\x1b[H\x1b[Jhello\r\nreply 1\r\n> \x1b[?2026l");
    // The next frame has erased its rows and drawn one word when the turn ends.
    screen.feed(b"\x1b[?2026h\x1b[H\x1b[Jrep");
    assert_eq!(screen.finish_recording().lines, ["hello", "reply 1", ">"]);
}

#[test]
fn history_is_bounded_and_a_recording_says_what_it_lost() {
    let mut screen = Screen::with_history_bytes(10, 2, 20);
    screen.begin_recording();
    for n in 0..20 {
        screen.feed(format!("line {n}\r\n").as_bytes());
    }
    let turn = screen.finish_recording();
    assert!(turn.lost > 0);
    assert_eq!(turn.lines.last().map(String::as_str), Some(""));
    assert!(turn.lines.contains(&"line 19".to_owned()));
    assert!(screen.snapshot(100).history <= 4);
}

#[test]
fn synchronized_output_is_applied_at_once_and_queries_get_no_reply() {
    let mut screen = fed(10, 2, b"\x1b[?2026hdrawn\x1b[c\x1b[6n");
    assert_eq!(screen.snapshot(0).lines, ["drawn", ""]);
}

#[test]
fn any_chunking_gives_the_same_screen_and_history() {
    let stream: &[u8] =
        "a\r\nb\x1b[1;2r\x1b[2;1H\r\nc\r\nd\x1b[r\x1b[3J\r\n日本\r\n\x1b[?1049hx\x1b[?1049le"
            .as_bytes();
    let mut whole = fed(4, 3, stream);
    let expected = whole.snapshot(10);
    for cut in 1..stream.len() {
        let mut screen = Screen::new(4, 3);
        screen.feed(&stream[..cut]);
        screen.feed(&stream[cut..]);
        assert_eq!(screen.snapshot(10), expected, "cut at {cut}");
    }
}

#[test]
fn a_character_split_between_feeds_loses_nothing_after_it() {
    let text = "ab:°O─x é👍";
    for cut in 1..text.len() {
        let mut screen = fed(20, 2, &text.as_bytes()[..cut]);
        screen.catch_up();
        screen.feed(&text.as_bytes()[cut..]);
        assert_eq!(screen.snapshot(0).lines[0], text, "cut at {cut}");
    }
    let mut screen = Screen::new(20, 2);
    for byte in text.as_bytes() {
        screen.feed(&[*byte]);
        screen.catch_up();
    }
    assert_eq!(screen.snapshot(0).lines[0], text);
}

#[test]
fn output_is_rendered_when_read_and_a_flood_past_the_bound_skips_its_oldest_half() {
    let mut screen = Screen::new(10, 2);
    screen.max_behind = 64;
    screen.feed(b"first\r\n");
    screen.catch_up();
    screen.begin_recording();
    for n in 0..20 {
        screen.feed(format!("flood {n:02}\r\n").as_bytes());
    }
    let turn = screen.finish_recording();
    assert!(screen.skipped() > 0);
    assert!(!turn.lines.contains(&"flood 00".to_owned()));
    assert!(
        turn.lines.contains(&"flood 19".to_owned()),
        "{:?}",
        turn.lines
    );
}

#[test]
fn output_rendered_in_steps_while_more_comes_reads_as_output_rendered_at_once() {
    // Steps smaller than what is fed leave output waiting while more comes: the waiting bytes
    // wrap around their ring, and are rendered in two pieces.
    let text: String = (0..200)
        .map(|n| format!("line {n:03} \x1b[1mbold\x1b[0m é\r\n"))
        .collect();
    let mut whole = Screen::new(30, 5);
    whole.feed(text.as_bytes());
    whole.catch_up();
    let mut stepped = Screen::new(30, 5);
    for piece in text.as_bytes().chunks(37) {
        stepped.feed(piece);
        stepped.catch_up_step(29);
    }
    stepped.catch_up();
    assert_eq!(stepped.snapshot(300), whole.snapshot(300));
    assert_eq!(stepped.skipped(), 0);
}

#[test]
fn a_screen_that_loses_rows_keeps_what_is_drawn_at_the_bottom() {
    // A TUI's live area: reply lines, its input box with the cursor in it, a footer under it.
    let mut screen = fed(
        20,
        6,
        b"one\r\ntwo\r\nthree\r\nfour\r\n> \r\nfooter\x1b[5;3H",
    );
    screen.resize(20, 4);
    let shown = screen.snapshot(2);
    // As xterm and tmux do: the top rows scroll into history, the input box and footer stay.
    assert_eq!(shown.lines, ["one", "two", "three", "four", ">", "footer"]);
    assert_eq!(shown.history, 2);
    assert_eq!(shown.cursor, (2, 2), "the cursor stays in the input box");
    // Blank rows under the cursor are what goes first.
    let mut screen = fed(20, 6, b"one\r\ntwo\r\n> \x1b[3;3H");
    screen.resize(20, 4);
    assert_eq!(screen.snapshot(2).lines, ["one", "two", ">", ""]);
}

/// A live area drawn in place as Ink's log-update does it: erased from the cursor upwards
/// (`ESC [ 2 K`, then a cursor-up before each further row), then drawn again from there.
fn erase_up(rows: usize) -> String {
    let mut out = "\x1b[2K".to_owned();
    for _ in 1..rows {
        out.push_str("\x1b[1A\x1b[2K");
    }
    out.push_str("\x1b[G");
    out
}

#[test]
fn rows_erased_above_a_live_area_and_not_drawn_again_stay_in_the_recording() {
    let mut screen = fed(30, 12, b"> question\r\n");
    screen.begin_recording();
    // The reply, then the live area (status, input box, footer), the cursor left in the input
    // box a row above the area's foot.
    screen.feed(
        b"a1\r\na2\r\na3\r\na4\r\n\r\nend\r\n\r\nstatus 1\r\n> input\r\nfooter\x1b[1A\x1b[4G",
    );
    // The program erases its area from the cursor, not from its foot: a3, a4 and the blank
    // under them go, the area is drawn where they were, the old footer stays under it.
    screen.feed(erase_up(7).as_bytes());
    screen.feed(b"end\r\n\r\nstatus 2\r\n> input\r\nfooter");
    let shown = screen.snapshot(0).lines;
    let drawn = [
        "end", "", "status 2", "> input", "footer", "", "", "footer", "",
    ];
    assert_eq!(shown[..3], ["> question", "a1", "a2"]);
    assert_eq!(shown[3..], drawn);
    let turn = screen.finish_recording();
    assert_eq!(turn.lines[..6], ["> question", "a1", "a2", "a3", "a4", ""]);
    assert_eq!(turn.lines[6..], drawn);
}

#[test]
fn a_live_area_erased_from_its_foot_and_drawn_again_is_left_as_drawn() {
    let mut screen = fed(30, 12, b"> question\r\n");
    screen.begin_recording();
    screen.feed(b"a1\r\na2\r\n\r\ndialog: allow?\r\n1. yes\r\n2. no\r\n\r\n> input\r\nfooter");
    // The dialog closes: the whole area is erased from its foot and drawn smaller.
    screen.feed(erase_up(7).as_bytes());
    screen.feed(b"\r\n> input\r\nfooter");
    let shown = screen.snapshot(0).lines;
    assert!(!shown.iter().any(|line| line.contains("yes")));
    assert_eq!(screen.finish_recording().lines, shown);
}

#[test]
fn lines_erased_at_the_seam_come_back_even_when_an_older_reply_had_them() {
    // The transcript above holds an older reply with the same lines (Gemini CLI reprints its
    // whole transcript): the seam, not the text, says where they are missing.
    let mut screen = fed(30, 16, b"a1\r\na2\r\na3\r\na4\r\n> question\r\n");
    screen.begin_recording();
    screen.feed(
        b"a1\r\na2\r\na3\r\na4\r\n\r\nend\r\n\r\nstatus 1\r\n> input\r\nfooter\x1b[1A\x1b[4G",
    );
    screen.feed(erase_up(7).as_bytes());
    screen.feed(b"end\r\n\r\nstatus 2\r\n> input\r\nfooter");
    let turn = screen.finish_recording();
    assert_eq!(
        turn.lines[..11],
        [
            "a1",
            "a2",
            "a3",
            "a4",
            "> question",
            "a1",
            "a2",
            "a3",
            "a4",
            "",
            "end"
        ]
    );
}
