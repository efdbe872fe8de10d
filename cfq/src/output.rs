//! Where results go: JSON lines or a table on stdout (notes go to stderr,
//! by [`crate::stderr`]).
//!
//! Every write to stdout goes through [`Output`], which turns a closed pipe
//! into a quiet, successful stop instead of a panic.

use std::io::{self, IsTerminal as _, Write as _};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::args::OutputFormat;
use crate::exit::Failure;
use crate::ndjson::Received;
use crate::stderr::note;

#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub format: OutputFormat,
    /// Stdout is a terminal: shorten what people cannot read anyway.
    pub terminal: bool,
}

impl Output {
    pub fn new(format: Option<OutputFormat>) -> Output {
        let terminal = io::stdout().is_terminal();
        let format = format.unwrap_or(if terminal {
            OutputFormat::Table
        } else {
            OutputFormat::Json
        });
        Output { format, terminal }
    }

    pub fn json(&self) -> bool {
        self.format == OutputFormat::Json
    }

    /// Writes one line to stdout and flushes it, so that what follows (an
    /// acknowledgement) happens only after the line left the process. On a
    /// terminal its control characters are escaped: a body, a name or an
    /// error from the network cannot drive the screen (see
    /// [`escape_controls`](cf_queues::error::escape_controls)); what goes
    /// to a pipe or a file is the data as it came.
    pub fn line(&self, line: &str) -> Result<(), Failure> {
        let line = if self.terminal {
            cf_queues::error::escape_controls(line)
        } else {
            std::borrow::Cow::Borrowed(line)
        };
        let mut stdout = io::stdout().lock();
        stdout
            .write_all(line.as_bytes())
            .and_then(|()| stdout.write_all(b"\n"))
            .and_then(|()| stdout.flush())
            .map_err(Failure::stdout)
    }

    pub fn json_line(&self, value: &impl Serialize) -> Result<(), Failure> {
        let line = serde_json::to_string(value)
            .map_err(|e| Failure::local(format_args!("cannot encode the output: {e}")))?;
        self.line(&line)
    }

    /// Aligned columns; the last column is never padded, so long values
    /// (lease ids) do not push the others around.
    pub fn table(&self, headers: &[&str], rows: &[Vec<String>]) -> Result<(), Failure> {
        let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
        for row in rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let render = |cells: &mut dyn Iterator<Item = &str>| {
            let mut line = String::new();
            for (i, cell) in cells.enumerate() {
                if i + 1 < widths.len() {
                    line.push_str(&format!("{cell:<width$}  ", width = widths[i]));
                } else {
                    line.push_str(cell);
                }
            }
            line.trim_end().to_owned()
        };
        self.line(&render(&mut headers.iter().copied()))?;
        for row in rows {
            self.line(&render(&mut row.iter().map(String::as_str)))?;
        }
        Ok(())
    }

    /// Received messages: records in JSON, a table for people. The token
    /// column (`LEASE` or `REF`) comes last and whole, since it is what
    /// the next command needs.
    pub fn messages(&self, messages: &[Received<'_>], token: &str) -> Result<(), Failure> {
        if self.json() {
            for message in messages {
                self.json_line(&message.record())?;
            }
            return Ok(());
        }
        if messages.is_empty() {
            note("no messages");
            return Ok(());
        }
        let body_width = if self.terminal { 48 } else { usize::MAX };
        let rows: Vec<Vec<String>> = messages
            .iter()
            .map(|m| {
                vec![
                    m.id.to_owned(),
                    m.attempts.to_string(),
                    age(m.timestamp_ms),
                    m.body.content_type().to_string(),
                    shorten(&m.body_preview(), body_width),
                    m.token.unwrap_or_default().to_owned(),
                ]
            })
            .collect();
        self.table(&["ID", "ATTEMPTS", "AGE", "TYPE", "BODY", token], &rows)
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// How long ago a Unix-milliseconds time was, for people: `3m 12s`.
pub fn age(timestamp_ms: u64) -> String {
    if timestamp_ms == 0 {
        return "-".into();
    }
    let seconds = now_ms().saturating_sub(timestamp_ms) / 1000;
    humantime::format_duration(Duration::from_secs(seconds)).to_string()
}

/// Bytes for people, in the units Cloudflare's limits use (1 KB = 1000 bytes).
pub fn bytes(count: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if count < 1000 {
        return format!("{count} B");
    }
    let mut value = count as f64;
    let mut unit = "B";
    for next in UNITS {
        if value < 1000.0 {
            break;
        }
        value /= 1000.0;
        unit = next;
    }
    format!("{value:.1} {unit}")
}

/// One line, at most `width` characters.
pub fn shorten(text: &str, width: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= width {
        return flat;
    }
    let mut short: String = flat.chars().take(width.saturating_sub(1)).collect();
    short.push('…');
    short
}

/// A count of things with its noun, `1 message`, `3 messages`.
pub fn plural(count: impl Into<u64>, noun: &str) -> String {
    let count = count.into();
    if count == 1 {
        format!("{count} {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// Line numbers for people: `3, 7-9, 12`.
pub fn line_ranges(lines: &[u64]) -> String {
    let mut parts = Vec::new();
    let mut iter = lines.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    parts.join(", ")
}

/// A table cell of a text the API may leave out or empty: `-` then.
pub fn text(value: Option<&str>) -> String {
    value.filter(|v| !v.is_empty()).unwrap_or("-").to_owned()
}

/// A table cell of a flag the API may leave out: `yes`, `no` or `-`.
pub fn yes_no(value: Option<bool>) -> String {
    match value {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn people_units() {
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(1_500), "1.5 KB");
        assert_eq!(bytes(2_000_000), "2.0 MB");
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("a\nb", 4), "a b");
        assert_eq!(line_ranges(&[1, 2, 3, 5, 7, 8]), "1-3, 5, 7-8");
        assert_eq!(plural(1u64, "line"), "1 line");
    }
}
