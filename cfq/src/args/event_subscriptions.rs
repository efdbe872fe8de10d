//! The command line of `cfq subscriptions` and `cfq events`: event
//! subscriptions, which send other Cloudflare products' events into a
//! queue, and the events the emulator emits into them.

use clap::builder::PossibleValuesParser;
use clap::{ArgGroup, Args, Subcommand};

use super::{Global, Target};

pub(super) const SUBSCRIPTIONS_LONG: &str = "\
List, show, create, update and delete the account's event subscriptions: each sends the events \
of another Cloudflare product (R2, KV, Workers AI, Workers Builds, Workflows, Vectorize, Super \
Slurper, ...) as messages into a queue, which pulls them like any other message.

`list` lists every subscription of the account, or with --queue those into one queue \
(CFQ_QUEUE does not narrow the list). `info ID` (or `get ID`) shows one. A source is its type \
(`cfq events list` shows the documented ones and their events) and, for the sources of one \
resource (workersAi.model, workersBuilds.worker, workers.script, workflows.workflow), --resource \
names it. Cloudflare allows one subscription per source in an account (as users report).";

const EVENTS_LONG: &str = "\
The events Cloudflare documents for each source of an event subscription, and, against `cfq \
emulator`, events emitted on request.

`list` shows the catalogue: each source's events with what they mean (JSON: with the example \
message). `emit` asks the emulator to deliver one event: a message in Cloudflare's documented \
shape into the queue of every enabled subscription to the source whose events list it, its \
payload the documented example's unless --payload or --field say otherwise. It works against \
the emulator only (its own route); Cloudflare's products emit their own.";

#[derive(Debug, Args)]
#[command(arg_required_else_help = true)]
pub struct SubscriptionsArgs {
    #[command(subcommand)]
    pub command: SubscriptionsCommand,
}

#[derive(Debug, Subcommand)]
pub enum SubscriptionsCommand {
    /// List the account's event subscriptions, or those into the queue given
    List(SubscriptionListArgs),
    /// Show one event subscription by its id
    #[command(visible_alias = "get")]
    Info(SubscriptionInfoArgs),
    /// Subscribe the queue to a source's events
    Create(SubscriptionCreateArgs),
    /// Change a subscription's name, events, queue, or whether it delivers; the rest is kept
    Update(SubscriptionUpdateArgs),
    /// Delete a subscription: its source's events stop reaching the queue
    Delete(SubscriptionDeleteArgs),
}

impl SubscriptionsCommand {
    pub fn global(&self) -> &Global {
        match self {
            SubscriptionsCommand::List(a) => &a.global,
            SubscriptionsCommand::Info(a) => &a.global,
            SubscriptionsCommand::Create(a) => &a.global,
            SubscriptionsCommand::Update(a) => &a.global,
            SubscriptionsCommand::Delete(a) => &a.global,
        }
    }

    /// Whether the command may name a queue (`--queue`).
    pub fn takes_queue(&self) -> bool {
        matches!(
            self,
            SubscriptionsCommand::List(_) | SubscriptionsCommand::Create(_)
        )
    }
}

#[derive(Debug, Args)]
pub struct SubscriptionListArgs {
    #[command(flatten)]
    pub target: Target,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct SubscriptionInfoArgs {
    /// The subscription's id
    #[arg(value_name = "ID")]
    pub id: String,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct SubscriptionCreateArgs {
    #[command(flatten)]
    pub target: Target,

    /// The source's type, such as r2 or workflows.workflow
    #[arg(long, value_name = "TYPE", value_parser = PossibleValuesParser::new(cf_queues::event_subscriptions::SOURCE_TYPES))]
    pub source: String,

    /// The resource of a source of one resource: the model, Worker, script tag or Workflow
    #[arg(long, value_name = "NAME")]
    pub resource: Option<String>,

    /// The events it delivers, comma-separated, such as bucket.created,bucket.deleted
    #[arg(long, value_name = "EVENTS", value_delimiter = ',', required = true)]
    pub events: Vec<String>,

    /// Its name [default: the queue's name, a space and the source's type, as wrangler names it]
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,

    /// Create it disabled: it delivers nothing until enabled
    #[arg(long)]
    pub disabled: bool,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
#[command(group(
    ArgGroup::new("change")
        .args(["name", "events", "enable", "disable", "to"])
        .required(true)
        .multiple(true)
))]
pub struct SubscriptionUpdateArgs {
    /// The subscription's id
    #[arg(value_name = "ID")]
    pub id: String,

    /// A new name
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,

    /// The events it delivers from now on, comma-separated
    #[arg(long, value_name = "EVENTS", value_delimiter = ',')]
    pub events: Option<Vec<String>>,

    /// Deliver its events again
    #[arg(long, conflicts_with = "disable")]
    pub enable: bool,

    /// Deliver nothing until enabled
    #[arg(long)]
    pub disable: bool,

    /// Another queue for its events, by name or id
    #[arg(long, value_name = "QUEUE")]
    pub to: Option<String>,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct SubscriptionDeleteArgs {
    /// The subscription's id
    #[arg(value_name = "ID")]
    pub id: String,

    #[command(flatten)]
    pub global: Global,
}

/// `cfq events --help`: the text, then the catalogue's sources and events,
/// read from the one place they are kept.
pub(super) fn events_long() -> String {
    let mut text = EVENTS_LONG.to_owned();
    text.push_str("\n\nThe documented events, by source:");
    for source in documented_sources() {
        let events: Vec<&str> = cf_queues_emulator::catalogue::events()
            .iter()
            .filter(|d| d.source == source)
            .map(|d| d.event.as_str())
            .collect();
        text.push_str(&format!("\n  {source}: {}", events.join(", ")));
    }
    text.push_str("\n  images, workers.script: none documented");
    text
}

#[derive(Debug, Args)]
#[command(arg_required_else_help = true)]
pub struct EventsArgs {
    #[command(subcommand)]
    pub command: EventsCommand,
}

#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// The documented events of each source
    List(EventsListArgs),
    /// Emit an event into the subscribed queues (against `cfq emulator`)
    Emit(EventsEmitArgs),
}

impl EventsCommand {
    pub fn global(&self) -> &Global {
        match self {
            EventsCommand::List(a) => &a.global,
            EventsCommand::Emit(a) => &a.global,
        }
    }
}

#[derive(Debug, Args)]
pub struct EventsListArgs {
    /// Only this source's events
    #[arg(long, value_name = "TYPE", value_parser = PossibleValuesParser::new(documented_sources()))]
    pub source: Option<String>,

    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct EventsEmitArgs {
    /// The source's type, such as r2
    #[arg(long, value_name = "TYPE", value_parser = PossibleValuesParser::new(documented_sources()))]
    pub source: String,

    /// The event, such as bucket.created (`cfq events list` shows each source's)
    #[arg(long, value_name = "EVENT", value_parser = PossibleValuesParser::new(documented_events()), hide_possible_values = true)]
    pub event: String,

    /// Only into the subscriptions to this resource (a model, Worker, script tag or Workflow)
    #[arg(long, value_name = "NAME")]
    pub resource: Option<String>,

    /// The whole payload, a JSON object, instead of the documented example's
    #[arg(long, value_name = "JSON", conflicts_with = "field")]
    pub payload: Option<String>,

    /// One payload field over the example's, repeatable; a value that is JSON (3, true, {...})
    /// is taken as JSON, any other as text
    #[arg(long, value_name = "KEY=VALUE")]
    pub field: Vec<String>,

    #[command(flatten)]
    pub global: Global,
}

/// The sources with documented events, for `--source` and its completions.
fn documented_sources() -> Vec<&'static str> {
    cf_queues_emulator::catalogue::sources()
}

/// Every documented event's name, for `--event`'s completions; a name of
/// another source is refused later, naming the source's events.
fn documented_events() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = cf_queues_emulator::catalogue::events()
        .iter()
        .map(|d| d.event.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}
