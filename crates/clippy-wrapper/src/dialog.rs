//! An agent's permission dialog as its screen shows it, and the keys that answer it (issue 30).
//!
//! Read from what a person sees, never from rows or offsets: the options are the lines drawn as
//! a numbered menu (`1. Yes` … `3. No`, with a cursor mark such as `❯`, `›` or `●` before the
//! chosen one, inside a box or not, a label wrapped onto the next lines indented under it) or
//! an inline question whose choices are letters in parentheses (`(Y)es/(N)o/(D)on't ask again
//! [Yes]: ` with the cursor after it). Each option's meaning comes from its label: a "yes" or
//! "allow" is `allow`, one that also says it stops asking ("always", "don't ask again", "for
//! this session") is `always`, a "no" or "deny" is `deny`; anything else (a mode switch, "all",
//! "skip") is left alone. The key that picks an option is the one it draws — `(y)`, `(esc)` —
//! else its number; an inline question takes the letter and Enter.
//!
//! No I/O: lines in, keys out.

use clippy_proto::Decision;

/// What an option does, read from its label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meaning {
    /// Lets the tool run this once.
    Allow,
    /// Lets it run and stops asking (for the session, the project, or commands like it).
    Always,
    /// Refuses it.
    Deny,
    /// Something else (a mode switch, "all", "skip", a permanent refusal).
    Other,
}

/// One option of a dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// Its number in a numbered menu.
    pub number: Option<u32>,
    /// The key it draws for itself (`y`, `esc`), if any.
    pub key: Option<String>,
    /// Its label as drawn (wrapped lines joined), without the key.
    pub label: String,
    /// What it does.
    pub meaning: Meaning,
}

/// A permission dialog on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog {
    /// The options, in the order drawn.
    pub choices: Vec<Choice>,
    /// The option the cursor mark is on, if one is marked.
    pub selected: Option<usize>,
    /// An inline question (the choice is typed, then Enter), not a menu.
    pub inline: bool,
}

/// The keys that give a decision, and what they are in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Press {
    /// The bytes to write.
    pub keys: Vec<u8>,
    /// `pressed 1 (Yes)`.
    pub said: String,
    /// The option pressed.
    pub meaning: Meaning,
}

/// Marks a menu draws before its selected option.
const CURSOR_MARKS: &[char] = &['❯', '›', '>', '●', '▶', '▸', '→', '*', '➤'];
/// Box-drawing borders around a dialog.
const BORDERS: &[char] = &['│', '┃', '║', '|', '▌', '▐'];

impl Dialog {
    /// The keys that give `decision`, or why it cannot be given here (naming the keys a person
    /// would press instead).
    pub fn press(&self, decision: Decision) -> Result<Press, String> {
        let wanted = match decision {
            Decision::Allow => Meaning::Allow,
            Decision::Deny => Meaning::Deny,
            Decision::Always => Meaning::Always,
        };
        match self.choices.iter().find(|c| c.meaning == wanted) {
            Some(choice) => Ok(Press {
                keys: self.keys_of(choice),
                said: format!("pressed {} ({})", self.key_name(choice), choice.label),
                meaning: choice.meaning,
            }),
            None => Err(format!(
                "this dialog offers no \"{}\" option; its options: {}",
                decision.as_str(),
                self.listing()
            )),
        }
    }

    /// What `bytes` typed at this dialog pick, when they pick one of its options: an option's
    /// own key or number, Enter on the selected one, Esc (the option keyed `esc`, else the
    /// refusal: Esc cancels a dialog).
    pub fn meaning_of_keys(&self, bytes: &[u8]) -> Option<Meaning> {
        let choice = match bytes {
            [b'\r' | b'\n', ..] => self.selected.and_then(|i| self.choices.get(i)),
            [0x1b] => self
                .choices
                .iter()
                .find(|c| c.key.as_deref() == Some("esc"))
                .or_else(|| self.choices.iter().find(|c| c.meaning == Meaning::Deny)),
            [b, ..] if b.is_ascii_alphanumeric() => {
                let typed = char::from(*b).to_ascii_lowercase();
                self.choices.iter().find(|c| {
                    c.key
                        .as_deref()
                        .is_some_and(|k| k.len() == 1 && k.starts_with(typed))
                        || (c.key.is_none()
                            && c.number
                                .is_some_and(|n| char::from_digit(n, 10) == Some(typed)))
                })
            }
            _ => None,
        }?;
        Some(choice.meaning)
    }

    /// The options in words: `1 (Yes), 2 (Yes, and …), Esc (No)`.
    pub fn listing(&self) -> String {
        self.choices
            .iter()
            .map(|c| format!("{} ({})", self.key_name(c), c.label))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn keys_of(&self, choice: &Choice) -> Vec<u8> {
        let mut keys = match (&choice.key, choice.number) {
            (Some(key), _) if key == "esc" => vec![0x1b],
            (Some(key), _) => key.to_ascii_lowercase().into_bytes(),
            (None, Some(n)) => n.to_string().into_bytes(),
            (None, None) => Vec::new(),
        };
        if self.inline {
            keys.push(b'\r');
        }
        keys
    }

    fn key_name(&self, choice: &Choice) -> String {
        match (&choice.key, choice.number) {
            (Some(key), _) if key == "esc" => "Esc".into(),
            (Some(key), _) if self.inline => format!("{key} and Enter"),
            (Some(key), _) => key.clone(),
            (None, Some(n)) => n.to_string(),
            (None, None) => "?".into(),
        }
    }
}

/// The permission dialog on a screen whose visible rows are `lines` with the cursor on row
/// `cursor_row`, if it shows one: the lowest numbered menu (options 1, 2, … in a row) that
/// offers both a way to allow and a way to refuse, else an inline question on the cursor's
/// row with nothing typed after it.
pub fn read(lines: &[String], cursor_row: usize) -> Option<Dialog> {
    menu(lines).or_else(|| inline(lines, cursor_row))
}

/// A line with the borders of a box around it blanked, columns kept.
fn unboxed(line: &str) -> String {
    let trimmed = line.trim_end();
    let mut chars: Vec<char> = trimmed.chars().collect();
    // A border is the first or last non-blank character.
    if let Some(first) = chars.iter().position(|c| !c.is_whitespace())
        && BORDERS.contains(&chars[first])
    {
        chars[first] = ' ';
    }
    if let Some(last) = chars.iter().rposition(|c| !c.is_whitespace())
        && BORDERS.contains(&chars[last])
    {
        chars[last] = ' ';
    }
    chars.into_iter().collect::<String>().trim_end().to_owned()
}

/// `(marked, number, label, label_column)` of a numbered option line: an optional cursor mark,
/// a number of one or two digits, `.` or `)`, a space, a label.
fn option_line(line: &str) -> Option<(bool, u32, String, usize)> {
    let chars: Vec<char> = line.chars().collect();
    let mut i = chars.iter().position(|c| !c.is_whitespace())?;
    let mut marked = false;
    if CURSOR_MARKS.contains(&chars[i]) {
        marked = true;
        i += 1;
        while chars.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
    }
    let digits_start = i;
    while chars.get(i).is_some_and(char::is_ascii_digit) {
        i += 1;
    }
    let digits = i - digits_start;
    if digits == 0 || digits > 2 || !matches!(chars.get(i), Some('.' | ')')) {
        return None;
    }
    if !chars.get(i + 1).is_some_and(|c| c.is_whitespace()) {
        return None;
    }
    let number: u32 = chars[digits_start..i]
        .iter()
        .collect::<String>()
        .parse()
        .ok()?;
    let mut start = i + 1;
    while chars.get(start).is_some_and(|c| c.is_whitespace()) {
        start += 1;
    }
    let label: String = chars[start..].iter().collect();
    (!label.is_empty()).then_some((marked, number, label, start))
}

/// The lowest numbered menu on the screen that reads as a permission dialog.
fn menu(lines: &[String]) -> Option<Dialog> {
    let rows: Vec<String> = lines.iter().map(|l| unboxed(l)).collect();
    let mut found = None;
    let mut row = 0;
    while row < rows.len() {
        let Some((marked, 1, label, column)) = option_line(&rows[row]) else {
            row += 1;
            continue;
        };
        // A menu: options numbered on from 1, a label's wrapped lines under it.
        let mut options = vec![(marked, 1, label, column)];
        let mut next = row + 1;
        while next < rows.len() {
            let line = &rows[next];
            if let Some((marked, number, label, column)) = option_line(line)
                && number == options.len() as u32 + 1
            {
                options.push((marked, number, label, column));
            } else {
                let indent = line.chars().take_while(|c| c.is_whitespace()).count();
                let last = options.last_mut()?;
                if line.trim().is_empty() || indent < last.3 {
                    break;
                }
                last.2.push(' ');
                last.2.push_str(line.trim());
            }
            next += 1;
        }
        if options.len() >= 2 {
            let dialog = Dialog {
                selected: options.iter().position(|o| o.0),
                choices: options
                    .into_iter()
                    .map(|(_, number, label, _)| {
                        let (label, key) = split_key(&label);
                        Choice {
                            number: Some(number),
                            meaning: meaning(&label),
                            key,
                            label,
                        }
                    })
                    .collect(),
                inline: false,
            };
            if is_permission(&dialog) {
                found = Some(dialog);
            }
        }
        row = next.max(row + 1);
    }
    found
}

/// A label and the key it draws at its end (`Yes, proceed (y)` → `Yes, proceed`, `y`).
fn split_key(label: &str) -> (String, Option<String>) {
    let trimmed = label.trim_end();
    if let Some(open) = trimmed.rfind('(')
        && trimmed.ends_with(')')
    {
        let key = &trimmed[open + 1..trimmed.len() - 1];
        let is_key = key.eq_ignore_ascii_case("esc")
            || (key.chars().count() == 1 && key.chars().all(|c| c.is_ascii_alphanumeric()));
        if is_key {
            return (
                trimmed[..open].trim_end().to_owned(),
                Some(key.to_ascii_lowercase()),
            );
        }
    }
    (trimmed.to_owned(), None)
}

/// What a label says its option does.
fn meaning(label: &str) -> Meaning {
    let lower = label.to_lowercase().replace('’', "'");
    let first = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .find(|w| !w.is_empty())
        .unwrap_or("");
    let stops_asking = [
        "always",
        "don't ask again",
        "do not ask again",
        "this session",
        "the session",
        "remember",
    ]
    .iter()
    .any(|s| lower.contains(s));
    let switches_mode = lower.contains(" mode");
    match first {
        "yes" | "allow" | "approve" | "proceed" | "accept" | "run" if switches_mode => {
            Meaning::Other
        }
        "yes" | "allow" | "approve" | "proceed" | "accept" | "run" if stops_asking => {
            Meaning::Always
        }
        "yes" | "allow" | "approve" | "proceed" | "accept" | "run" => Meaning::Allow,
        "no" | "deny" | "reject" | "decline" | "cancel" => Meaning::Deny,
        _ => Meaning::Other,
    }
}

/// Whether `dialog` asks for a permission: some option allows and some refuses.
fn is_permission(dialog: &Dialog) -> bool {
    let has = |m: Meaning| dialog.choices.iter().any(|c| c.meaning == m);
    (has(Meaning::Allow) || has(Meaning::Always)) && has(Meaning::Deny)
}

/// An inline question on the cursor's row: `… (Y)es/(N)o/… [Default]: ` with nothing typed
/// after it.
fn inline(lines: &[String], cursor_row: usize) -> Option<Dialog> {
    let line = lines.get(cursor_row)?.trim_end();
    let body = line.strip_suffix(':')?.trim_end();
    // The default in brackets, then the choices before it.
    let body = match body.strip_suffix(']') {
        Some(rest) => rest[..rest.rfind('[')?].trim_end(),
        None => body,
    };
    let start = body.rfind("? ").map_or(0, |i| i + 2);
    let choices: Vec<Choice> = body[start..]
        .split('/')
        .map(|part| {
            let part = part.trim();
            let rest = part.strip_prefix('(')?;
            let close = rest.find(')')?;
            let key = &rest[..close];
            if key.chars().count() != 1 || !key.chars().all(char::is_alphanumeric) {
                return None;
            }
            let label = format!("{key}{}", &rest[close + 1..]);
            Some(Choice {
                number: None,
                key: Some(key.to_lowercase()),
                meaning: inline_meaning(&label),
                label,
            })
        })
        .collect::<Option<_>>()?;
    let dialog = Dialog {
        choices,
        selected: None,
        inline: true,
    };
    (dialog.choices.len() >= 2 && is_permission(&dialog)).then_some(dialog)
}

/// An inline choice's meaning: as a menu's, except that "don't ask again" alone (no "yes")
/// is a lasting refusal, which `answer` does not give.
fn inline_meaning(label: &str) -> Meaning {
    let lower = label.to_lowercase();
    if lower.starts_with("don't") || lower.starts_with("do not") {
        return Meaning::Other;
    }
    meaning(label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn a_label_says_what_its_option_does() {
        assert_eq!(meaning("Yes"), Meaning::Allow);
        assert_eq!(meaning("Allow once"), Meaning::Allow);
        assert_eq!(meaning("Allow for this session"), Meaning::Always);
        assert_eq!(
            meaning("Yes, and always allow access to claude/ from this project"),
            Meaning::Always
        );
        assert_eq!(
            meaning("Yes, and switch to auto mode · auto mode handles these prompts for you"),
            Meaning::Other
        );
        assert_eq!(meaning("No, suggest changes"), Meaning::Deny);
        assert_eq!(inline_meaning("Don't ask again"), Meaning::Other);
        assert_eq!(inline_meaning("All"), Meaning::Other);
    }

    #[test]
    fn a_menu_that_is_not_a_permission_is_not_read() {
        let screen = lines("Pick a theme\n ❯ 1. Dark\n   2. Light\n");
        assert_eq!(read(&screen, 2), None);
    }

    #[test]
    fn an_inline_question_with_something_typed_after_it_is_not_read() {
        let screen = lines("Run shell command? (Y)es/(N)o [Yes]: y");
        assert_eq!(read(&screen, 0), None);
        let screen = lines("Run shell command? (Y)es/(N)o [Yes]:");
        assert!(read(&screen, 0).is_some());
    }
}
