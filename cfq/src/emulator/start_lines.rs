//! The start-up lines `cfq emulator` prints on stdout: a contract, read by
//! the npm package's `startEmulator`, the Python plugin, the xtask tasks,
//! cfq's tests and people's shells. Version 1 is documented, line by line
//! with what a reader may rely on, in cfq's README ("The emulator's
//! start-up lines"); the one reader of each language follows it. Only
//! this file writes them.
//!
//! Within a version, lines are only ever added (readers ignore lines they
//! do not know); changing or removing one is a new version, which readers
//! of the old one refuse.

/// The contract's version, printed as `  start-up lines: version 1`.
pub const VERSION: u32 = 1;

/// The last start-up line: the emulator accepts connections and listens
/// for its stop signals.
pub const READY: &str = "press Ctrl-C to stop";

/// What the start-up lines tell.
pub struct StartLines<'a> {
    pub base_url: &'a str,
    /// `--token`'s, when one is set.
    pub token: Option<&'a str>,
    pub account_id: &'a str,
    /// The queues a `--config` file declares, by name, with their ids.
    pub queues: Vec<(&'a str, String)>,
    pub dashboard: Option<&'a str>,
}

impl StartLines<'_> {
    /// The lines, in the contract's order, without their newlines.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![
            format!("cf-queues emulator listening on {}", self.base_url),
            format!("  export CLOUDFLARE_BASE_URL={}", self.base_url),
        ];
        if let Some(token) = self.token {
            lines.push(format!("  export CLOUDFLARE_API_TOKEN={token}"));
        }
        lines.push(format!(
            "  export CLOUDFLARE_ACCOUNT_ID={}",
            self.account_id
        ));
        for (name, id) in &self.queues {
            lines.push(format!("  queue {name}: {id}"));
        }
        if let Some(url) = self.dashboard {
            lines.push(format!("  dashboard: {url}"));
        }
        lines.push(format!("  start-up lines: version {VERSION}"));
        lines.push(READY.to_owned());
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_one_in_order() {
        let full = StartLines {
            base_url: "http://127.0.0.1:8787/client/v4",
            token: Some("t0k"),
            account_id: "acc",
            queues: vec![("jobs", "a1".to_owned())],
            dashboard: Some("http://127.0.0.1:8787/?login=x"),
        };
        assert_eq!(
            full.lines(),
            [
                "cf-queues emulator listening on http://127.0.0.1:8787/client/v4",
                "  export CLOUDFLARE_BASE_URL=http://127.0.0.1:8787/client/v4",
                "  export CLOUDFLARE_API_TOKEN=t0k",
                "  export CLOUDFLARE_ACCOUNT_ID=acc",
                "  queue jobs: a1",
                "  dashboard: http://127.0.0.1:8787/?login=x",
                "  start-up lines: version 1",
                "press Ctrl-C to stop",
            ]
        );
        let bare = StartLines {
            token: None,
            queues: Vec::new(),
            dashboard: None,
            ..full
        };
        assert_eq!(
            bare.lines(),
            [
                "cf-queues emulator listening on http://127.0.0.1:8787/client/v4",
                "  export CLOUDFLARE_BASE_URL=http://127.0.0.1:8787/client/v4",
                "  export CLOUDFLARE_ACCOUNT_ID=acc",
                "  start-up lines: version 1",
                "press Ctrl-C to stop",
            ]
        );
    }
}
