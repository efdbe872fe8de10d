//! `cfq`: the cf-queues command-line tool.
//!
//! Pushes, pulls, peeks, drains and redrives the messages of Cloudflare
//! Queues, and runs the local emulator. `cfq --help` documents the
//! commands, the exit codes and the message file format.

mod args;
mod confirm;
mod emulator;
mod event_subscriptions;
mod exit;
mod flag_defaults;
mod management;
mod messages;
mod ndjson;
mod output;
mod prometheus;
mod relay;
mod session;
mod shell_words;
mod signals;
mod stderr;

use std::process::ExitCode;

use clap::{CommandFactory as _, Parser as _};

use args::{
    Cli, Command, ConsumerCommand, EventsCommand, Global, QueueRef, QueuesCommand,
    SubscriptionsCommand,
};
use exit::{Code, Failure};
use output::Output;
use session::{Account, Session};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // Help and version go to stdout and may meet a closed pipe: never panic.
            let _ = error.print();
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
        }
    };
    let global = match global_options(&cli) {
        Ok(global) => global,
        Err(failure) => return failure.report(),
    };
    if global.verbose > 0 {
        init_tracing(global.verbose);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return Failure::local(format_args!("cannot start: {e}")).report(),
    };
    match runtime.block_on(run(cli, &global)) {
        Ok(code) => code.into(),
        Err(failure) => failure.report(),
    }
}

/// Request tracing on stderr: this crate's spans and events only. They
/// name operations, queues, statuses and timings, never header values, so
/// credentials cannot show (see `tests/logging.rs`).
fn init_tracing(verbosity: u8) {
    use tracing_subscriber::layer::SubscriberExt as _;
    let level = if verbosity > 1 {
        tracing::Level::TRACE
    } else {
        tracing::Level::DEBUG
    };
    let filter = tracing_subscriber::filter::Targets::new().with_target("cf_queues", level);
    let subscriber = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(stderr::is_terminal())
        .with_max_level(level)
        // Each call and attempt is a span: report it when it ends, with its status and timing.
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .finish()
        .with(filter);
    let _ = tracing::subscriber::set_global_default(subscriber);
}

/// The global options, given before the command's name or after it.
/// Given before `emulator` or `completions`, which take none, they are
/// refused rather than ignored: `cfq --queue jobs emulator --strict` would
/// otherwise start an emulator without the queue.
fn global_options(cli: &Cli) -> Result<Global, Failure> {
    if let Command::Queues(queues) = &cli.command
        && !queues.command.takes_queue()
        && cli.top_queue().is_some()
    {
        return Err(Failure::usage(
            "--queue, --queue-id and --queue-name do not apply to `cfq queues list` or \
             `cfq queues create`",
        ));
    }
    if matches!(cli.command, Command::Events(_)) && cli.top_queue().is_some() {
        return Err(Failure::usage(
            "--queue, --queue-id and --queue-name do not apply to `cfq events`: an event goes \
             into every subscribed queue (narrow it with --resource)",
        ));
    }
    if let Command::Subscriptions(subscriptions) = &cli.command
        && !subscriptions.command.takes_queue()
        && cli.top_queue().is_some()
    {
        return Err(Failure::usage(
            "--queue, --queue-id and --queue-name apply only to `cfq subscriptions list` and \
             `cfq subscriptions create`",
        ));
    }
    match cli.command.global() {
        Some(after) => Ok(cli.global.merged(after)),
        None if cli.global.is_empty() && cli.top_queue().is_none() => Ok(Global::default()),
        None => Err(Failure::usage(
            "--queue, --queue-id, --queue-name, --account, --base-url, --output and --verbose \
             before the command do not apply to `cfq emulator` or `cfq completions`",
        )
        .with_hint("the emulator's own options (its --queue, --token) go after `emulator`")),
    }
}

async fn run(cli: Cli, global: &Global) -> Result<Code, Failure> {
    let out = Output::new(global.output);
    let top_queue = cli.top_queue();
    // The queue given after the command wins over the one before it, as
    // the other global options do; `CFQ_QUEUE` comes last (in Session).
    let session = |after: Option<QueueRef>| Session::open(global, after.or(top_queue.clone()), out);
    let account = || Account::open(global, out);
    // A command on the queue its arguments name (or the one before it).
    macro_rules! on_queue {
        ($command:path, $args:ident) => {
            $command(&session($args.target.given()).await?, &$args).await
        };
    }
    match cli.command {
        Command::Push(args) => on_queue!(messages::push::push, args),
        Command::Pull(args) => on_queue!(messages::pull::pull, args),
        Command::Ack(args) => on_queue!(messages::pull::ack, args),
        Command::Retry(args) => on_queue!(messages::pull::retry, args),
        Command::Extend(args) => on_queue!(messages::pull::extend, args),
        Command::Peek(args) => on_queue!(messages::pull::peek, args),
        Command::Metrics(args) => on_queue!(messages::metrics_and_purge::metrics, args),
        Command::Purge(args) => on_queue!(messages::metrics_and_purge::purge, args),
        Command::Drain(args) => on_queue!(messages::drain::drain, args),
        Command::Move(args) => {
            messages::drain::move_messages(&session(args.source().given()).await?, &args).await
        }
        Command::Relay(args) => on_queue!(relay::relay, args),
        Command::Replay(args) => {
            // The destination is the session's queue; `--to` is required,
            // so neither the queue before the command nor CFQ_QUEUE applies.
            let Some(to) = args.destination.given() else {
                return Err(Failure::usage("no queue: pass --to QUEUE"));
            };
            let session = Session::open(global, Some(to), out).await?;
            messages::push::replay(&session, &args).await
        }
        Command::Queues(queues) => match queues.command {
            QueuesCommand::List(args) => management::queues::list(&account()?, &args).await,
            QueuesCommand::Create(args) => management::queues::create(&account()?, &args).await,
            QueuesCommand::Info(args) => on_queue!(management::queues::info, args),
            QueuesCommand::Update(args) => on_queue!(management::queues::update, args),
            QueuesCommand::Delete(args) => on_queue!(management::queues::delete, args),
        },
        Command::Consumer(consumer) => match consumer.command {
            ConsumerCommand::Enable(args) => on_queue!(management::consumers::enable, args),
            ConsumerCommand::Disable(args) => on_queue!(management::consumers::disable, args),
            ConsumerCommand::Info(args) => on_queue!(management::consumers::info, args),
        },
        Command::Subscriptions(subscriptions) => match subscriptions.command {
            // Without a queue, the account's: CFQ_QUEUE does not narrow a list.
            SubscriptionsCommand::List(args) => match args.target.given().or(top_queue.clone()) {
                Some(queue) => {
                    let session = Session::open(global, Some(queue), out).await?;
                    event_subscriptions::subscriptions::list_of_queue(&session, &args).await
                }
                None => event_subscriptions::subscriptions::list(&account()?, &args).await,
            },
            SubscriptionsCommand::Info(args) => {
                event_subscriptions::subscriptions::info(&account()?, &args).await
            }
            SubscriptionsCommand::Create(args) => {
                on_queue!(event_subscriptions::subscriptions::create, args)
            }
            SubscriptionsCommand::Update(args) => {
                event_subscriptions::subscriptions::update(&account()?, &args).await
            }
            SubscriptionsCommand::Delete(args) => {
                event_subscriptions::subscriptions::delete(&account()?, &args).await
            }
        },
        Command::Events(events) => match events.command {
            EventsCommand::List(args) => event_subscriptions::events::list(out, &args),
            EventsCommand::Emit(args) => {
                event_subscriptions::events::emit(&account()?, &args).await
            }
        },
        Command::Emulator(args) => emulator::serve(args).await,
        Command::Completions(args) => {
            let mut buffer = Vec::new();
            clap_complete::generate(args.shell, &mut Cli::command(), "cfq", &mut buffer);
            out.line(String::from_utf8_lossy(&buffer).trim_end())?;
            Ok(Code::Ok)
        }
    }
}
