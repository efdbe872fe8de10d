//! The one question `cfq` asks: to type a name before an action that
//! cannot be undone.

use std::io::{self, BufRead as _, IsTerminal as _, Write as _};

use crate::exit::Failure;

/// Asks to type `expected` (`what` names it: "the queue id"), after
/// `warning`. Reads stdin whether or not it is a terminal, so that a script
/// can confirm by piping the answer; `--yes` skips this. `purge --all`,
/// `queues delete` and `consumer disable` ask so.
pub fn confirm(warning: &str, what: &str, expected: &str, undone: &str) -> Result<(), Failure> {
    let mut stderr = io::stderr().lock();
    let warning = cf_queues::error::escape_controls(warning);
    let _ = write!(stderr, "{warning}\nType {what} to confirm: ");
    let _ = stderr.flush();
    let mut answer = String::new();
    let read = io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| Failure::local(format_args!("cannot read the confirmation: {e}")))?;
    if !io::stdin().is_terminal() {
        let _ = writeln!(stderr);
    }
    if read == 0 || answer.trim() != expected {
        return Err(Failure::local(format_args!("not confirmed; {undone}"))
            .with_hint(format_args!("type {what} exactly, or pass --yes")));
    }
    Ok(())
}
