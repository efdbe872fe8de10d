//! How errors read: the attempts they took, and text from the network made
//! safe to print.
//!
//! A server's error message can
//! hold `ESC ] 52` (write the clipboard), `ESC [ 2 J` (clear the screen),
//! C1 controls or bidirectional overrides (make a line read as another).
//! The errors' `Display` shows it through [`escape_controls`]; the raw
//! text stays on the error's fields, as data.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `" after N attempts"` when a call took more than one, else nothing.
pub(super) fn after_attempts(attempts: u32) -> String {
    if attempts > 1 {
        format!(" after {attempts} attempts")
    } else {
        String::new()
    }
}

/// `text` with every control character (C0, DEL, C1), bidirectional
/// control and line or paragraph separator written as a Rust escape
/// (`\u{1b}`), as `{:?}` writes it, and everything else as it is.
///
/// ```
/// use cf_queues::error::escape_controls;
/// assert_eq!(escape_controls("plain: text"), "plain: text");
/// assert_eq!(escape_controls("\u{1b}[2J\u{7}"), "\\u{1b}[2J\\u{7}");
/// assert_eq!(escape_controls("a\u{202e}b\u{85}"), "a\\u{202e}b\\u{85}");
/// ```
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_to_print) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_to_print(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether a character can change what a terminal or a reader shows
/// beyond itself.
fn unsafe_to_print(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            // Bidirectional marks, embeddings, overrides and isolates.
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
            // Line and paragraph separators.
            | '\u{2028}' | '\u{2029}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_control_is_escaped_and_nothing_else() {
        let hostile =
            "ok \u{1b}]52;c;aGk=\u{7}\u{1b}[2J\r\nfake: done\u{9b}31m\u{202e}txt.exe\u{2066}";
        let shown = escape_controls(hostile);
        assert_eq!(
            shown,
            "ok \\u{1b}]52;c;aGk=\\u{7}\\u{1b}[2J\\u{d}\\u{a}fake: done\\u{9b}31m\\u{202e}txt.exe\\u{2066}"
        );
        assert!(!shown.chars().any(unsafe_to_print));
        assert!(matches!(escape_controls("é ✓ 日本"), Cow::Borrowed(_)));
    }
}
