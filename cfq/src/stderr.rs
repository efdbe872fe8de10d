//! Notes for people on stderr: progress, warnings, errors and hints.
//!
//! Best effort: there is nowhere left to report a failure to write them, so
//! they never panic and never fail a command.

use std::fmt;
use std::io::{self, IsTerminal as _, Write as _};

/// A line on stderr, prefixed with `cfq: `, its control characters
/// escaped (a note often quotes a server: see
/// [`escape_controls`](cf_queues::error::escape_controls)). Never panics.
pub fn note(message: impl fmt::Display) {
    let message = message.to_string();
    let message = cf_queues::error::escape_controls(&message);
    let _ = writeln!(io::stderr().lock(), "cfq: {message}");
}

/// Whether stderr is a terminal (colours, progress bars).
pub fn is_terminal() -> bool {
    io::stderr().is_terminal()
}
