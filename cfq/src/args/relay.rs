//! The command line of `cfq relay`: a queue's messages POSTed to an HTTP
//! service. Every default is the one `relay/mod.rs` documents with its
//! reason; the manual is `RELAY_LONG` and cfq's README.

use std::time::Duration;

use cf_queues::consumer::MIN_VISIBILITY_TIMEOUT;
use cf_queues::limits::{MAX_DELAY, MAX_VISIBILITY_TIMEOUT};
use cf_queues::resources::MAX_RETENTION;
use cf_queues::retry::LONGEST_SERVER_WAIT;
use clap::Args;

use super::{Global, Target, parse_duration, parse_duration_within as within};

pub(super) const RELAY_LONG: &str = "\
POST each message of the queue to an HTTP service, with the consumer runtime's guarantees: \
leases kept while the service works, acks batched, retries with a delay, the queue's \
dead-letter queue at the end, a clean stop on SIGTERM, and replicas sharing the queue's \
allowance. A sidecar for a service in any language: `cfq relay --queue orders --to \
http://127.0.0.1:8080/orders`.

The request: POST to --to, one message each, with the body decoded (json as the JSON text with \
Content-Type: application/json, text as text/plain; charset=utf-8, bytes as \
application/octet-stream; a body cfq cannot decode, such as v8, as application/octet-stream, \
base64-decoded when it is base64). The message's headers:
  Cfq-Message-Id     the message's id (as Cloudflare gives it at this delivery)
  Cfq-Attempts       its attempts, this delivery included (1 the first time)
  Cfq-Timestamp      when it was pushed, in Unix milliseconds
  Cfq-Queue-Id       the queue's id;   Cfq-Queue-Name  its name (when known)
  Cfq-Content-Type   text, json, bytes, v8, or the type the queue said
  Cfq-Metadata       the whole metadata, as JSON (non-ASCII escaped as \\uXXXX)
  Cfq-Meta-<key>     one per metadata entry whose key is a header name (strings
                     percent-encoded, other values as JSON); Cfq-Metadata is exact
--header 'Name: value' adds a header (repeatable); --header-env 'Name: VAR' adds one whose \
value is the environment variable VAR, read at start, for secrets (never on the command line). \
Cfq-* and the headers HTTP itself sets are refused, and so is any value holding a Cloudflare \
credential: the Cloudflare credentials are never sent to the service. No redirect is followed; \
the answer's body is read up to 4 KiB, for the failure line only.

The answer decides:
  2xx                          delivered: the message is acked
  no connection, a timeout,    the service is down or busy: the relay as a whole pauses
  429, 502, 503, 504           (--backoff, doubling; a Retry-After on 429 or 503 lengthens
                               the pause up to --max-pause, never shortens it), pulls nothing
                               meanwhile, and holds the messages it has, extending their
                               leases (no attempt used); after the pause one request probes,
                               and the rest follow once it is answered. A message held for
                               --hold of the service's down or busy time is retried with
                               --retry-delay (an attempt used).
  any other (3xx, 4xx, 500...) this message failed: retried after --retry-delay for its
                               attempts; the queue's max_retries and dead-letter queue decide
                               the end
A service down for minutes therefore costs no attempt and loses nothing. Without --batch the \
status alone decides, whatever the body does.

--concurrency bounds the POSTs in flight; the messages leased at once are sized from it and \
the round trip to the API (--max-in-flight to set them), so that the relay does not hide \
thousands of messages from other replicas while it waits for a slot. --timeout bounds each \
POST. The wait for a slot of a service that answers is bounded by the slot wait: --timeout for \
each round of --concurrency POSTs ahead of it; a message unsent after --hold + the slot wait is \
retried. Each message's lease is kept for --hold + slot wait + --timeout + --visibility at most; \
a --visibility under 8 round trips to the API is said at start. Every duration has bounds (see \
each option); outside them, exit 2.

Running: a start line on stderr, a line per kind of failure at most every 10 s (with counts and \
the escaped start of the answer), and the summary on stdout at the end (JSON off a terminal). \
SIGTERM, SIGINT or SIGHUP stops pulling, lets the POSTs in flight finish within --grace, gives the \
waiting messages back to the queue and flushes every ack, within --grace + 10 s; a second \
signal stops at once and says what was left. A service that is down never ends the relay. \
Several relays on one queue share its allowance as consumer replicas do.

Batches (--batch N): each request is a JSON array of up to N cfq records (the format of `cfq \
pull`: {\"cfq\":1,\"id\":…,\"attempts\":…,\"timestamp_ms\":…,\"content_type\":…,\"body\":…,\"metadata\":…}), \
at most --batch-bytes. A 2xx answer may name messages to retry: {\"retry\":[{\"id\":\"…\",\
\"delay_seconds\":30}]}; the others are acked. An empty answer, or a JSON object without \"retry\", \
acks them all; an answer that cannot be read (not a JSON object, another shape, a body cut short) \
retries them all, and a body not whole within --timeout holds them as a busy answer does; \
an id the batch did not hold is ignored and reported. Lambda's \
{\"batchItemFailures\":[{\"itemIdentifier\":\"…\"}]} is read as \"retry\".

Signatures (--sign-secret-env VAR): Cfq-Signature: t=<Unix seconds>,v1=<hex HMAC-SHA256 keyed \
with the secret, of t, a dot and the body>. The service recomputes it over the raw body and \
refuses an old t.

--max-age: a message pushed longer ago is not POSTed: with --max-age-action dead-letter (the \
default) it is retried at once until the queue's max_retries moves it to its dead-letter queue; \
with ack it is deleted. --wait-for-target pulls nothing until the service answers once (a 2xx from \
--health-url, or any answer but 502-504 from --to). --listen ADDR serves /healthz (the relay \
runs), /readyz (200 while it pulls and the service answers; 503 and why: waiting for the \
service, the service down or busy, the token blocked by Cloudflare, stopping) and /metrics \
(Prometheus: the consumer's figures, cfq_relay_*, and the queue's backlog read every \
--backlog-interval).

Exit codes: 0 a clean stop; 2 usage (a bad option, a header refused, no credentials); 3 the \
credentials refused; 4 no such queue (or HTTP pull not enabled); 5 and 6 an API or network \
failure that stopped the pulls; 7 acks or retries left unsent at the stop, or a second signal.";

/// Each duration option's bounds, and why: a value outside them is a usage
/// error (exit 2) before anything starts, and no sum of them can overflow.
///
/// | option | bounds | why |
/// |---|---|---|
/// | `--timeout` | 1 ms to 1 h | a POST holds a slot and a lease: a longer job answers 202 and works after |
/// | `--hold` | 1 ms to 24 h | a service down for a day is better met by the dead-letter queue |
/// | `--visibility` | 1 s to 12 h | the consumer's and Cloudflare's bounds on a lease |
/// | `--grace` | 0 to 1 h | a stop that takes longer is a hang |
/// | `--max-pause` | 0 to 5 min | the longest wait the library takes from any server |
/// | `--backoff` | 0 to 1 h each | the relay asks a down service at least hourly |
/// | `--retry-delay` | 0 to 24 h each | Cloudflare's longest retry delay |
/// | `--max-age` | 0 to 14 days | the longest retention: no message is older |
mod bounds {
    use super::{
        Duration, LONGEST_SERVER_WAIT, MAX_DELAY, MAX_RETENTION, MAX_VISIBILITY_TIMEOUT,
        MIN_VISIBILITY_TIMEOUT, Span, parse_span, within,
    };

    pub const MILLI: Duration = Duration::from_millis(1);
    pub const HOUR: Duration = Duration::from_secs(3_600);
    pub const DAY: Duration = Duration::from_secs(86_400);

    pub fn timeout(text: &str) -> Result<Duration, String> {
        within(text, MILLI, HOUR)
    }
    pub fn hold(text: &str) -> Result<Duration, String> {
        within(text, MILLI, DAY)
    }
    pub fn visibility(text: &str) -> Result<Duration, String> {
        within(text, MIN_VISIBILITY_TIMEOUT, MAX_VISIBILITY_TIMEOUT)
    }
    pub fn grace(text: &str) -> Result<Duration, String> {
        within(text, Duration::ZERO, HOUR)
    }
    pub fn max_pause(text: &str) -> Result<Duration, String> {
        within(text, Duration::ZERO, LONGEST_SERVER_WAIT)
    }
    pub fn max_age(text: &str) -> Result<Duration, String> {
        within(text, Duration::ZERO, MAX_RETENTION)
    }
    pub fn backoff(text: &str) -> Result<Span, String> {
        span_within(text, HOUR)
    }
    pub fn retry_delay(text: &str) -> Result<Span, String> {
        span_within(text, MAX_DELAY)
    }

    fn span_within(text: &str, max: Duration) -> Result<Span, String> {
        let span = parse_span(text)?;
        if span.max > max {
            return Err(format!(
                "{text}: must be at most {}",
                humantime::format_duration(max)
            ));
        }
        Ok(span)
    }
}

/// `cfq relay`.
#[derive(Debug, Args)]
pub struct RelayArgs {
    #[command(flatten)]
    pub target: Target,

    /// The URL each message is POSTed to (http or https, no user or password in it)
    #[arg(long, value_name = "URL", required = true)]
    pub to: String,

    /// A header for every request, 'Name: value' (repeatable)
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    pub headers: Vec<String>,

    /// A header whose value is the environment variable VAR, 'Name: VAR' (repeatable; for secrets)
    #[arg(long = "header-env", value_name = "NAME: VAR")]
    pub header_envs: Vec<String>,

    /// The most POSTs in flight at once
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub concurrency: u32,

    /// The longest one POST may take, its answer included (up to 1h)
    #[arg(long, value_name = "DURATION", value_parser = bounds::timeout, default_value = "10s")]
    pub timeout: Duration,

    /// The longest a message is held while the service is down or busy, before it is retried (up to 24h)
    #[arg(long, value_name = "DURATION", value_parser = bounds::hold, default_value = "10m")]
    pub hold: Duration,

    /// The delay of a message the service refused: DURATION, or MIN..MAX doubling per attempt (up to 24h)
    #[arg(long, value_name = "DELAY", default_value = "1s..5m", value_parser = bounds::retry_delay)]
    pub retry_delay: Span,

    /// The pause after the service was found down or busy: MIN..MAX, doubling while it lasts (up to 1h)
    #[arg(long, value_name = "MIN..MAX", default_value = "1s..30s", value_parser = bounds::backoff)]
    pub backoff: Span,

    /// The longest pause a Retry-After can ask for (up to 5m); it never shortens the backoff's
    #[arg(long, value_name = "DURATION", value_parser = bounds::max_pause, default_value = "60s")]
    pub max_pause: Duration,

    /// The lease of each pull, extended while a message is with the relay (1s to 12h)
    #[arg(long, value_name = "DURATION", value_parser = bounds::visibility, default_value = "30s")]
    pub visibility: Duration,

    /// How long POSTs in flight may finish after SIGTERM, up to 1h [default: 15s, or --timeout + 1s if longer]
    #[arg(long, value_name = "DURATION", value_parser = bounds::grace)]
    pub grace: Option<Duration>,

    /// The most messages leased at once [default: --concurrency + what a round trip brings]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_in_flight: Option<u32>,

    /// Up to N messages per POST, as a JSON array of cfq records (see the batch format)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub batch: Option<u32>,

    /// The most bytes of one batch's request (a larger message goes alone)
    #[arg(long, value_name = "BYTES", default_value_t = 1024 * 1024, requires = "batch", value_parser = clap::value_parser!(u64).range(1024..=100 * 1024 * 1024))]
    pub batch_bytes: u64,

    /// Sign each request with an HMAC-SHA256 keyed with the environment variable VAR (Cfq-Signature)
    #[arg(long, value_name = "VAR")]
    pub sign_secret_env: Option<String>,

    /// A message pushed longer ago than this is not POSTed but handled as --max-age-action says (up to 14d)
    #[arg(long, value_name = "DURATION", value_parser = bounds::max_age)]
    pub max_age: Option<Duration>,

    /// What becomes of a message past --max-age
    #[arg(
        long,
        value_enum,
        value_name = "ACTION",
        default_value = "dead-letter",
        requires = "max_age"
    )]
    pub max_age_action: MaxAgeAction,

    /// Pull nothing until the service answers (its --health-url, or --to) once
    #[arg(long)]
    pub wait_for_target: bool,

    /// The service's health URL, for --wait-for-target (a 2xx answer means up)
    #[arg(long, value_name = "URL", requires = "wait_for_target")]
    pub health_url: Option<String>,

    /// Serve /healthz, /readyz and /metrics (Prometheus) on this address, such as 127.0.0.1:9464
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,

    /// How often --listen reads the queue's backlog for /metrics: a call of the token's 1,200
    /// per 5 minutes each time (5s to 1h)
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = super::parse_backlog_interval, requires = "listen")]
    pub backlog_interval: Duration,

    #[command(flatten)]
    pub global: Global,
}

/// What becomes of a message past `--max-age`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MaxAgeAction {
    /// Retried at once, unsent, until the queue's max_retries moves it to its dead-letter queue
    DeadLetter,
    /// Acknowledged unsent: it is deleted
    Ack,
}

/// A duration, or a range of them: `5s`, `1s..5m`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub min: Duration,
    pub max: Duration,
}

/// `DURATION` (a fixed one) or `MIN..MAX`, min not above max.
pub fn parse_span(text: &str) -> Result<Span, String> {
    let Some((min, max)) = text.split_once("..") else {
        let fixed = parse_duration(text)?;
        return Ok(Span {
            min: fixed,
            max: fixed,
        });
    };
    let (min, max) = (parse_duration(min)?, parse_duration(max)?);
    if min > max {
        return Err(format!("{text}: the first duration is above the second"));
    }
    Ok(Span { min, max })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans() {
        let s = Duration::from_secs;
        assert_eq!(
            parse_span("5s"),
            Ok(Span {
                min: s(5),
                max: s(5)
            })
        );
        assert_eq!(
            parse_span("1s..5m"),
            Ok(Span {
                min: s(1),
                max: s(300)
            })
        );
        assert_eq!(
            parse_span("5m..1s"),
            Err("5m..1s: the first duration is above the second".into())
        );
        assert!(parse_span("1s..").is_err());
        assert!(parse_span("soon").is_err());
    }

    #[test]
    fn duration_options_refuse_zero_where_it_means_nothing() {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            relay: RelayArgs,
        }
        for (flag, zero_refused) in [
            ("--timeout", true),
            ("--hold", true),
            ("--visibility", true),
            ("--grace", false),
        ] {
            let parsed = Wrapper::try_parse_from(["relay", "--to", "http://x/", flag, "0s"]);
            assert_eq!(parsed.is_err(), zero_refused, "{flag} 0s");
        }
        assert_eq!(
            bounds::visibility("500ms"),
            Err("500ms: must be from 1s to 12h".into())
        );
        assert_eq!(
            bounds::backoff("1s..2h"),
            Err("1s..2h: must be at most 1h".into())
        );
    }
}
