//! `cfq emulator`'s flags: where it listens, what it accepts, the account it
//! declares, its limits, and how far away it behaves.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use cf_queues_emulator::Latency;
use clap::builder::TypedValueParser;
use clap::error::ErrorKind;
use clap::{ArgGroup, Args, ValueEnum};

use super::parse_duration;

#[derive(Debug, Args)]
// `--strict` with a configuration file alone is strict about the queues the
// file declares: either declaration satisfies it.
#[command(group(ArgGroup::new("declaration").args(["declared", "config"]).multiple(true)))]
pub struct EmulatorArgs {
    /// The address to listen on
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8787", value_parser = parse_listen)]
    pub listen: SocketAddr,

    /// The API token to accept: visible ASCII, no spaces [default: a generated one, printed at
    /// start]
    #[arg(long, value_name = "TOKEN", value_parser = TokenParser)]
    pub token: Option<String>,

    /// Declare the account from a TOML file: queues with their names, ids, settings and
    /// consumers, the round trip and the rate limits
    ///
    /// The file's fields are the API's (`queue_name`, `queue_id`, `settings`, `consumer` with
    /// `type = "http_pull"`, `dead_letter_queue`, ...); its format is documented in the
    /// cf-queues-emulator crate, module `config`:
    /// `https://docs.rs/cf-queues-emulator/latest/cf_queues_emulator/config/`. A queue declared
    /// without `queue_id` gets a fresh one, printed at start.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Keep the account's queues, consumers and messages in DIR, loaded at the next start
    ///
    /// Every answered change is synced to DIR before its answer leaves, so a crash (kill -9)
    /// neither loses an answered push nor brings back an answered ack; leases end with a
    /// crash. DIR is locked while the emulator runs; a DIR of another format version is
    /// refused (move its messages with `cfq drain` on the old version and `cfq replay` on
    /// this one). A --config file only seeds an empty DIR. Without --data-dir everything is
    /// in memory. See the cf-queues-emulator crate docs, "Durability".
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Empty the --data-dir before starting
    #[arg(long, requires = "data_dir")]
    pub reset: bool,

    /// Serve no dashboard (by default the local account is shown in a browser at the link
    /// printed at start, which logs the browser in with a secret of its own)
    #[arg(long)]
    pub no_dashboard: bool,

    /// Stop when standard input closes, as well as on Ctrl-C, SIGTERM or SIGHUP: a parent that holds
    /// the emulator's stdin open (a test run's `startEmulator()`) takes it down when it dies,
    /// however it dies
    #[arg(long)]
    pub stop_on_stdin_close: bool,

    /// Stop when the process that started the emulator ends, whatever that process forked (its
    /// children may hold the stdin pipe open): Unix only, checked every 100 ms
    #[arg(long)]
    pub stop_with_parent: bool,

    /// Only the queues named with --queue or declared by --config exist; others get 404 with code
    /// 10104
    #[arg(long, requires = "declaration")]
    pub strict: bool,

    /// Declare a queue (repeatable; with --strict)
    #[arg(
        long = "queue",
        id = "declared",
        value_name = "ID",
        requires = "strict"
    )]
    pub queues: Vec<String>,

    /// Deliveries before a message is dropped or dead-lettered
    ///
    /// A message is dropped, or moved to its dead-letter queue, when its
    /// `attempts` reaches N, so it is delivered at most N times. This is the
    /// reading of Cloudflare's pull-consumer page; its dead-letter page and
    /// Miniflare deliver N + 1 times.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub max_retries: u32,

    /// Move messages that exhaust their retries on QUEUE to DLQ (repeatable)
    #[arg(long, value_name = "QUEUE=DLQ", value_parser = parse_dead_letter)]
    pub dead_letter: Vec<(String, String)>,

    /// The most connections open at once; at the cap, the longest idle one is closed [default: 512]
    #[arg(long, value_name = "N", help_heading = "Server limits")]
    pub max_connections: Option<usize>,

    /// How long a client may take to send a request head [default: 10s]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = "Server limits")]
    pub header_timeout: Option<Duration>,

    /// How long a client may take to send a request body [default: 30s]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = "Server limits")]
    pub body_timeout: Option<Duration>,

    /// How long a keep-alive connection may wait for its next request [default: 120s]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = "Server limits")]
    pub idle_timeout: Option<Duration>,

    /// How long an answer may wait for the client to read it [default: 30s]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = "Server limits")]
    pub write_timeout: Option<Duration>,

    /// Answer bytes a connection may hold before the client reads them [default: 65536]
    #[arg(long, value_name = "BYTES", help_heading = "Server limits")]
    pub response_buffer: Option<usize>,

    /// The largest request body; a larger one gets 413 unread [default: 2097152]
    #[arg(long, value_name = "BYTES", help_heading = "Server limits")]
    pub max_body: Option<usize>,

    /// How long Ctrl-C, SIGTERM or SIGHUP lets open requests finish before closing them [default: 5s]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = "Server limits")]
    pub shutdown_grace: Option<Duration>,

    /// Add a network round trip to every request, and one more to a new connection's first
    ///
    /// RTT, or RTT,JITTER for a jitter drawn uniformly up to JITTER on each round trip:
    /// `100ms`, `100ms,20ms`. Cloudflare is tens to hundreds of milliseconds away from most
    /// servers; loopback hides that.
    #[arg(long, value_name = "RTT[,JITTER]", value_parser = parse_latency, help_heading = "At a distance")]
    pub latency: Option<Latency>,

    /// Enforce Cloudflare's rate limits: `cloudflare`
    ///
    /// 5,000 pulled messages and 5,000 settled or extended leases a second per queue; 1,200
    /// other requests per 5 minutes per token, then every call of the token refused for 5
    /// minutes; 200 requests a second per client address. Answers carry `Ratelimit` and
    /// `Ratelimit-Policy`; refusals are 429 with `Retry-After`.
    #[arg(long, value_name = "MODEL", value_enum, help_heading = "At a distance")]
    pub rate_limits: Option<RateLimitsChoice>,
}

/// The rate-limit models `cfq emulator --rate-limits` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RateLimitsChoice {
    /// Cloudflare's figures.
    Cloudflare,
}

/// `100ms` or `100ms,20ms`: a round trip and an optional jitter.
fn parse_latency(text: &str) -> Result<Latency, String> {
    let (round_trip, jitter) = match text.split_once(',') {
        Some((round_trip, jitter)) => (round_trip, Some(jitter)),
        None => (text, None),
    };
    let latency = Latency::round_trip(parse_duration(round_trip)?);
    Ok(match jitter {
        Some(jitter) => latency.with_jitter(parse_duration(jitter)?),
        None => latency,
    })
}

fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    text.parse()
        .map_err(|e| format!("{e} (expected an address like 127.0.0.1:8787)"))
}

/// `--token`: a value every client can send in `Authorization: Bearer
/// TOKEN`, or a usage error that names the problem but never the value
/// (clap's own error for a bad value quotes it, and a token is a secret).
#[derive(Debug, Clone, Copy)]
struct TokenParser;

impl TypedValueParser for TokenParser {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        let problem = match value.to_str() {
            None => Err("is not UTF-8".to_owned()),
            Some(text) => token_problem(text).map_or(Ok(text), Err),
        };
        problem.map(str::to_owned).map_err(|problem| {
            clap::Error::raw(
                ErrorKind::ValueValidation,
                format!(
                    "the value of --token {problem} (the value is not shown): clients send it \
                     in an `Authorization: Bearer TOKEN` header, which takes visible ASCII \
                     only, without spaces\n"
                ),
            )
            .with_cmd(cmd)
        })
    }
}

/// Why a token could not be sent by a client, if it could not: the header
/// value of a bearer token is one run of visible ASCII (RFC 6750's
/// b64token is narrower still; any visible character is accepted here, as
/// HTTP clients send them). Names the first offending character by
/// position and kind, never by value.
fn token_problem(token: &str) -> Option<String> {
    if token.is_empty() {
        return Some("is empty".to_owned());
    }
    let (index, c) = token
        .chars()
        .enumerate()
        .find(|(_, c)| !c.is_ascii_graphic())?;
    let kind = if c == ' ' {
        "a space"
    } else if c.is_control() {
        "a control character"
    } else if c.is_whitespace() {
        "a white space character"
    } else {
        "a character outside visible ASCII"
    };
    Some(format!("has {kind} at character {}", index + 1))
}

fn parse_dead_letter(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((queue, dlq)) => Ok((queue.to_owned(), dlq.to_owned())),
        None => Err("expected QUEUE=DLQ".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_a_client_can_send() {
        assert_eq!(token_problem("conformance-123_~!."), None);
        assert_eq!(token_problem(""), Some("is empty".into()));
        assert_eq!(
            token_problem("a b"),
            Some("has a space at character 2".into())
        );
        assert_eq!(
            token_problem("ab\t"),
            Some("has a control character at character 3".into())
        );
        assert_eq!(
            token_problem("a\u{a0}"),
            Some("has a white space character at character 2".into())
        );
        assert_eq!(
            token_problem("tökén"),
            Some("has a character outside visible ASCII at character 2".into())
        );
    }

    #[test]
    fn latencies() {
        let far = Latency::round_trip(Duration::from_millis(100));
        assert_eq!(parse_latency("100ms"), Ok(far));
        assert_eq!(
            parse_latency("100ms, 20ms"),
            Ok(far.with_jitter(Duration::from_millis(20)))
        );
        assert!(parse_latency("100ms,").is_err());
        assert!(parse_latency("far").is_err());
    }
}
