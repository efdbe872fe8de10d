//! The command line of `cfq queues` and `cfq consumer`: queues and their
//! HTTP pull consumer as resources.

use std::time::Duration;

use clap::{ArgGroup, Args, Subcommand};

use super::{Global, Target, parse_delay, parse_duration};

pub(super) const QUEUES_LONG: &str = "\
List, show, create, update and delete the account's queues.

A queue is named by --queue (a name, or an id of 32 lowercase hex digits), --queue-id or --queue-name, \
as in every command. Settings are the queue's own: a delivery delay for messages pushed \
without one, how long an unconsumed message is kept, and whether delivery is paused. How \
messages are delivered to a consumer (retries, leases, the dead-letter queue) is set on its \
HTTP pull consumer: see `cfq consumer`.";

const CREATE_LONG: &str = "\
Create a queue and print its id, with the `export CFQ_QUEUE=...` line that makes it the queue \
of the commands that follow.

NAME is 1 to 63 lowercase letters, digits and dashes, not starting or ending with a dash (the \
rule Cloudflare states when it refuses a name). Settings given are set right after the create; \
a queue created without them has Cloudflare's defaults (no delay, 4 days of retention). A new \
queue has no consumer: enable HTTP pull with `cfq consumer enable --queue NAME` before pulling.";

pub(super) const CONSUMER_LONG: &str = "\
Enable, show and disable the HTTP pull consumer of a queue, which pulling, acknowledging and \
extending leases over HTTP need.

A queue has one consumer: HTTP pull, or a Worker. Its settings decide delivery: the batch size \
and lease of pulls that give none, the retries before a message is dropped or moved to the \
dead-letter queue, and the delay of a retry that gives none.";

const ENABLE_LONG: &str = "\
Enable HTTP pull on the queue with these settings; when it is enabled already, change the \
settings given and keep the others.

A setting never given has Cloudflare's default: batch size 5, 3 retries, no retry delay, a \
visibility timeout of 30s, no dead-letter queue (a message out of retries is deleted). The API \
takes the dead-letter queue by its name, and Cloudflare creates it when no queue has that name. \
--dead-letter-queue takes a name, or an id (32 lowercase hex digits) of one of the account's \
queues, which is set by that queue's name: an id is never made the name of a new queue. A value \
of that shape that is no queue's id is a name. --dead-letter-queue-id and \
--dead-letter-queue-name force one reading. To take a setting back to its default (the dead-letter queue among them), disable HTTP \
pull and enable it again. A queue consumed by a Worker is refused, not changed: a queue has one \
consumer.

Cloudflare can answer pulls with \"HTTP pull not enabled\" for up to a minute after it was \
enabled.";

const DISABLE_LONG: &str = "\
Disable HTTP pull on the queue by deleting its HTTP pull consumer: pulls, acknowledgements and \
lease extensions then fail until it is enabled again, and its settings are lost. Pushes are \
kept. Asks to type the queue's name first, unless --yes.";

#[derive(Debug, Args)]
#[command(arg_required_else_help = true)]
pub struct QueuesArgs {
    #[command(subcommand)]
    pub command: QueuesCommand,
}

#[derive(Debug, Subcommand)]
pub enum QueuesCommand {
    /// List every queue of the account: id, name, consumer, settings
    List(ListArgs),
    /// Show the queue: id, name, consumer, settings
    Info(InfoArgs),
    /// Create a queue, and set its settings
    #[command(long_about = CREATE_LONG)]
    Create(CreateArgs),
    /// Change settings of the queue; the others are kept
    Update(UpdateArgs),
    /// Delete the queue and every message in it; asks to type its name first
    Delete(DeleteArgs),
}

impl QueuesCommand {
    pub fn global(&self) -> &Global {
        match self {
            QueuesCommand::List(a) => &a.global,
            QueuesCommand::Info(a) => &a.global,
            QueuesCommand::Create(a) => &a.global,
            QueuesCommand::Update(a) => &a.global,
            QueuesCommand::Delete(a) => &a.global,
        }
    }

    /// Whether the command works on one existing queue (`--queue`).
    pub fn takes_queue(&self) -> bool {
        !matches!(self, QueuesCommand::List(_) | QueuesCommand::Create(_))
    }
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    #[command(flatten)]
    pub target: Target,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The new queue's name
    #[arg(value_name = "NAME")]
    pub name: String,

    /// Delay every message pushed without a delay of its own, such as 30s (at most 24h)
    #[arg(long, value_name = "DURATION", value_parser = parse_delay)]
    pub delivery_delay: Option<Duration>,

    /// Keep unconsumed messages this long, such as 1d (60s to 14d) [default: 4 days]
    #[arg(long, value_name = "DURATION", value_parser = parse_retention)]
    pub retention: Option<Duration>,

    /// Create it with delivery paused: pushes are kept, pulls get nothing until resumed
    #[arg(long)]
    pub paused: bool,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
// Clap's own usage line names every flag of the group, over 100 columns.
#[command(
    override_usage = "cfq queues update [--queue QUEUE] [--delivery-delay DURATION] \
                            [--retention DURATION]\n       [--paused | --resume] [OPTIONS]"
)]
#[command(group(
    ArgGroup::new("change")
        .args(["delivery_delay", "retention", "paused", "resume"])
        .required(true)
        .multiple(true)
))]
pub struct UpdateArgs {
    #[command(flatten)]
    pub target: Target,

    /// Delay every message pushed without a delay of its own, such as 30s (0s: none; at most 24h)
    #[arg(long, value_name = "DURATION", value_parser = parse_delay)]
    pub delivery_delay: Option<Duration>,

    /// Keep unconsumed messages this long, such as 1d (60s to 14d)
    #[arg(long, value_name = "DURATION", value_parser = parse_retention)]
    pub retention: Option<Duration>,

    /// Pause delivery: pushes are kept, pulls get nothing (409) until resumed
    #[arg(long, conflicts_with = "resume")]
    pub paused: bool,

    /// Resume delivery
    #[arg(long)]
    pub resume: bool,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    #[command(flatten)]
    pub target: Target,

    /// Do not ask for confirmation
    #[arg(long)]
    pub yes: bool,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
#[command(arg_required_else_help = true)]
pub struct ConsumerArgs {
    #[command(subcommand)]
    pub command: ConsumerCommand,
}

#[derive(Debug, Subcommand)]
pub enum ConsumerCommand {
    /// Enable HTTP pull on the queue, or change its HTTP pull settings
    #[command(long_about = ENABLE_LONG)]
    Enable(EnableArgs),
    /// Disable HTTP pull on the queue; asks to type its name first
    #[command(long_about = DISABLE_LONG)]
    Disable(DisableArgs),
    /// Show the queue's consumer: HTTP pull and its settings, a Worker, or none
    Info(ConsumerInfoArgs),
}

impl ConsumerCommand {
    pub fn global(&self) -> &Global {
        match self {
            ConsumerCommand::Enable(a) => &a.global,
            ConsumerCommand::Disable(a) => &a.global,
            ConsumerCommand::Info(a) => &a.global,
        }
    }
}

#[derive(Debug, Args)]
pub struct EnableArgs {
    #[command(flatten)]
    pub target: Target,

    /// Messages a pull that gives no batch size leases (1 to 100; Cloudflare's default: 5)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub batch_size: Option<u32>,

    /// Deliveries before a message is dropped or dead-lettered (0 to 100; Cloudflare's default: 3)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100))]
    pub max_retries: Option<u32>,

    /// Delay of a retry that gives none, such as 30s (at most 24h; Cloudflare's default: 0s)
    #[arg(long, value_name = "DURATION", value_parser = parse_delay)]
    pub retry_delay: Option<Duration>,

    /// Lease of a pull that gives none, such as 60s or 1500ms (at most 12h; Cloudflare's default: 30s)
    #[arg(long, value_name = "DURATION", value_parser = parse_visibility)]
    pub visibility_timeout: Option<Duration>,

    /// The queue that receives messages out of retries: a name (created if missing), or the id
    /// of a queue (32 lowercase hex digits), set by that queue's name
    #[arg(
        long,
        value_name = "QUEUE",
        conflicts_with_all = ["dead_letter_queue_id", "dead_letter_queue_name"]
    )]
    pub dead_letter_queue: Option<String>,

    /// The dead-letter queue by its id: the queue must exist, and is set by its name
    #[arg(long, value_name = "ID", conflicts_with = "dead_letter_queue_name")]
    pub dead_letter_queue_id: Option<String>,

    /// The dead-letter queue by its name, never read as an id (created if missing)
    #[arg(long, value_name = "NAME")]
    pub dead_letter_queue_name: Option<String>,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct DisableArgs {
    #[command(flatten)]
    pub target: Target,

    /// Do not ask for confirmation
    #[arg(long)]
    pub yes: bool,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct ConsumerInfoArgs {
    #[command(flatten)]
    pub target: Target,

    #[command(flatten)]
    pub global: Global,
}

/// A retention period within Cloudflare's 60 s to 14 days, refused while
/// parsing: `queues create` checks it before creating anything, so that a
/// bad value never leaves a queue created without its settings.
fn parse_retention(text: &str) -> Result<Duration, String> {
    use cf_queues::resources::{MAX_RETENTION, MIN_RETENTION};
    let period = parse_duration(text)?;
    if !(MIN_RETENTION..=MAX_RETENTION).contains(&period) {
        return Err("outside Cloudflare's range of 60s to 14d; nothing was sent".into());
    }
    Ok(period)
}

/// A visibility timeout of 1 ms to 12 hours, Cloudflare's bounds.
fn parse_visibility(text: &str) -> Result<Duration, String> {
    let timeout = parse_duration(text)?;
    if timeout.is_zero() || timeout > cf_queues::limits::MAX_VISIBILITY_TIMEOUT {
        return Err("outside Cloudflare's range of 1ms to 12h; nothing was sent".into());
    }
    Ok(timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_durations() {
        assert_eq!(parse_retention("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_retention("60"), Ok(Duration::from_secs(60)));
        assert!(parse_retention("59s").is_err());
        assert!(parse_retention("15d").is_err());
        assert_eq!(parse_visibility("1500ms"), Ok(Duration::from_millis(1500)));
        assert!(parse_visibility("0s").is_err());
        assert!(parse_visibility("13h").is_err());
    }
}
