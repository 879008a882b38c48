//! The text view of a turn: the lines the agent added to its terminal's history and screen
//! between the submitted input and the turn's end, as they stand at the end.
//!
//! The detector keeps one live screen ([`clippy_screen::Screen`]) fed every output byte and
//! records each turn on it; here the recorded lines become the reply. Old transcript at the
//! head — the lines that were on screen when the input was submitted and scrolled on, or that
//! a TUI reprinted after clearing its history — is found against the lines before the turn, in
//! order; the agent's input area at the foot (its prompt line and everything under it) is cut;
//! what remains loses the agent's chrome (prompt, busy and status lines, box rules) and the
//! echo of the input.

use std::borrow::Cow;

use clippy_screen::Recorded;

use crate::detector::{is_bare_input, is_echo};
use crate::preset::Preset;

/// Renders what a turn's recording saw as the text a person read. `inputs` are the lines whose
/// echo is not the reply: the turn's own (the first `own`), then the lines typed ahead while it
/// ran. `keys_typed` says whether the user typed while the agent worked (a question typed
/// ahead, Ctrl+C). `input_row`, for a turn that ended
/// because the screen went still, is the agent's input row at the end: it and what is under it
/// are cut. `stopped`: the agent stopped the turn itself (the preset's `stopped_line`), which
/// ends the text.
pub(crate) fn render(
    recorded: &Recorded,
    inputs: &[String],
    own: usize,
    preset: &Preset,
    keys_typed: bool,
    input_row: Option<&str>,
    stopped: bool,
) -> String {
    let lines = &recorded.lines;
    let start = after_the_echo(lines, inputs).unwrap_or_else(|| old_head(lines, &recorded.before));
    let mut end = lines.len();
    if let Some(cut) = input_row.and_then(|row| input_area(lines, start, row)) {
        end = cut;
    }
    // A turn the agent stopped itself ends with the line that says so: under it are the dialog
    // it took down (its rows not yet drawn over when the prompt began) and the prompt.
    if stopped
        && let Some(line) = preset.stopped_line()
        && let Some(at) = (start..end)
            .rev()
            .find(|&i| line.is_match(lines[i].as_bytes()))
    {
        end = at + 1;
    }
    // A TUI keeps its input area (prompt line, status, footer) under the reply: cut from its
    // prompt line down. Shells and REPLs have not drawn their next prompt when the turn ends.
    if preset.osc_idle().is_some() {
        if let Some(first) = (start..end).find(|&i| keep_line(&lines[i], inputs, own, preset)) {
            // Its prompt line (the last one: the reply may quote the agent's own prompt), or
            // without one its first footer line under the last text.
            let prompt = (first + 1..end)
                .rev()
                .find(|&i| is_prompt(&lines[i], preset));
            let footer = || {
                let last_text = (first..end)
                    .rev()
                    .find(|&i| !is_input_area(&lines[i], preset) && !lines[i].trim().is_empty())?;
                (last_text + 1..end).find(|&i| is_input_area(&lines[i], preset))
            };
            if let Some(cut) = prompt.or_else(footer) {
                end = cut;
            }
        }
    }
    let typed_ahead = inputs.get(own..).unwrap_or_default();
    let shell = preset.osc_idle().is_none();
    let mut region = Cow::Borrowed(&lines[start..end]);
    if shell {
        // A live redraw pads each row to the width: what it drew behind an echo overflowed the
        // row (0, unknown: nothing is taken for that).
        let wider_than = preset
            .redraws_live_lines()
            .then_some(usize::from(recorded.cols));
        cut_glued_echoes(&mut region, typed_ahead, wider_than);
    }
    let region: &[String] = &region;
    // A shell's or REPL's terminal echoed each line typed ahead once; the same line bare again is
    // the program's (`cat` printing what it read). (A TUI may draw a queued question again.)
    let mut echoes: Vec<&str> = typed_ahead.iter().map(|input| input.trim()).collect();
    let mut keep: Vec<bool> = region
        .iter()
        .map(|line| {
            let bare = line.trim();
            if shell && !bare.is_empty() && !is_bare_input(bare, &inputs[..own.min(inputs.len())]) {
                if let Some(at) = echoes.iter().position(|echo| *echo == bare) {
                    echoes.swap_remove(at);
                    return false;
                }
                if is_bare_input(bare, typed_ahead) {
                    return true;
                }
            }
            keep_line(line, inputs, own, preset)
        })
        .collect();
    drop_wrapped_chrome(region, &mut keep, preset, recorded.cols);
    let text = |i: usize| keep[i] && !region[i].trim().is_empty();
    let mut kept: Vec<&str> = Vec::new();
    for (i, line) in region.iter().enumerate() {
        // A table's rules stay: its borders have junctions, and a rule between two rows of
        // text is a row separator (a TUI's own rules have its chrome or a blank line beside).
        let table_rule = is_rule(line)
            && !is_chrome(line, preset)
            && (line.contains(TABLE_JUNCTIONS)
                || (i > 0 && text(i - 1) && i + 1 < region.len() && text(i + 1)));
        if keep[i] || table_rule {
            kept.push(line);
        } else if !line.trim().is_empty() && !is_bare_input(line, typed_ahead) {
            // A dropped line with text separates paragraphs like a blank one would (not the
            // terminal's echo of a line typed ahead, which only interrupted the output).
            kept.push("");
        }
    }
    if keys_typed && preset.redraws_live_lines() {
        drop_stale_copies(&mut kept, inputs.get(1..).unwrap_or_default());
    }
    drop_trailer(
        &mut kept,
        &recorded.kept_under,
        &recorded.shown,
        &recorded.before,
    );
    tidy(&kept)
}

/// Cuts the terminal's echo of a line typed ahead from the head of a row of output it was glued
/// to. In cooked mode the kernel echoes typed keys where the cursor stands, and a program that
/// writes on before the Enter (which the kernel echoes as a line break) continues that row
/// right behind the echo (`echo second-42first-21`; aider's `what is the largest
/// planetHere are the numbered lines:`, its live line padded to the width and wrapped). The
/// kernel echoes each line once: a line typed ahead whose echo stands bare on a row of its own
/// (Enter came first) was not glued, and a glued one is cut once, from the first row that
/// begins with it and goes on. With `wider_than`, a program that redraws its live rows padded
/// to the width (`redraws_live_lines`): only a line wider than that is output drawn behind
/// the echo; a narrower one is a row the echo was drawn over, the rest of it older (the tail
/// of aider's `Waiting for openai/mock-model` spinner), and is left as it is.
fn cut_glued_echoes(
    region: &mut Cow<'_, [String]>,
    typed_ahead: &[String],
    wider_than: Option<usize>,
) {
    for input in typed_ahead.iter().map(|input| input.trim()) {
        if input.is_empty() || region.iter().any(|line| line.trim() == input) {
            continue;
        }
        let glued = region.iter().position(|line| {
            line.trim_start()
                .strip_prefix(input)
                .is_some_and(|rest| !rest.trim().is_empty())
                && wider_than.is_none_or(|cols| cols > 0 && line.chars().count() > cols)
        });
        if let Some(at) = glued {
            let line = &mut region.to_mut()[at];
            let head = line.len() - line.trim_start().len();
            line.replace_range(..head + input.len(), "");
        }
    }
}

/// Drops the agent's trailer from the foot of the text: the last lines that the agent kept
/// under the reply while it streamed in above them (pushed down or held in place), as they
/// are now or with more after them (OpenCode's `▣ Build · Model` becomes `▣ Build · Model ·
/// 4.6s` when the reply ends); and the last lines that are a row the screen showed during the
/// turn with an elapsed time added behind a separator (` · 4.6s`, `, 1m 3s`): a status line
/// that stops its timer when the reply ends, however the view moved meanwhile. A rule is never
/// one (a table's bottom border is pushed down by each row added above it), nor is a line
/// shorter than [`MIN_TRAILER_CHARS`]. A line that was on screen already when the turn began
/// (`before`) is not one for having been kept under: that is old transcript the frames saw held
/// in place (the previous reply's closing line, left where it was by the repaint after a
/// resize), and a reply may end with the same line again.
fn drop_trailer(kept: &mut Vec<&str>, kept_under: &[String], shown: &[String], before: &[String]) {
    let trailer = |line: &str| {
        let line = line.trim();
        let long = |under: &&str| under.chars().count() >= MIN_TRAILER_CHARS;
        !is_rule(line)
            && (kept_under
                .iter()
                .map(|under| under.trim())
                .filter(long)
                .filter(|under| !before.iter().any(|old| old.trim() == *under))
                .any(|under| line.starts_with(under))
                || shown
                    .iter()
                    .map(|row| row.trim())
                    .filter(long)
                    .any(|row| line.strip_prefix(row).is_some_and(is_elapsed_time)))
    };
    while let Some(last) = kept.iter().rposition(|line| !line.trim().is_empty()) {
        if !trailer(kept[last]) {
            break;
        }
        kept.truncate(last);
    }
}

/// The shortest line taken for a trailer: a lone decoration (`┃`) is not one.
const MIN_TRAILER_CHARS: usize = 4;

/// Whether `rest` is an elapsed time behind a separator, as a status line adds it when its
/// timer stops: ` · 4.6s`, ` | 320ms`, `, 1m 3s`, ` - 2h 5m`.
fn is_elapsed_time(rest: &str) -> bool {
    let Some(time) = rest
        .trim_start()
        .strip_prefix(['·', '•', '|', ',', '-', '–', '—'])
    else {
        return false;
    };
    let mut parts = time.split_whitespace().peekable();
    parts.peek().is_some()
        && parts.all(|part| {
            let digits = part.trim_end_matches(|c: char| c.is_ascii_alphabetic());
            let unit = &part[digits.len()..];
            !digits.is_empty()
                && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
                && digits.starts_with(|c: char| c.is_ascii_digit())
                && ["ms", "s", "m", "h", "min"].contains(&unit)
        })
}

/// Drops the rest of a chrome line the agent wrapped itself at the screen's edge (Claude Code's
/// `⎿  Tip: …` over two rows, a status or hint line longer than the width): a line right under
/// it that starts where its text starts (the hanging indent under its bullet) and whose first
/// word would not have fitted on it. The screen's layout says so, whatever the words; `cols`
/// 0 (unknown) drops nothing.
fn drop_wrapped_chrome(region: &[String], keep: &mut [bool], preset: &Preset, cols: u16) {
    if cols == 0 {
        return;
    }
    let width = |text: &str| text.chars().count();
    let mut hanging: Option<usize> = None;
    for (i, line) in region.iter().enumerate() {
        let trimmed = line.trim_end();
        if trimmed.trim().is_empty() {
            hanging = None;
            continue;
        }
        let indent = width(trimmed) - width(trimmed.trim_start());
        if let Some(text_at) = hanging
            && keep[i]
            && indent == text_at
            && i > 0
        {
            let above = width(region[i - 1].trim_end());
            let word = trimmed.split_whitespace().next().map_or(0, width);
            if above + 1 + word > usize::from(cols) {
                keep[i] = false;
                continue;
            }
        }
        hanging = (!keep[i] && is_chrome(line, preset)).then(|| {
            // Where the text begins: after the indent and the bullet (`⎿  `, `✻ `, `❯ `).
            trimmed
                .char_indices()
                .find(|&(_, c)| c.is_alphanumeric())
                .map_or(indent, |(at, _)| width(&trimmed[..at]))
        });
    }
}

/// Where the input area at the foot of `lines` begins, for an agent whose input row at the
/// end is `row`: its last copy, with the box rules and blank rows right above it (the input
/// box's top border). None when that is not under the reply's first line.
fn input_area(lines: &[String], start: usize, row: &str) -> Option<usize> {
    let row = row.trim_end();
    let mut cut = lines.iter().rposition(|line| line.trim_end() == row)?;
    while cut > start
        && (lines[cut - 1].trim().is_empty()
            || is_rule(&lines[cut - 1])
            || is_labelled_rule(&lines[cut - 1]))
    {
        cut -= 1;
    }
    (cut > start).then_some(cut)
}

/// Drops the copies a live redraw left behind when echoed keys shifted it: a line whose text
/// a later line repeats or continues (`Slow line 3: one two` before `Slow line 3: one two
/// three.`). A row that wrapped where an echoed key overflowed it holds several such copies,
/// each padded to the width: it goes when every one of them is stale, and otherwise keeps its
/// text from the first copy that neither a later line nor a later copy on it repeats (rich's
/// first live line drawn behind a glued echo, then again on the row it wrapped to). A line
/// that begins with a question typed ahead (`typed`), or is a piece of one, is its echo, drawn
/// over whatever the row held.
fn drop_stale_copies<'a>(lines: &mut Vec<&'a str>, typed: &[String]) {
    lines.retain(|line| {
        let line = line.trim();
        line.is_empty()
            || !typed
                .iter()
                .map(|input| input.trim())
                .any(|input| !input.is_empty() && (line.starts_with(input) || input.contains(line)))
    });
    let mut later: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    let mut stale = vec![false; lines.len()];
    for (i, line) in lines.iter_mut().enumerate().rev() {
        let row: &'a str = line;
        // Each copy with where it begins in the row.
        let mut from = 0;
        let mut copies: Vec<(usize, &'a str)> = Vec::new();
        for piece in row.split(PADDING) {
            let copy = piece.trim().trim_end_matches("^C").trim_end();
            let piece_at = from;
            from += piece.len() + PADDING.len();
            if !copy.is_empty() {
                copies.push((piece_at + piece.find(copy).unwrap_or(0), copy));
            }
        }
        let repeated = |copy: &str| {
            later
                .range(copy..)
                .next()
                .is_some_and(|next: &&str| next.starts_with(copy))
        };
        stale[i] = !copies.is_empty() && copies.iter().all(|(_, copy)| repeated(copy));
        // Copies at the row's head that a later copy on the same row repeats are the redraw's
        // too: the row keeps its text from the first copy that is not.
        if !stale[i]
            && let Some(first) = copies.iter().enumerate().position(|(n, (_, copy))| {
                !repeated(copy)
                    && !copies[n + 1..]
                        .iter()
                        .any(|(_, next)| next.starts_with(copy))
            })
            && first > 0
        {
            *line = &row[copies[first].0..];
        }
        let kept: &'a str = line;
        let text = kept.trim();
        if !text.is_empty() {
            later.insert(text);
        }
    }
    let mut i = 0;
    lines.retain(|_| {
        i += 1;
        !stale[i - 1]
    });
}

/// The blank run a live redraw pads each row with: longer than any gap inside a line of text.
const PADDING: &str = "                ";

/// Box-drawing junctions: a rule with one of these is a table's border, not a TUI's rule.
const TABLE_JUNCTIONS: &[char] = &[
    '┌', '┬', '┐', '├', '┼', '┤', '└', '┴', '┘', '┏', '┳', '┓', '┣', '╋', '┫', '┗', '┻', '┛', '╞',
    '╪', '╡', '╔', '╦', '╗', '╠', '╬', '╣', '╚', '╩', '╝', '┡', '╇', '┩',
];

/// Whether a line is drawn with box-drawing and block characters only (a rule or border).
pub(crate) fn is_rule(line: &str) -> bool {
    let trimmed = line.trim();
    !trimmed.is_empty()
        && trimmed
            .chars()
            .all(|c| c.is_whitespace() || ('\u{2500}'..='\u{259f}').contains(&c))
}

/// Whether a line is a rule with a short label set in it, as an input box's top border often
/// is (`──── accept edits ─`, `─ Input ──────`): it begins and ends with box-drawing lines, a
/// run of at least three at one end, and those are at least half of its characters.
pub(crate) fn is_labelled_rule(line: &str) -> bool {
    let trimmed = line.trim();
    let rule = |c: char| ('\u{2500}'..='\u{257f}').contains(&c);
    let (Some(first), Some(last)) = (trimmed.chars().next(), trimmed.chars().next_back()) else {
        return false;
    };
    let run = |chars: &mut dyn Iterator<Item = char>| chars.take_while(|&c| rule(c)).count();
    let total = trimmed.chars().filter(|c| !c.is_whitespace()).count();
    let drawn = trimmed.chars().filter(|&c| rule(c)).count();
    rule(first)
        && rule(last)
        && (run(&mut trimmed.chars()) >= 3 || run(&mut trimmed.chars().rev()) >= 3)
        && drawn * 2 >= total
}

/// Whether a line is one of the preset's prompt, busy or status lines.
fn is_chrome(line: &str, preset: &Preset) -> bool {
    let bytes = line.as_bytes();
    preset.prompt().is_some_and(|p| p.is_match(bytes))
        || preset.busy_line().is_some_and(|b| b.is_match(bytes))
        || preset.chrome().is_some_and(|c| c.is_match(bytes))
}

/// How many lines at the head of `lines` are old transcript: each one found in `before` after
/// the one matched last (blank lines pass). Order matters, so an answer that repeats an older
/// line is still new. A few rows the submit itself changed (a TUI's input box emptied to its
/// placeholder as it takes the question) are old too when the view under them goes on as it
/// was: the next [`RESUMED`] lines with text are `before`'s, in order.
fn old_head(lines: &[String], before: &[String]) -> usize {
    let found = |from: usize, line: &str| before[from..].iter().position(|b| b.trim() == line);
    // The old view goes on at `lines[at..]` from `before[from..]`.
    let resumes = |at: usize, mut from: usize| {
        let text = lines[at..]
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty());
        let mut matched = 0;
        for line in text.take(RESUMED) {
            let Some(found_at) = found(from, line) else {
                return false;
            };
            from += found_at + 1;
            matched += 1;
        }
        matched == RESUMED
    };
    let mut from = 0;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if line.is_empty() {
            i += 1;
            continue;
        }
        if let Some(at) = found(from, line) {
            from += at + 1;
            i += 1;
            continue;
        }
        match (i + 1..lines.len().min(i + 1 + MAX_CHANGED_ROWS)).find(|&next| resumes(next, from)) {
            Some(next) => i = next,
            None => return i,
        }
    }
    lines.len()
}

/// How many rows of an old view the submit may have changed (the input box's rows).
const MAX_CHANGED_ROWS: usize = 3;
/// How many lines with text after them say the old view goes on.
const RESUMED: usize = 2;

/// Where the reply begins when the agent echoed the turn's (first) input with its prompt or
/// bullet: under its last echo. Lines above it are old transcript even when `before` lacks them
/// (a TUI redrawn taller after a resize, or repainted a row higher, shows more of it), and lines
/// under it are new even when `before` has them (the same answer to the same question).
///
/// The echo is a block however the question was entered: its first line behind the prompt
/// (`❯ `, `› `, `│ > `, `$ `), the rest of a question of several lines (pasted) on the lines
/// under it, indented or behind a decoration of their own, the agent's wrapping of long lines
/// anywhere, and a placeholder the agent shows for pasted text (`[Pasted text #1 +3 lines]`)
/// standing for any part of it.
fn after_the_echo(lines: &[String], inputs: &[String]) -> Option<usize> {
    let first = inputs.first()?;
    let input: String = first.chars().filter(|c| !c.is_whitespace()).collect();
    if input.is_empty() {
        return None;
    }
    (0..lines.len())
        .rev()
        .find_map(|at| echo_block(lines, at, &input))
}

/// The end of the echo of `input` (without white space) that begins at `lines[at]`, if one does:
/// the line is the input's head behind a short decoration, and the lines under it (blank ones
/// aside) carry the rest.
fn echo_block(lines: &[String], at: usize, input: &str) -> Option<usize> {
    let line = lines[at].trim_matches(|c: char| c.is_whitespace() || BORDERS.contains(c));
    let first = input.chars().next()?;
    // A box's border is a decoration of its own (OpenCode's `┃  question`).
    let boxed = lines[at]
        .trim_start()
        .starts_with(|c: char| BORDERS.contains(c));
    // Cheap first: the head begins as the input does, or with a placeholder.
    let mut heads = boxed
        .then_some(line)
        .into_iter()
        .chain(behind_decoration(line))
        .filter(|head| {
            let head = head.trim_start();
            head.starts_with(first) || head.starts_with('[')
        });
    heads.find_map(|head| {
        let mut echo = without_blanks(head);
        let mut end = match echo_matches(&echo, input)? {
            true => return Some(at + 1),
            false => None,
        };
        for (i, next) in lines.iter().enumerate().skip(at + 1) {
            let next = next.trim_matches(|c: char| c.is_whitespace() || BORDERS.contains(c));
            if next.is_empty() {
                continue;
            }
            // The rest as it stands, or behind a continuation prompt (`> `, `... `).
            let extended = std::iter::once(next)
                .chain(behind_decoration(next))
                .map(|rest| echo.clone() + &without_blanks(rest))
                .find_map(|longer| echo_matches(&longer, input).map(|done| (longer, done)));
            let Some((longer, done)) = extended else {
                break;
            };
            echo = longer;
            if done {
                end = Some(i + 1);
                break;
            }
        }
        end
    })
}

/// The box borders a TUI draws around its input (`│ > question │`).
const BORDERS: &str = "│┃|";

/// What follows each short decoration `line` may begin with (at most 12 characters, the last
/// one not a letter or digit: `❯ `, `› `, `> `, `$ `, `root@box:~# `), longest first.
fn behind_decoration(line: &str) -> impl Iterator<Item = &str> {
    let mut count = 0;
    let mut splits: Vec<&str> = Vec::new();
    for (at, c) in line.char_indices() {
        if !c.is_whitespace() {
            count += 1;
        }
        if count > 12 {
            break;
        }
        let (decoration, rest) = line.split_at(at + c.len_utf8());
        if !decoration.trim().is_empty() && !c.is_alphanumeric() && !rest.trim().is_empty() {
            splits.push(rest);
        }
    }
    splits.into_iter().rev()
}

/// The placeholder stands for pasted text (Claude Code `[Pasted text #1 +3 lines]`, Codex
/// `[Pasted Content 900 chars]`): any part of the input.
const PLACEHOLDER: char = '\0';

/// `text` without white space, each pasted-text placeholder as [`PLACEHOLDER`].
fn without_blanks(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('[') {
        let (before, from) = rest.split_at(at);
        out.extend(before.chars().filter(|c| !c.is_whitespace()));
        let close = from.find(']');
        match close.filter(|_| {
            from.get(1..7)
                .is_some_and(|w| w.eq_ignore_ascii_case("pasted"))
        }) {
            Some(close) => {
                out.push(PLACEHOLDER);
                rest = &from[close + 1..];
            }
            None => {
                out.push('[');
                rest = &from[1..];
            }
        }
    }
    out.extend(rest.chars().filter(|c| !c.is_whitespace()));
    out
}

/// Whether `echo` (without white space, placeholders as [`PLACEHOLDER`]) can be the echo of
/// `input`: `None` when it cannot, `Some(true)` when it is all of it, `Some(false)` when more
/// lines may complete it.
fn echo_matches(echo: &str, input: &str) -> Option<bool> {
    let mut pieces = echo.split(PLACEHOLDER);
    let head = pieces.next().unwrap_or_default();
    let mut rest = input.strip_prefix(head)?;
    let mut wild = false;
    for piece in pieces {
        wild = true;
        if piece.is_empty() {
            continue;
        }
        // A placeholder stands for at least one character.
        let at = rest
            .char_indices()
            .skip(1)
            .map(|(at, _)| at)
            .find(|&at| rest[at..].starts_with(piece))?;
        rest = &rest[at + piece.len()..];
    }
    Some(rest.is_empty() || (wild && echo.ends_with(PLACEHOLDER)))
}

/// Whether a line is a TUI's prompt line.
fn is_prompt(line: &str, preset: &Preset) -> bool {
    preset.prompt().is_some_and(|p| p.is_match(line.as_bytes()))
}

/// Whether a line is where a TUI's input area begins: its prompt line, or a status line.
fn is_input_area(line: &str, preset: &Preset) -> bool {
    is_prompt(line, preset) || preset.chrome().is_some_and(|c| c.is_match(line.as_bytes()))
}

/// Whether a line belongs to the reply (and not to the agent's chrome or the input's echo).
/// Only the turn's own inputs (the first `own`) can come back bare as an answer: a line typed
/// ahead shows bare where the terminal echoed it.
fn keep_line(line: &str, inputs: &[String], own: usize, preset: &Preset) -> bool {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return true;
    }
    let chrome = is_chrome(line, preset)
        || is_rule(line)
        || trimmed.trim_start_matches("^C").trim().is_empty()
        || prompt_and_input(line, inputs, preset);
    // A line that is the bare input is the answer of a shell or REPL (evaluating a literal); a
    // decorated one is the echo, and so is any in a TUI (a question typed ahead, shown queued).
    let tui = preset.osc_idle().is_some();
    let answer = !tui && is_bare_input(line, &inputs[..own.min(inputs.len())]);
    !chrome && (answer || !is_echo(line, inputs))
}

/// Whether a line is the agent's prompt with one of `inputs` after it (a shell's
/// `root@box:~# ls`, whatever the prompt's length).
fn prompt_and_input(line: &str, inputs: &[String], preset: &Preset) -> bool {
    let Some(prompt) = preset.prompt() else {
        return false;
    };
    let line = line.trim_end();
    inputs.iter().any(|input| {
        let input = input.trim();
        !input.is_empty()
            && line
                .strip_suffix(input)
                .is_some_and(|before| prompt.is_match(before.as_bytes()))
    })
}

/// Joins lines, trailing spaces trimmed, blank lines at both ends removed and runs of blank
/// lines folded into one.
fn tidy(lines: &[&str]) -> String {
    let mut out = String::new();
    let mut blank_run = false;
    for line in lines {
        if line.trim().is_empty() {
            blank_run = !out.is_empty();
            continue;
        }
        if blank_run {
            out.push('\n');
            blank_run = false;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        push_as_pasted(&mut out, line.trim_end());
    }
    out
}

/// Appends `line` as a person would paste it from the terminal: the spacing characters a
/// terminal shows as a blank cell (U+00A0 no-break space, the en/em/thin spaces U+2000–U+200A,
/// U+202F, U+205F) become plain spaces, so that the text can be searched and pasted as it reads
/// (Claude Code puts U+00A0 after its list numbers and in its input box). The raw content and
/// the agent's message keep the agent's bytes.
fn push_as_pasted(out: &mut String, line: &str) {
    out.extend(
        line.chars()
            .map(|c| if is_shown_as_space(c) { ' ' } else { c }),
    );
}

/// `line` as a person would paste it (see [`push_as_pasted`]).
pub(crate) fn as_pasted(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    push_as_pasted(&mut out, line);
    out
}

/// Whether `c` is a spacing character a terminal draws as one blank cell.
fn is_shown_as_space(c: char) -> bool {
    matches!(
        c,
        '\u{a0}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(before: &[&str], lines: &[&str]) -> Recorded {
        Recorded {
            before: before.iter().map(|l| (*l).to_owned()).collect(),
            lines: lines.iter().map(|l| (*l).to_owned()).collect(),
            ..Recorded::default()
        }
    }

    #[test]
    fn an_input_box_whose_top_border_carries_a_label_is_cut_with_it() {
        // A full-screen agent at rest: its input box's top border names a mode.
        let generic = Preset::named("generic").expect("preset");
        let inputs = ["hello".to_owned()];
        let turn = recorded(
            &["Banner v1", "─────────── accept edits ─", ">"],
            &[
                "Banner v1",
                "> hello",
                "────────────────────────────",
                "",
                "  Hi there.",
                "",
                "─────────── accept edits ─",
                ">",
                "",
                "────────────────────────────",
                "/work              0 tokens",
            ],
        );
        assert_eq!(
            render(&turn, &inputs, 1, &generic, false, Some(">"), false),
            "  Hi there."
        );
        for border in [
            "──────────────── accept edits ─",
            "─ Input ──────────",
            "╭─── chat ───╮",
        ] {
            assert!(is_labelled_rule(border), "{border:?}");
        }
        for line in [
            "─ a note on the reply ─",
            "── x",
            "Rules ───",
            "│ bash │ 1989 │",
        ] {
            assert!(!is_labelled_rule(line), "{line:?}");
        }
    }

    #[test]
    fn old_transcript_is_found_in_order_so_a_repeated_answer_is_new() {
        let python = Preset::named("python").expect("preset");
        let inputs = ["2".to_owned()];
        let turn = recorded(
            &[">>> 2", "2", ">>> 2"],
            &[">>> 2", "2", ">>> 2", "2", ">>>"],
        );
        assert_eq!(render(&turn, &inputs, 1, &python, false, None, false), "2");
    }

    #[test]
    fn a_status_line_shown_during_the_turn_that_got_its_time_at_the_end_is_cut_from_the_foot() {
        let generic = Preset::named("generic").expect("preset");
        let inputs = ["q".to_owned()];
        let mut turn = recorded(
            &[],
            &["┃ q", "", "one", "Done in", "", "▣ Build · Model · 4.6s"],
        );
        turn.shown = ["┃ q", "▣ Build · Model", "on", "one", "Done", "Done in"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(
            render(&turn, &inputs, 1, &generic, false, None, false),
            "one\nDone in"
        );
        // Words added to a row (the reply's last line streaming in) are no elapsed time, and
        // neither is a number without its unit or a time without a separator.
        for (last, before) in [
            ("Done in 5s", "Done in"),
            ("Total · 42", "Total"),
            ("Took 1m 3s", "Took"),
            ("Next · 3 steps", "Next"),
        ] {
            let mut turn = recorded(&[], &["┃ q", "", "one", last]);
            turn.shown = vec![before.to_owned()];
            assert_eq!(
                render(&turn, &inputs, 1, &generic, false, None, false),
                format!("one\n{last}")
            );
        }
        for rest in [" · 4.6s", " | 320ms", ", 1m 3s", " - 2h 5m", " · 12s"] {
            assert!(is_elapsed_time(rest), "{rest:?}");
        }
        for rest in ["", " 4.6s", " · ", " · s", " · 4.6 seconds left", " · .5s"] {
            assert!(!is_elapsed_time(rest), "{rest:?}");
        }
    }

    #[test]
    fn a_trailer_the_reply_kept_under_is_cut_from_its_foot_but_a_tables_border_stays() {
        let generic = Preset::named("generic").expect("preset");
        let inputs = ["q".to_owned()];
        let mut turn = recorded(
            &[],
            &["┃ q", "", "one", "└──┴──┘", "", "▣ Build · Model · 4.6s"],
        );
        turn.kept_under = vec!["└──┴──┘".to_owned(), "▣ Build · Model".to_owned()];
        assert_eq!(
            render(&turn, &inputs, 1, &generic, false, None, false),
            "one\n└──┴──┘"
        );
        // A line pushed down that the reply's own text then follows is the reply's.
        let mut turn = recorded(&[], &["┃ q", "", "▣ Build · Model", "one"]);
        turn.kept_under = vec!["▣ Build · Model".to_owned()];
        assert_eq!(
            render(&turn, &inputs, 1, &generic, false, None, false),
            "▣ Build · Model\none"
        );
    }

    #[test]
    fn a_closing_line_held_in_place_from_the_previous_reply_is_no_trailer_of_the_next() {
        // Codex 0.169.0, the same 80-line reply twice, the window resized during the second:
        // the repaint left the first reply's closing line where it was while the view
        // scrolled, and the second reply ends with the same line.
        let codex = Preset::named("codex").expect("preset");
        let inputs = ["again".to_owned()];
        let mut turn = recorded(
            &["  1. one", "", "  That was all 1 lines.", "› again"],
            &["› again", "", "• 1. one", "", "  That was all 1 lines."],
        );
        turn.kept_under = vec!["  That was all 1 lines.".to_owned()];
        assert_eq!(
            render(&turn, &inputs, 1, &codex, false, None, false),
            "• 1. one\n\n  That was all 1 lines."
        );
    }

    #[test]
    fn an_echo_behind_a_boxs_border_alone_starts_the_reply() {
        // OpenCode: each question in a box of its own, the old ones still on screen, and a
        // frame that showed the old exchange twice.
        let generic = Preset::named("generic").expect("preset");
        let inputs = ["what is the largest planet".to_owned()];
        let old = ["  ┃  what is the capital", "", "     Paris.", ""];
        let mut lines: Vec<&str> = old.iter().chain(&old).copied().collect();
        lines.extend([
            "  ┃  what is the largest planet",
            "  ┃",
            "",
            "     Jupiter.",
        ]);
        let text = render(
            &recorded(&old, &lines),
            &inputs,
            1,
            &generic,
            false,
            None,
            false,
        );
        assert_eq!(text, "     Jupiter.");
    }

    #[test]
    fn an_old_view_whose_input_box_the_submit_emptied_is_old() {
        // A full-screen TUI's home view, its input box emptied to the placeholder as it took
        // the question, then its session view, the question's echo long scrolled away.
        let generic = Preset::named("generic").expect("preset");
        let inputs = ["write lines".to_owned()];
        let before = [
            "logo",
            "",
            "┃  write lines",
            "┃",
            "┃  Model",
            "╹▀▀▀",
            "hints",
        ];
        let lines = [
            "logo",
            "",
            "┃  Ask anything…",
            "┃",
            "┃  Model",
            "╹▀▀▀",
            "hints",
            "  69. line 69",
            "  70. line 70",
        ];
        let text = render(
            &recorded(&before, &lines),
            &inputs,
            1,
            &generic,
            false,
            None,
            false,
        );
        assert_eq!(text, "  69. line 69\n  70. line 70");
        // Without the old view going on under it, a changed row is the reply's.
        let lines = ["logo", "", "new answer", "line 70"];
        let text = render(
            &recorded(&before, &lines),
            &inputs,
            1,
            &generic,
            false,
            None,
            false,
        );
        assert_eq!(text, "new answer\nline 70");
    }

    #[test]
    fn a_tuis_input_area_and_footer_are_cut_and_a_reprint_is_old() {
        let codex = Preset::named("codex").expect("preset");
        let inputs = ["list".to_owned()];
        let before = [
            "› old question",
            "• old answer",
            "› list",
            "model · ~/dir · 100% left",
        ];
        let lines = [
            "› old question",
            "• old answer",
            "› list",
            "• item 1",
            "  item 2",
            "",
            "› Ask Codex to do anything",
            "",
            "model · ~/dir · 98% left",
        ];
        let text = render(
            &recorded(&before, &lines),
            &inputs,
            1,
            &codex,
            false,
            None,
            false,
        );
        assert_eq!(text, "• item 1\n  item 2");
    }

    #[test]
    fn chrome_lines_separate_paragraphs_and_box_rules_go() {
        let claude = Preset::named("claude").expect("preset");
        let inputs = ["q".to_owned()];
        let lines = [
            "❯ q",
            "● one",
            "✻ Churned for 1s",
            "two",
            "───",
            "❯",
            "───",
            "? for shortcuts",
        ];
        assert_eq!(
            render(
                &recorded(&["❯ q"], &lines),
                &inputs,
                1,
                &claude,
                false,
                None,
                false
            ),
            "● one\n\ntwo"
        );
    }

    #[test]
    fn a_question_typed_ahead_and_shown_queued_by_a_tui_is_echo() {
        let gemini = Preset::named("gemini").expect("preset");
        let inputs = ["q".to_owned(), "what is the largest planet".to_owned()];
        let lines = ["✦ answer", "", "    what is the largest planet"];
        assert_eq!(
            render(
                &recorded(&[], &lines),
                &inputs,
                1,
                &gemini,
                true,
                None,
                false
            ),
            "✦ answer"
        );
    }

    #[test]
    fn a_pasted_question_of_several_lines_is_echo_in_every_agents_style() {
        let question = "Translate these notes into French:\nred apple\nfresh bread\ncold milk";
        let inputs = [question.to_owned()];
        let reply = ["", "● pomme rouge", "  pain frais"];
        let cases: [(&str, &[&str]); 6] = [
            // Claude Code: the block behind `❯`, its lines indented.
            (
                "claude",
                &[
                    "❯ Translate these notes into French:",
                    "  red apple",
                    "  fresh bread",
                    "  cold milk",
                ],
            ),
            // Gemini CLI: in its box, a blank line inside the paste.
            (
                "gemini",
                &[
                    "│ > Translate these notes into French:   │",
                    "│   red apple                            │",
                    "│                                        │",
                    "│   fresh bread                          │",
                    "│   cold milk                            │",
                ],
            ),
            // aider: each line behind its prompt.
            (
                "aider",
                &[
                    "> Translate these notes into French:",
                    "> red apple",
                    "> fresh bread",
                    "> cold milk",
                ],
            ),
            // A placeholder for the pasted text.
            ("claude", &["❯ [Pasted text #1 +3 lines]"]),
            // Wrapped by the agent where its box ends.
            (
                "codex",
                &[
                    "› Translate these notes into",
                    "  French: red apple fresh",
                    "  bread cold milk",
                ],
            ),
            // Typed, then the rest pasted.
            (
                "claude",
                &["❯ Translate these notes into French:[Pasted text #2 +3 lines]"],
            ),
        ];
        for (agent, echo) in cases {
            let preset = Preset::named(agent).expect("preset");
            let lines: Vec<&str> = ["old answer", ""]
                .iter()
                .chain(echo)
                .chain(&reply)
                .copied()
                .collect();
            assert_eq!(
                render(
                    &recorded(&["old answer"], &lines),
                    &inputs,
                    1,
                    &preset,
                    false,
                    None,
                    false
                ),
                "● pomme rouge\n  pain frais",
                "{agent}: {echo:?}"
            );
        }
        // Pasted, then edited: the text typed around a placeholder is part of the echo.
        let edited = [format!("please {question} now")];
        let lines = [
            "❯ please [Pasted text #1 +3 lines] now",
            "",
            "● pomme rouge",
        ];
        let claude = Preset::named("claude").expect("preset");
        assert_eq!(
            render(
                &recorded(&[], &lines),
                &edited,
                1,
                &claude,
                false,
                None,
                false
            ),
            "● pomme rouge"
        );
    }

    #[test]
    fn a_reply_that_begins_as_the_question_did_is_not_its_echo() {
        let python = Preset::named("python").expect("preset");
        let inputs = ["print('a')\nprint('b')".to_owned()];
        // The echo's head and a reply line that does not go on with the rest.
        let lines = [">>> print('a')", "a", ">>> print('b')", "b"];
        assert_eq!(
            render(
                &recorded(&[], &lines),
                &inputs,
                1,
                &python,
                false,
                None,
                false
            ),
            ">>> print('a')\na\n>>> print('b')\nb"
        );
    }

    #[test]
    fn the_rest_of_a_chrome_line_wrapped_at_the_edge_is_chrome() {
        let claude = Preset::named("claude").expect("preset");
        let inputs = ["q".to_owned()];
        let tip = format!("  ⎿ \u{a0}Tip: {}", "word ".repeat(14).trim_end());
        assert_eq!(tip.chars().count(), 79);
        let lines = [
            "❯ q",
            "● Jupiter.",
            "",
            "✻ Crunched for 1s",
            &tip,
            "     and verify its suggested edits",
            "",
            "● More.",
            "  a line at the text's indent",
        ];
        let mut turn = recorded(&[], &lines);
        turn.cols = 80;
        assert_eq!(
            render(&turn, &inputs, 1, &claude, false, None, false),
            "● Jupiter.\n\n● More.\n  a line at the text's indent"
        );
        // A short chrome line ends where it ends: what follows is the reply's.
        let lines = ["❯ q", "✻ Crunched for 1s", "  1. one", "  2. two"];
        let mut turn = recorded(&[], &lines);
        turn.cols = 80;
        assert_eq!(
            render(&turn, &inputs, 1, &claude, false, None, false),
            "  1. one\n  2. two"
        );
    }

    #[test]
    fn spacing_characters_a_terminal_shows_as_blanks_become_spaces() {
        let claude = Preset::named("claude").expect("preset");
        let inputs = ["list".to_owned()];
        let lines = [
            "❯ list",
            "● Here:",
            "  1.\u{a0}part\u{a0}1",
            "  2.\u{2009}part\u{202f}2\u{205f}and\u{2003}more",
            "",
            "───",
            "❯\u{a0}",
            "───",
        ];
        assert_eq!(
            render(
                &recorded(&[], &lines),
                &inputs,
                1,
                &claude,
                false,
                None,
                false
            ),
            "● Here:\n  1. part 1\n  2. part 2 and more"
        );
    }

    #[test]
    fn stale_copies_of_a_live_redraw_go_only_when_keys_were_typed() {
        let aider = Preset::named("aider").expect("preset");
        let inputs = ["story".to_owned(), "next".to_owned()];
        let pad = " ".repeat(40);
        let wrapped = format!("Line 2: one{pad}Line 2: one two");
        let lines = [
            "> story",
            "Line 1: done.",
            "Line 1: done.",
            &wrapped,
            "Line 2: one two three^C",
            "nextodel",
            "ext",
            "Line 1: done.",
            "",
            "Line 2: one two three four.",
        ];
        let turn = recorded(&[], &lines);
        assert_eq!(
            render(&turn, &inputs, 1, &aider, true, None, false),
            "Line 1: done.\n\nLine 2: one two three four."
        );
        // Without typed keys nothing shifted the redraw: every line is the agent's.
        assert!(
            render(&turn, &inputs, 1, &aider, false, None, false)
                .starts_with("Line 1: done.\nLine 1: done.")
        );
    }

    #[test]
    fn output_glued_behind_the_echo_of_a_question_typed_ahead_keeps_one_copy() {
        // aider: the question typed ahead is echoed on the row where the reply begins, and
        // rich draws its first live line right behind it, padded to the width (80): the row
        // wraps, and the live line is drawn again on the next row.
        let aider = Preset::named("aider").expect("preset");
        let inputs = [
            "write lines".to_owned(),
            "what is the largest planet".to_owned(),
        ];
        let intro = "Here are the numbered lines:";
        let glued = format!(
            "what is the largest planet{intro}{}{intro}",
            " ".repeat(80 - 26 - intro.len())
        );
        let reply = "Here are the numbered lines:\n\n 1 Numbered line 1.\n 2 Numbered line 2.";
        let mut lines = vec!["> write lines", glued.as_str(), "", " 1 Numbered line 1."];
        lines.push(" 2 Numbered line 2.");
        let at_80 = |lines: &[&str]| Recorded {
            cols: 80,
            ..recorded(&[], lines)
        };
        assert_eq!(
            render(&at_80(&lines), &inputs, 1, &aider, true, None, false),
            reply
        );
        // A stale copy of the live line left under the wrapped row: still one.
        lines.insert(2, intro);
        assert_eq!(
            render(&at_80(&lines), &inputs, 1, &aider, true, None, false),
            reply
        );
        // The echo came after the live line (pending at the row's edge) and was erased, the line
        // drawn again behind it on the row it wrapped to: one copy too.
        let twice = format!("{intro}{}{intro}", " ".repeat(120 - intro.len()));
        let wrapped = ["> write lines", twice.as_str(), "", " 1 Numbered line 1."];
        assert!(
            render(&at_80(&wrapped), &inputs, 1, &aider, true, None, false)
                .starts_with("Here are the numbered lines:\n\n 1 Numbered")
        );
        // The echo drawn over the spinner's row, its tail left: no output behind it.
        let over = [
            "> write lines",
            "what is the largest planetnai/mock-model",
            intro,
        ];
        assert_eq!(
            render(&at_80(&over), &inputs, 1, &aider, true, None, false),
            intro
        );
    }
}
