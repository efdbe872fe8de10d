//! The command line of `cfq subscriptions`: event subscriptions, which
//! send other Cloudflare products' events into a queue.

use clap::{Args, Subcommand};

use super::{Global, Target};

const SUBSCRIPTIONS_LONG: &str = "\
List and show the account's event subscriptions: each sends the events of another Cloudflare \
product (R2, KV, Workers AI, Workers Builds, Workflows, Vectorize, Super Slurper, ...) as \
messages into a queue, which pulls them like any other message.

`list` lists every subscription of the account, or with --queue those into one queue (CFQ_QUEUE does not narrow the list). `info ID` (or `get ID`) shows one.

Create, change and delete them with `wrangler queues subscription` or the crate's \
`Queue::create_event_subscription`; the emulator serves all five operations.";

#[derive(Debug, Args)]
#[command(long_about = SUBSCRIPTIONS_LONG, arg_required_else_help = true)]
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
}

impl SubscriptionsCommand {
    pub fn global(&self) -> &Global {
        match self {
            SubscriptionsCommand::List(a) => &a.global,
            SubscriptionsCommand::Info(a) => &a.global,
        }
    }

    /// Whether the command may name a queue (`--queue`).
    pub fn takes_queue(&self) -> bool {
        matches!(self, SubscriptionsCommand::List(_))
    }
}

#[derive(Debug, Args)]
pub struct SubscriptionListArgs {
    /// Only the subscriptions into this queue (CFQ_QUEUE does not apply: without one, every
    /// subscription of the account is listed)
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
