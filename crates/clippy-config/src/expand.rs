//! `${VAR}` expansion in string values.
//!
//! The grammar is deliberately tiny, so that no string means something surprising:
//! `${NAME}` (NAME = `[A-Za-z_][A-Za-z0-9_]*`) is replaced by the variable's value, `$$` is one
//! literal `$`, and every other `$` is literal (`$HOME`, `cost: 5$`). The escape is `$$` rather
//! than `\$` because a backslash is already TOML's own escape character in basic strings
//! (`"\$"` is a TOML syntax error), while `$$` reads the same in every kind of TOML string.
//! Values are expanded once: a variable whose value contains `${…}` is not expanded again.

/// Why a string could not be expanded (the caller adds the layer and the key).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ExpandError {
    /// `${NAME}` with NAME unset.
    Unresolved(String),
    /// A malformed placeholder; the text says what is wrong.
    Malformed(String),
}

/// Expands `${NAME}` and `$$` in `input`, looking names up with `env`.
pub(crate) fn expand(
    input: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandError> {
    // Fast path: most values contain no `$` at all.
    if !input.contains('$') {
        return Ok(input.to_owned());
    }
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("${") {
            let Some(end) = after.find('}') else {
                return Err(ExpandError::Malformed(format!(
                    "`{tail}` has no closing `}}` (write $${{ for a literal ${{)"
                )));
            };
            let name = &after[..end];
            if !is_name(name) {
                return Err(ExpandError::Malformed(format!(
                    "`${{{name}}}` is not a variable name (letters, digits and `_`, not starting \
                     with a digit; write $${{ for a literal ${{)"
                )));
            }
            match env(name) {
                Some(value) => out.push_str(&value),
                None => return Err(ExpandError::Unresolved(name.to_owned())),
            }
            rest = &after[end + 1..];
        } else {
            // A `$` not followed by `$` or `{` is literal (`$HOME` stays `$HOME`).
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "USER" => Some("ada".to_owned()),
            "EMPTY" => Some(String::new()),
            "NESTED" => Some("${USER}".to_owned()),
            _ => None,
        }
    }

    fn ok(input: &str) -> String {
        expand(input, &env).expect("expands")
    }

    #[test]
    fn plain_strings_are_unchanged() {
        assert_eq!(ok(""), "");
        assert_eq!(ok("claude"), "claude");
    }

    #[test]
    fn braced_variables_expand() {
        assert_eq!(ok("${USER}"), "ada");
        assert_eq!(ok("/home/${USER}/x-${USER}"), "/home/ada/x-ada");
        assert_eq!(ok("a${EMPTY}b"), "ab");
    }

    #[test]
    fn expansion_is_not_recursive() {
        assert_eq!(ok("${NESTED}"), "${USER}");
    }

    #[test]
    fn dollar_dollar_is_a_literal_dollar() {
        assert_eq!(ok("$${USER}"), "${USER}");
        assert_eq!(ok("$$"), "$");
        assert_eq!(ok("$$$${USER}"), "$${USER}");
        assert_eq!(ok("$$${USER}"), "$ada");
    }

    #[test]
    fn other_dollars_are_literal() {
        assert_eq!(ok("$USER"), "$USER");
        assert_eq!(ok("5$"), "5$");
        assert_eq!(ok("$ {USER}"), "$ {USER}");
        assert_eq!(ok("é$ü"), "é$ü");
    }

    #[test]
    fn unset_variable_is_an_error() {
        assert_eq!(
            expand("x${NOPE}y", &env),
            Err(ExpandError::Unresolved("NOPE".to_owned()))
        );
    }

    #[test]
    fn malformed_placeholders_are_errors() {
        for bad in ["${USER", "${}", "${1A}", "${A-B}", "${USER:-x}", "${ USER}"] {
            assert!(
                matches!(expand(bad, &env), Err(ExpandError::Malformed(_))),
                "{bad:?}"
            );
        }
    }
}
