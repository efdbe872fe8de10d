//! The documented exceptions: differences the fragment makes on purpose.
//!
//! ```yaml
//! exceptions:
//!   - line: "GET /metrics response: media type text/event-stream only in published"
//!     reason: Why this one difference is intended.
//!   - lines:
//!       - "POST /messages request.body: required false vs true"
//!       - "POST /messages request.content_type: required false vs true"
//!     reason: One reason for a few named differences.
//!   - glob: "* response.*: required true vs false"
//!     reason: Why the whole class is intended (say that it is a class).
//! ```
//!
//! Each line of `lines` is checked for staleness on its own.
//!
//! In a `glob`, `*` matches any run of characters and nothing else is
//! special, so the `[]` and `{}` of locations need no escaping.

use std::path::Path;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    exceptions: Vec<ExceptionEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExceptionEntry {
    line: Option<String>,
    lines: Option<Vec<String>>,
    glob: Option<String>,
    reason: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Matcher {
    Line(String),
    Glob(String),
}

#[derive(Clone, Debug)]
pub struct Exception {
    pub matcher: Matcher,
    pub reason: String,
}

impl Exception {
    pub fn matches(&self, line: &str) -> bool {
        match &self.matcher {
            Matcher::Line(exact) => exact == line,
            Matcher::Glob(pattern) => glob(pattern, line),
        }
    }

    pub fn label(&self) -> String {
        match &self.matcher {
            Matcher::Line(exact) => format!("line {exact:?}"),
            Matcher::Glob(pattern) => format!("glob {pattern:?}"),
        }
    }
}

pub fn load(path: &Path) -> Result<Vec<Exception>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn parse(text: &str) -> Result<Vec<Exception>, String> {
    let file: File = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    let mut exceptions: Vec<Exception> = Vec::with_capacity(file.exceptions.len());
    for (index, entry) in file.exceptions.into_iter().enumerate() {
        let number = index + 1;
        let matchers = match (entry.line, entry.lines, entry.glob) {
            (Some(line), None, None) => vec![Matcher::Line(line)],
            (None, Some(lines), None) if !lines.is_empty() => {
                lines.into_iter().map(Matcher::Line).collect()
            }
            (None, None, Some(glob)) => vec![Matcher::Glob(glob)],
            _ => {
                return Err(format!(
                    "exception {number}: give exactly one of `line`, `lines` (not empty) and `glob`"
                ));
            }
        };
        if entry.reason.trim().is_empty() {
            return Err(format!("exception {number}: the reason is empty"));
        }
        for matcher in matchers {
            if exceptions.iter().any(|e| e.matcher == matcher) {
                return Err(format!("exception {number}: {matcher:?} is listed twice"));
            }
            exceptions.push(Exception {
                matcher,
                reason: entry.reason.clone(),
            });
        }
    }
    Ok(exceptions)
}

/// `*` matches any run of characters, everything else itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    // Iterative matching with backtracking to the last `*`: linear in
    // practice, and no recursion depth to worry about.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_runs_and_nothing_else_is_special() {
        assert!(glob(
            "* response.*: required true vs false",
            "GET /metrics response.result.backlog_count: required true vs false"
        ));
        assert!(glob(
            "POST /messages/pull request.*",
            "POST /messages/pull request.a[].b{}"
        ));
        assert!(glob("a[]", "a[]"));
        assert!(!glob("a[]", "ab"));
        assert!(!glob(
            "* request.*: type number vs integer",
            "POST /x response.y: type number vs integer"
        ));
        assert!(glob("**", ""));
        assert!(!glob("a*b", "acbc"));
    }

    #[test]
    fn a_list_of_lines_becomes_one_exception_per_line() {
        let parsed = parse("exceptions:\n  - lines: [a, b]\n    reason: both\n").unwrap();
        assert_eq!(parsed.len(), 2);
        assert!(parsed[0].matches("a") && !parsed[0].matches("b"));
        assert_eq!(parsed[1].reason, "both");
    }

    #[test]
    fn entries_need_one_matcher_and_a_reason() {
        let good =
            "exceptions:\n  - line: a\n    reason: because\n  - glob: 'b*'\n    reason: a class\n";
        let parsed = parse(good).unwrap();
        assert!(parsed[0].matches("a"));
        assert!(parsed[1].matches("bcd"));
        assert!(parse("exceptions:\n  - line: a\n    glob: b\n    reason: r\n").is_err());
        assert!(parse("exceptions:\n  - line: a\n    reason: ' '\n").is_err());
        assert!(parse("exceptions:\n  - lines: []\n    reason: r\n").is_err());
        assert!(parse("exceptions:\n  - line: a\n").is_err());
        assert!(parse("exceptions:\n  - line: a\n    reason: r\n    note: n\n").is_err());
        assert!(
            parse("exceptions:\n  - line: a\n    reason: r\n  - line: a\n    reason: s\n").is_err()
        );
    }
}
