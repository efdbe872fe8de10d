//! The command line, declared with clap's derive API.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

mod emulator;
mod event_subscriptions;
mod management;
mod relay;

pub use emulator::{EmulatorArgs, RateLimitsChoice};
pub use event_subscriptions::{
    EventsArgs, EventsCommand, EventsEmitArgs, EventsListArgs, SubscriptionCreateArgs,
    SubscriptionDeleteArgs, SubscriptionInfoArgs, SubscriptionListArgs, SubscriptionUpdateArgs,
    SubscriptionsArgs, SubscriptionsCommand,
};
pub use management::{
    ConsumerArgs, ConsumerCommand, ConsumerInfoArgs, CreateArgs, DeleteArgs, DisableArgs,
    EnableArgs, InfoArgs, ListArgs, QueuesArgs, QueuesCommand, UpdateArgs,
};
pub use relay::{MaxAgeAction, RelayArgs, Span};

const ABOUT: &str =
    "Push, pull, peek, drain and redrive the messages of Cloudflare Queues over HTTP";

const LONG_ABOUT: &str = "\
Push, pull, peek, drain and redrive the messages of Cloudflare Queues over HTTP.

Credentials come from the environment, as for the cf-queues library and Cloudflare's SDKs: \
CLOUDFLARE_API_TOKEN (a token with the Queues Read and Queues Edit permissions), or \
CLOUDFLARE_API_KEY with CLOUDFLARE_EMAIL. The account comes from --account or \
CLOUDFLARE_ACCOUNT_ID, the queue from --queue or CFQ_QUEUE, and the API root from --base-url \
or CLOUDFLARE_BASE_URL, which lets cfq talk to `cfq emulator`. Tokens are never taken on the command line, where \
other users of the machine could read them; the one exception is `cfq emulator --token`, the \
token the local emulator accepts, not one cfq sends.

A queue is named by its name or its id: a value of --queue (or CFQ_QUEUE, or --to) of 32 \
lowercase hex digits is an id, any other is looked up as a name (once per command). A name no \
queue has is an error (exit 4) that names the account's queues with a near name; it is never \
tried as an id, since a lax server (`cfq emulator`) makes a queue spring into being for any id, \
and a typo would push to a queue nobody reads. --queue-id and --queue-name force one reading: \
--queue-id takes any value as an id (the emulator's free-form ids). `cfq queues list` shows every \
queue's name and id.

From nothing to a running consumer: `cfq queues create orders`, then \
`cfq consumer enable --queue orders` (HTTP pull, which pulling needs; or \
`wrangler queues consumer http add orders`, or the dashboard), then `cfq push --queue orders \
hello` and `cfq pull --queue orders`.";

/// Printed after `cfq --help`: exit codes and the message file format.
const AFTER_LONG_HELP: &str = "\
Output:
  JSON lines when stdout is not a terminal, a table when it is; --output chooses. Every message
  that pull and peek print in JSON is a cfq record (see below), so their output can be pushed
  back with `cfq push --file`. Errors and warnings go to stderr, one line each, with a hint for
  the common causes.

Exit codes:
  0  success (also when stdout was closed early, as by `cfq peek | head -1`)
  1  a local failure: a file that cannot be read or written, a purge, a deletion or a
     disabling not confirmed
  2  usage or configuration: a bad flag, a missing account, queue or credentials,
     a value over a documented limit (nothing was sent)
  3  authentication: credentials refused, or a token without the Queues permissions
  4  not found: no queue of that id or name in this account
  5  API error: any other failure answered by the API
  6  network: the API could not be reached, or did not answer in time
  7  partial: the command ran to its end but left something behind: lines of a file
     not pushed, messages not moved, leases or refs answered with warnings, messages that
     came without a lease id (written, pushed or printed, but not settled), a purge --all
     that started but did not complete within --timeout; also a push --file or replay
     stopped by SIGINT, SIGTERM or SIGHUP (it prints its summary and the command that resumes it),
     and a relay that stopped with acks or retries unsent, or on a second signal

The message file format (what `drain` writes, `push --file` and `replay` read):
  UTF-8, one message per line. Blank lines are skipped. A line that is a JSON object with a
  top-level \"cfq\" key is a cfq record:

    {\"cfq\":1,\"id\":\"…\",\"attempts\":2,\"timestamp_ms\":1767225600000,
     \"content_type\":\"json\",\"body\":{\"order\":42},\"metadata\":{…}}

  \"cfq\" is the record version (1). \"content_type\" is text, json, bytes, v8 or what the queue
  said. \"body\" is the decoded body: a string for text, any JSON value for json. Bodies that
  cannot be decoded here (bytes, v8, unknown types, json that does not parse) are kept in
  \"body_raw\" exactly as the API sent them (base64 for bytes and json). \"id\", \"attempts\",
  \"timestamp_ms\" and \"metadata\" record the message as it was received and are not pushed
  again; other keys (pull's \"lease_id\", peek's \"ref\") are ignored on reading.
  Any other line is a plain message: a JSON object is a json message, anything else a text
  message (a trailing CR is dropped; --text makes every line text, records included). To push
  a JSON object that has a top-level \"cfq\" key of its own, write it as a record:
  {\"cfq\":1,\"content_type\":\"json\",\"body\":{…}}.
  A line a reader cannot trust is refused, wherever it stands in the file: a line that starts
  with { (after blanks) but is not a JSON object (a typo, or a record torn by a crash, with or
  without the line ending drain adds to heal it), and a line with a NUL byte (what a power
  loss can leave), the latter even with --text. A refused line is never pushed, as text or
  otherwise: it is named by its number and reason on stderr and in the summary's \"refused\",
  it stays in the file, the rest of the file still goes, and the run exits 7. Records whose
  body HTTP cannot push (bytes, v8, JSON that is not an object) are refused the same way;
  nothing is dropped.";

#[derive(Debug, Parser)]
#[command(
    name = "cfq",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_long_help = AFTER_LONG_HELP,
    arg_required_else_help = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,

    /// The queue, by name or id, for commands that work on one queue (also accepted after the
    /// command)
    #[arg(
        long = "queue",
        id = "top_queue",
        value_name = "QUEUE",
        conflicts_with_all = ["top_queue_id", "top_queue_name"]
    )]
    pub queue: Option<String>,

    /// The queue by its id, never looked up as a name (also accepted after the command)
    #[arg(
        long = "queue-id",
        id = "top_queue_id",
        value_name = "QUEUE_ID",
        conflicts_with = "top_queue_name"
    )]
    pub queue_id: Option<String>,

    /// The queue by its name, never read as an id (also accepted after the command)
    #[arg(long = "queue-name", id = "top_queue_name", value_name = "NAME")]
    pub queue_name: Option<String>,

    #[command(subcommand)]
    pub command: Command,
}

/// Options of every command that talks to the API, before or after its
/// name. Not clap's `global`: that would offer them to `emulator` and
/// `completions` too, which have no use for them.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The account id [default: CLOUDFLARE_ACCOUNT_ID]
    #[arg(long, value_name = "ACCOUNT_ID")]
    pub account: Option<String>,

    /// The API root, such as an emulator's URL [default: CLOUDFLARE_BASE_URL, or Cloudflare's]
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// How to print results [default: table on a terminal, JSON lines otherwise]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub output: Option<OutputFormat>,

    /// Trace requests on stderr (operation, queue, status, timing; never credentials); -vv for more
    #[arg(long, short, action = ArgAction::Count)]
    pub verbose: u8,
}

impl Global {
    /// These options given before the command's name, completed by
    /// `after`, given after it; after wins, as the later flag does in
    /// most tools.
    pub fn merged(&self, after: &Global) -> Global {
        Global {
            account: after.account.clone().or_else(|| self.account.clone()),
            base_url: after.base_url.clone().or_else(|| self.base_url.clone()),
            output: after.output.or(self.output),
            verbose: self.verbose.saturating_add(after.verbose),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.account.is_none()
            && self.base_url.is_none()
            && self.output.is_none()
            && self.verbose == 0
    }
}

impl Cli {
    /// The queue given before the command's name, if any.
    pub fn top_queue(&self) -> Option<QueueRef> {
        QueueRef::from_flags(&self.queue, &self.queue_id, &self.queue_name)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// One JSON object per line
    Json,
    /// Aligned columns for people
    Table,
}

/// How a queue was named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueRef {
    /// `--queue` or `CFQ_QUEUE`: an id when it is 32 lowercase hex digits,
    /// otherwise a name (one no queue has is an error, never an id).
    Either(String),
    /// `--queue-id`: an id, never looked up.
    Id(String),
    /// `--queue-name`: a name, even one that looks like an id.
    Name(String),
}

impl QueueRef {
    /// The one of three conflicting flags that was given (clap refuses two).
    pub fn from_flags(
        either: &Option<String>,
        id: &Option<String>,
        name: &Option<String>,
    ) -> Option<QueueRef> {
        either
            .clone()
            .map(QueueRef::Either)
            .or_else(|| id.clone().map(QueueRef::Id))
            .or_else(|| name.clone().map(QueueRef::Name))
    }
}

/// The queue a command works on.
#[derive(Debug, Args, Clone, Default)]
pub struct Target {
    /// The queue, by name or id (32 lowercase hex digits are an id) [env: CFQ_QUEUE]
    #[arg(
        long,
        short = 'q',
        value_name = "QUEUE",
        conflicts_with_all = ["queue_id", "queue_name"]
    )]
    pub queue: Option<String>,

    /// The queue by its id, never looked up as a name
    #[arg(long, value_name = "QUEUE_ID", conflicts_with = "queue_name")]
    pub queue_id: Option<String>,

    /// The queue by its name, never read as an id
    #[arg(long, value_name = "NAME")]
    pub queue_name: Option<String>,
}

impl Target {
    pub fn given(&self) -> Option<QueueRef> {
        QueueRef::from_flags(&self.queue, &self.queue_id, &self.queue_name)
    }
}

/// The queue messages are pushed to: `replay --to` and `move --to`.
#[derive(Debug, Args, Clone)]
#[group(required = true, multiple = false)]
pub struct Destination {
    /// The queue to push the messages to, by name or id (32 lowercase hex digits are an id)
    #[arg(long, value_name = "QUEUE")]
    pub to: Option<String>,

    /// The queue to push the messages to, by its id, never looked up as a name
    #[arg(long, value_name = "QUEUE_ID")]
    pub to_id: Option<String>,

    /// The queue to push the messages to, by its name, never read as an id
    #[arg(long, value_name = "NAME")]
    pub to_name: Option<String>,
}

impl Destination {
    pub fn given(&self) -> Option<QueueRef> {
        QueueRef::from_flags(&self.to, &self.to_id, &self.to_name)
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Push one message, or every line of a file
    #[command(long_about = PUSH_LONG)]
    Push(PushArgs),
    /// Lease messages and print them, optionally acknowledging them
    #[command(long_about = PULL_LONG)]
    Pull(PullArgs),
    /// Acknowledge leased messages by lease id: they are deleted
    Ack(AckArgs),
    /// Put leased messages back on the queue, now or after a delay
    Retry(RetryArgs),
    /// Keep leased messages leased for longer, without using an attempt
    Extend(ExtendArgs),
    /// Show messages without leasing them
    Peek(PeekArgs),
    /// Show the queue's backlog: messages, bytes, age of the oldest
    Metrics(MetricsArgs),
    /// Delete peeked messages by ref, or every message of the queue with --all
    Purge(PurgeArgs),
    /// Move every message of the queue into a file, durably
    #[command(long_about = DRAIN_LONG)]
    Drain(DrainArgs),
    /// Push a drained file (or any message file) to a queue
    #[command(long_about = REPLAY_LONG)]
    Replay(ReplayArgs),
    /// Move messages from one queue to another (dead-letter redrive)
    #[command(name = "move", long_about = MOVE_LONG)]
    Move(MoveArgs),
    /// POST each message of the queue to an HTTP service, acked on 2xx (a sidecar)
    #[command(long_about = relay::RELAY_LONG)]
    Relay(RelayArgs),
    /// List, show, create, update and delete queues
    #[command(long_about = management::QUEUES_LONG)]
    Queues(QueuesArgs),
    /// Enable, show and disable a queue's HTTP pull consumer
    #[command(long_about = management::CONSUMER_LONG)]
    Consumer(ConsumerArgs),
    /// List, show, create, update and delete the event subscriptions that send other products'
    /// events into queues
    #[command(long_about = event_subscriptions::SUBSCRIPTIONS_LONG)]
    Subscriptions(SubscriptionsArgs),
    /// The documented events of each source; emit one into the subscribed queues (emulator)
    #[command(long_about = event_subscriptions::events_long())]
    Events(EventsArgs),
    /// Run a local emulator of the Queues messages API
    #[command(long_about = EMULATOR_LONG)]
    Emulator(EmulatorArgs),
    /// Print a shell completion script
    #[command(long_about = COMPLETIONS_LONG)]
    Completions(CompletionsArgs),
}

impl Command {
    /// The global options given after the command's name; `None` for the
    /// commands that do not talk to the API and take none.
    pub fn global(&self) -> Option<&Global> {
        match self {
            Command::Push(a) => Some(&a.global),
            Command::Pull(a) => Some(&a.global),
            Command::Ack(a) => Some(&a.global),
            Command::Retry(a) => Some(&a.global),
            Command::Extend(a) => Some(&a.global),
            Command::Peek(a) => Some(&a.global),
            Command::Metrics(a) => Some(&a.global),
            Command::Purge(a) => Some(&a.global),
            Command::Drain(a) => Some(&a.global),
            Command::Replay(a) => Some(&a.global),
            Command::Move(a) => Some(&a.global),
            Command::Relay(a) => Some(&a.global),
            Command::Queues(a) => Some(a.command.global()),
            Command::Consumer(a) => Some(a.command.global()),
            Command::Subscriptions(a) => Some(a.command.global()),
            Command::Events(a) => Some(a.command.global()),
            Command::Emulator(_) | Command::Completions(_) => None,
        }
    }
}

const PUSH_LONG: &str = "\
Push one message, or every line of a file.

With BODY (or - to read the body from stdin), pushes one text message, or a JSON message with \
--json (the body must then be a JSON object). A body read from stdin loses one trailing line \
ending (a newline, or CR LF), as the shell's $(...) does: `echo x | cfq push -q Q -` pushes \
\"x\". Other line endings are kept.

With --file, pushes every line of a message file (see `cfq --help` for the format): plain \
lines and cfq records, any number of them, in batches that fit Cloudflare's limits. A line \
that cannot be pushed is reported by its number and the others still go. Batches are sent in \
order and the run stops at the first batch that fails, reporting the lines it held and the \
whole command that resumes right there: the same queue and flags, with --skip N, quoted for \
the shell. Without a terminal, a line on stderr follows every batch that landed, so that a \
killed run can be resumed from its log. A batch that failed in a way that leaves it unknown \
whether it landed (a 5xx, a timeout) is said to be so: resuming may push it twice.

Every way the run can stop prints the summary and the resume command: a failed batch, a read \
error (exit 1), and SIGINT, SIGTERM or SIGHUP (exit 7). On the first signal the batch in flight is \
awaited, within the call's deadline, and nothing more is sent; a second signal stops at once, \
and the batch it abandons is reported as one that may have landed.";

const PULL_LONG: &str = "\
Lease up to --batch messages for --visibility and print them, with the body decoded.

A pulled message has used one of its attempts. Acknowledge it with --ack (after it was \
printed), give it back with --retry-after, or settle it later with `cfq ack`/`cfq retry` and \
its lease id; otherwise it comes back after the visibility timeout. To look without leasing, \
use `cfq peek`. A message the API sent without a lease id is printed but cannot be settled: \
--ack and --retry-after settle the others and exit 7.

Pulling needs HTTP pull enabled on the queue: `cfq consumer enable --queue QUEUE` (or \
`wrangler queues consumer http add QUEUE_NAME`).";

const DRAIN_LONG: &str = "\
Pull every message of the queue, append it to FILE as a cfq record, and acknowledge it: until \
a pull comes back empty, or --max messages.

Durable: a batch is acknowledged only after its lines were written, flushed and synced to \
disk (fsync). A drain killed at any point loses nothing: what was not acknowledged comes back \
on the queue after the visibility timeout. At least once: a message whose line was synced but \
whose acknowledgement did not land is in the file and back on the queue, so a second drain \
writes it again.

A message the API sent without a lease id cannot be acknowledged: it is written, reported by \
line (exit 7), and the rest of its batch is acknowledged. It comes back after the visibility \
timeout, and each later delivery is written again and counted, so the file holds at most \
max_retries copies of it (the queue then drops it, or moves it to its dead-letter queue).

FILE is appended to, never truncated. Bodies HTTP cannot push back (bytes, v8) are kept too, \
and reported by line. Push the file back with `cfq replay FILE --to QUEUE`.

Draining pulls, which needs HTTP pull enabled on the queue: `cfq consumer enable --queue QUEUE` \
(or `wrangler queues consumer http add QUEUE_NAME`).";

const REPLAY_LONG: &str = "\
Push every line of FILE to the queue given with --to, as `cfq push --file` does, with the same \
reports and resume rules: bad lines are named by number, the run stops at the first batch \
that fails, and --skip N resumes after line N. Records keep their body and content type; \
their attempts, timestamp and id are not pushed (a pushed message starts afresh).";

const MOVE_LONG: &str = "\
Move messages from --queue to --to, as a dead-letter redrive: pull a batch, push what HTTP \
can push, and acknowledge each message only after the push holding it landed.

At least once: a message whose push landed but whose acknowledgement did not is on both \
queues. A message whose body HTTP cannot push (bytes, v8, JSON that is not an object) is \
left on its queue, unacknowledged, and reported. While the run goes, its lease is extended \
(which uses no attempt), so that the run never pulls it twice, however long it lasts; it comes \
back on its queue --visibility after the run ends, having used the one attempt of its pull (a \
message left behind by many runs reaches the queue's max_retries like any other). Should its \
lease not be kept (the extensions fail), the run stops early rather than pull it again.

A message the API sent without a lease id is pushed but cannot be acknowledged: it is \
reported (exit 7), the others are acknowledged, and it stays on --queue too. Each later \
delivery of it is pushed again and counted, so --to gets at most max_retries copies.";

const EMULATOR_LONG: &str = "\
Run a local emulator of the Cloudflare Queues messages API until Ctrl-C or SIGTERM.

It prints its base URL and credentials as `export CLOUDFLARE_...=` lines to paste into a \
shell; any client of the API, cfq included, can then talk to it. With --config, it declares \
the account's queues from a file first, and prints the id of each.";

const COMPLETIONS_LONG: &str = "\
Print a completion script for a shell. For example:
  bash: cfq completions bash > ~/.local/share/bash-completion/completions/cfq
  zsh:  cfq completions zsh > \"${fpath[1]}/_cfq\"
  fish: cfq completions fish > ~/.config/fish/completions/cfq.fish";

#[derive(Debug, Args)]
pub struct PushArgs {
    #[command(flatten)]
    pub target: Target,

    /// The message body; - reads it from stdin
    #[arg(
        value_name = "BODY",
        required_unless_present = "file",
        conflicts_with = "file"
    )]
    pub body: Option<String>,

    /// Push BODY as a JSON message (it must be a JSON object)
    #[arg(long, conflicts_with = "file")]
    pub json: bool,

    /// Delay delivery, such as 30s or 5m (at most 24h)
    #[arg(long, value_name = "DURATION", value_parser = parse_delay)]
    pub delay: Option<Duration>,

    /// Push every line of a message file (- for stdin)
    #[arg(long, short = 'f', value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// With --file: push every line as text, even JSON objects and records
    #[arg(long, requires = "file", conflicts_with = "body")]
    pub text: bool,

    /// With --file: skip the first N lines (to resume a run that stopped)
    #[arg(
        long,
        requires = "file",
        conflicts_with = "body",
        value_name = "N",
        default_value_t = 0
    )]
    pub skip: u64,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct PullArgs {
    #[command(flatten)]
    pub target: Target,

    /// How many messages to lease (1 to 100)
    #[arg(long, short = 'n', value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub batch: u32,

    /// How long the messages stay leased, such as 30s (at most 12h) [default: the queue's]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub visibility: Option<Duration>,

    /// Acknowledge the messages once printed: they are deleted
    #[arg(long, conflicts_with = "retry_after")]
    pub ack: bool,

    /// Give the messages back once printed, to be delivered again after DURATION (0s: at once;
    /// at most 24h)
    #[arg(long, value_name = "DURATION", value_parser = parse_delay)]
    pub retry_after: Option<Duration>,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct AckArgs {
    #[command(flatten)]
    pub target: Target,

    /// Lease ids from pull; - reads them from stdin, separated by white space
    #[arg(value_name = "LEASE", required = true)]
    pub leases: Vec<String>,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct RetryArgs {
    #[command(flatten)]
    pub target: Target,

    /// Deliver the messages again after this delay, at most 24h [default: at once]
    #[arg(long, value_name = "DURATION", value_parser = parse_delay)]
    pub delay: Option<Duration>,

    /// Lease ids from pull; - reads them from stdin, separated by white space
    #[arg(value_name = "LEASE", required = true)]
    pub leases: Vec<String>,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct ExtendArgs {
    #[command(flatten)]
    pub target: Target,

    /// The new visibility timeout, counted from now (at most 12h)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, required = true)]
    pub visibility: Duration,

    /// Lease ids from pull; - reads them from stdin, separated by white space
    #[arg(value_name = "LEASE", required = true)]
    pub leases: Vec<String>,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct PeekArgs {
    #[command(flatten)]
    pub target: Target,

    /// How many messages to show (1 to 100)
    #[arg(long, short = 'n', value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub batch: u32,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct MetricsArgs {
    #[command(flatten)]
    pub target: Target,

    /// Read the metrics again every DURATION (2s when not given) until
    /// Ctrl-C: on a terminal a live view with the change a second and
    /// sparklines of the last readings, else one JSON line each. Each
    /// reading is one request against the token's window of 1,200 per 5
    /// minutes: every 2s spends 150 of them (12.5 %); DURATION is at least
    /// 1s (a quarter), and the client slows down further when the server
    /// says the budget runs low
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = parse_duration,
        num_args = 0..=1,
        default_missing_value = "2s",
        require_equals = false
    )]
    pub watch: Option<Duration>,

    /// Serve the queues' backlog as Prometheus gauges on this address (/metrics) until Ctrl-C
    /// or SIGTERM: for an autoscaler that must see a backlog while no consumer runs
    #[arg(long, value_name = "ADDR", conflicts_with = "watch")]
    pub listen: Option<std::net::SocketAddr>,

    /// Another queue for --listen, by name or id (repeatable)
    #[arg(long = "also", value_name = "QUEUE", requires = "listen")]
    pub also: Vec<String>,

    /// How often --listen reads each queue's backlog: a call of the token's 1,200 per 5 minutes
    /// each time (5s to 1h)
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_backlog_interval)]
    pub backlog_interval: Duration,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct PurgeArgs {
    #[command(flatten)]
    pub target: Target,

    /// Refs from peek; - reads them from stdin, separated by white space
    #[arg(
        value_name = "REF",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub refs: Vec<String>,

    /// Delete every message of the queue, permanently; asks to type the queue id first
    #[arg(long)]
    pub all: bool,

    /// With --all: do not ask for confirmation
    #[arg(long, requires = "all", conflicts_with = "refs")]
    pub yes: bool,

    /// With --all: do not wait for the purge to complete
    #[arg(long, requires = "all", conflicts_with = "refs")]
    pub no_wait: bool,

    /// With --all: how long to wait for the purge to complete
    #[arg(long, requires = "all", conflicts_with = "refs", value_name = "DURATION", value_parser = parse_duration, default_value = "10m")]
    pub timeout: Duration,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct DrainArgs {
    #[command(flatten)]
    pub target: Target,

    /// The file to append the messages to
    #[arg(long, value_name = "FILE", required = true)]
    pub to: PathBuf,

    /// Stop after this many messages
    #[arg(long, value_name = "N")]
    pub max: Option<u64>,

    /// Messages per pull (1 to 100)
    #[arg(long, short = 'n', value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub batch: u32,

    /// How long each pulled batch stays leased while it is written
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub visibility: Duration,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The message file to push (- for stdin)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    #[command(flatten)]
    pub destination: Destination,

    /// Skip the first N lines (to resume a run that stopped)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub skip: u64,

    /// Delay delivery of every message, such as 30s (at most 24h)
    #[arg(long, value_name = "DURATION", value_parser = parse_delay)]
    pub delay: Option<Duration>,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct MoveArgs {
    /// The queue to move messages from, by name or id (32 lowercase hex digits are an id) [env: CFQ_QUEUE]
    // Its own fields, not a flattened Target: a doc comment on a flattened
    // struct does not reach clap, and this queue is the source.
    #[arg(
        long = "queue",
        short = 'q',
        value_name = "QUEUE",
        conflicts_with_all = ["from_id", "from_name"]
    )]
    pub from: Option<String>,

    /// The queue to move messages from, by its id, never looked up as a name
    #[arg(
        long = "queue-id",
        id = "from_id",
        value_name = "QUEUE_ID",
        conflicts_with = "from_name"
    )]
    pub from_id: Option<String>,

    /// The queue to move messages from, by its name, never read as an id
    #[arg(long = "queue-name", id = "from_name", value_name = "NAME")]
    pub from_name: Option<String>,

    #[command(flatten)]
    pub destination: Destination,

    /// Stop after this many messages
    #[arg(long, value_name = "N")]
    pub max: Option<u64>,

    /// Messages per pull (1 to 100)
    #[arg(long, short = 'n', value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub batch: u32,

    /// How long each pulled batch stays leased while it is pushed
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub visibility: Duration,

    #[command(flatten)]
    pub global: Global,
}

impl MoveArgs {
    pub fn source(&self) -> Target {
        Target {
            queue: self.from.clone(),
            queue_id: self.from_id.clone(),
            queue_name: self.from_name.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `30s`, `5m`, `1h 30m`, `250ms`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    humantime::parse_duration(text)
        .map_err(|e| format!("{e} (expected a duration such as 30s, 5m or 1h)"))
}

/// How often a backlog is read for gauges (`--backlog-interval`): 5 s to
/// 1 h. Each reading is a call of the token's budget; the library refuses
/// less than 5 s, and a gauge older than an hour misleads an autoscaler.
pub fn parse_backlog_interval(text: &str) -> Result<Duration, String> {
    parse_duration_within(
        text,
        cf_queues::consumer::MIN_BACKLOG_INTERVAL,
        Duration::from_secs(3_600),
    )
}

/// A duration from `min` to `max`, refused with both named.
pub fn parse_duration_within(text: &str, min: Duration, max: Duration) -> Result<Duration, String> {
    let value = parse_duration(text)?;
    if value < min || value > max {
        return Err(format!(
            "{text}: must be from {} to {}",
            humantime::format_duration(min),
            humantime::format_duration(max)
        ));
    }
    Ok(value)
}

/// A delay of delivery: a duration of at most 24 hours, Cloudflare's
/// limit. Refused while parsing, so that nothing is read or sent with it.
pub fn parse_delay(text: &str) -> Result<Duration, String> {
    let delay = parse_duration(text)?;
    if delay > cf_queues::limits::MAX_DELAY {
        return Err("over the limit of 24h on delays; nothing was sent".into());
    }
    Ok(delay)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("soon").is_err());
        assert_eq!(parse_delay("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(
            parse_delay("48h"),
            Err("over the limit of 24h on delays; nothing was sent".into())
        );
    }
}
