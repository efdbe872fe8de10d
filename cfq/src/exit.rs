//! Exit codes, and the one-line error reports with hints.
//!
//! The codes are documented in `cfq --help` (see `args.rs`); scripts rely
//! on them, so they never change meaning.

use std::fmt;
use std::io;
use std::process::ExitCode;

use cf_queues::operation::Operation;
use cf_queues::retry::RetryClass;
use cf_queues::{Error, codes};

use crate::shell_words::command_line;
use crate::shell_words::{QueueFlag, queue_words};

/// What a command's run ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Ok = 0,
    Local = 1,
    Usage = 2,
    Auth = 3,
    NotFound = 4,
    Api = 5,
    Network = 6,
    Partial = 7,
}

impl From<Code> for ExitCode {
    fn from(code: Code) -> ExitCode {
        ExitCode::from(code as u8)
    }
}

/// A command that did not succeed: the code to exit with, and what to tell.
#[derive(Debug)]
pub struct Failure {
    pub code: Code,
    /// One line for stderr; empty when there is nothing to say (stdout closed).
    pub message: String,
    pub hint: Option<String>,
}

/// What the user asked about: named in hints.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The queue's id, when known.
    pub queue: Option<String>,
    /// The queue's name, when known (or the value that was looked up as one).
    pub queue_name: Option<String>,
    pub account: Option<String>,
    pub base_url: Option<String>,
}

impl Context {
    /// The queue as a hint names it in a command: `--queue orders`.
    fn queue_flag(&self) -> String {
        match (&self.queue_name, &self.queue) {
            (None, None) => "--queue QUEUE".to_owned(),
            (name, id) => command_line(&queue_words(
                QueueFlag::Queue,
                name.as_deref(),
                id.as_deref().unwrap_or_default(),
            )),
        }
    }

    /// The queue as a hint names it in prose: its name, else its id.
    fn queue_text(&self) -> &str {
        self.queue_name
            .as_deref()
            .or(self.queue.as_deref())
            .unwrap_or("QUEUE")
    }
}

impl Failure {
    pub fn new(code: Code, message: impl fmt::Display) -> Failure {
        Failure {
            code,
            message: message.to_string(),
            hint: None,
        }
    }

    pub fn usage(message: impl fmt::Display) -> Failure {
        Failure::new(Code::Usage, message)
    }

    pub fn local(message: impl fmt::Display) -> Failure {
        Failure::new(Code::Local, message)
    }

    pub fn with_hint(mut self, hint: impl fmt::Display) -> Failure {
        self.hint = Some(hint.to_string());
        self
    }

    /// Stdout was closed by the reader (`| head`): stop quietly, successfully.
    pub fn stdout_closed() -> Failure {
        Failure::new(Code::Ok, "")
    }

    /// A write to stdout failed.
    pub fn stdout(error: io::Error) -> Failure {
        if error.kind() == io::ErrorKind::BrokenPipe {
            Failure::stdout_closed()
        } else {
            Failure::local(format_args!("cannot write to stdout: {error}"))
        }
    }

    /// A failed library call, with the code of its kind and a hint.
    pub fn call(error: &Error, context: &Context) -> Failure {
        Failure {
            code: code_of(error),
            message: error.to_string(),
            hint: hint(error, context),
        }
    }

    /// Prints the report on stderr and gives the exit code.
    pub fn report(&self) -> ExitCode {
        if !self.message.is_empty() {
            crate::stderr::note(format_args!("error: {}", self.message));
        }
        if let Some(hint) = &self.hint {
            crate::stderr::note(format_args!("hint: {hint}"));
        }
        self.code.into()
    }
}

/// The exit code of a library error.
pub fn code_of(error: &Error) -> Code {
    match error {
        Error::InvalidInput { .. } | Error::Config(_) => Code::Usage,
        Error::Transport { .. } | Error::Timeout { .. } => Code::Network,
        Error::Body(_) => Code::Local,
        _ if error.is_auth() => Code::Auth,
        _ if error.is_not_found() => Code::NotFound,
        _ => Code::Api,
    }
}

/// Whether a failed push or ack may still have taken effect: the request
/// was sent and its answer says nothing sure.
pub fn may_have_landed(error: &Error) -> bool {
    matches!(
        error.retry_class(),
        RetryClass::Transient | RetryClass::Throttled { refused: false, .. }
    )
}

fn needs_http_pull(operation: Option<Operation>) -> bool {
    matches!(
        operation,
        Some(Operation::Pull | Operation::Ack | Operation::Extend)
    )
}

/// How to enable HTTP pull, for the queue of `context`.
fn http_pull_hint(context: &Context) -> String {
    format!(
        "`cfq consumer enable {}` enables it (or `wrangler queues consumer http add {}`, or the \
         queue's settings in the dashboard)",
        context.queue_flag(),
        context.queue_name.as_deref().unwrap_or("QUEUE_NAME")
    )
}

/// Whether a name is one a queue can be created with, so that a hint may
/// offer `cfq queues create NAME`.
fn creatable(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

fn hint(error: &Error, context: &Context) -> Option<String> {
    let queue = context.queue_text();
    let account = context.account.as_deref().unwrap_or("ACCOUNT_ID");
    let status = error.status().unwrap_or(0);
    let error_codes = error.codes();
    match error {
        Error::Config(_) => Some(
            "set CLOUDFLARE_API_TOKEN (a token with Queues Read and Queues Edit) and \
             CLOUDFLARE_ACCOUNT_ID, or pass --account"
                .into(),
        ),
        Error::InvalidInput { .. } => None,
        Error::Transport { .. } | Error::Timeout { .. } => Some(format!(
            "could not reach {}: check the network, a proxy, or --base-url / CLOUDFLARE_BASE_URL",
            context
                .base_url
                .as_deref()
                .unwrap_or(cf_queues::Client::DEFAULT_BASE_URL)
        )),
        Error::UnknownQueueName { name, .. } => {
            let mut text = format!(
                "no queue is named {name:?} in account {account}: `cfq queues list` shows its \
                 queues, with their names and ids"
            );
            if creatable(name) {
                text.push_str(&format!("; `cfq queues create {name}` creates it"));
            }
            Some(text)
        }
        Error::AmbiguousQueueName { .. } => {
            Some("name the queue by its id with --queue-id (`cfq queues list` shows them)".into())
        }
        Error::OtherConsumer { .. } => Some(format!(
            "`cfq consumer info {}` shows the queue's consumer",
            context.queue_flag()
        )),
        _ if error.is_auth() => Some(format!(
            "the credentials were refused or lack a permission: cfq needs an API token \
             (CLOUDFLARE_API_TOKEN) with the Queues Read and Queues Edit permissions on account \
             {account}; check --account / CLOUDFLARE_ACCOUNT_ID too"
        )),
        _ if error_codes.contains(&codes::NO_ROUTE) => {
            let mut text = format!(
                "the server at {} has no route for this call: check --base-url (Cloudflare's ends \
                 in /client/v4), or the server does not offer this operation (an older `cfq \
                 emulator`?)",
                context
                    .base_url
                    .as_deref()
                    .unwrap_or(cf_queues::Client::DEFAULT_BASE_URL)
            );
            // A server without the queue list cannot resolve names; an id
            // given with --queue-id needs no list.
            if error.operation() == Some(Operation::ListQueues) && context.queue.is_none() {
                text.push_str(
                    "; a queue named by its id with --queue-id is not looked up in the list",
                );
            }
            Some(text)
        }
        _ if error.is_pull_disabled() => Some(format!(
            "HTTP pull is not enabled on queue {queue}: {}; Cloudflare can answer so for up to a \
             minute after it was enabled",
            http_pull_hint(context)
        )),
        _ if error_codes.contains(&codes::QUEUE_ID_MALFORMED) => Some(
            "queue ids are 32 lowercase hex digits: name the queue by its name with --queue or \
             --queue-name (`cfq queues list` shows both)"
                .into(),
        ),
        _ if error_codes.contains(&codes::QUEUE_NAME_TAKEN) => Some(format!(
            "a queue of that name exists: `cfq queues info --queue {}` shows it",
            context.queue_name.as_deref().unwrap_or("NAME")
        )),
        _ if error.is_not_found() => {
            let mut text = format!(
                "no queue {queue} in account {account}: `cfq queues list` shows the account's \
                 queues, with their names and ids"
            );
            if needs_http_pull(error.operation()) {
                text.push_str(
                    "; if the queue exists, pulling, acknowledging and extending need HTTP pull: ",
                );
                text.push_str(&http_pull_hint(context));
            }
            Some(text)
        }
        _ if error.is_rate_limited() => Some(
            "the API is rate limiting this queue or account: wait a little and try again".into(),
        ),
        Error::Api(api)
            if api
                .errors
                .iter()
                .any(|e| e.message.contains("delivery_paused")) =>
        {
            Some(format!(
                "delivery of queue {queue} is paused: `cfq queues update {} --resume` resumes it",
                context.queue_flag()
            ))
        }
        Error::Api(_) if (400..500).contains(&status) && needs_http_pull(error.operation()) => {
            Some(format!(
                "pulling, acknowledging and extending need HTTP pull enabled on the queue: {}",
                http_pull_hint(context)
            ))
        }
        Error::Api(_) if status >= 500 => {
            Some("the API failed on its side; trying again later usually works".into())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_errors_are_usage() {
        let error = Error::Config("no account id".into());
        assert_eq!(code_of(&error), Code::Usage);
        assert!(hint(&error, &Context::default()).is_some());
    }

    #[test]
    fn hints_name_the_queue_as_it_can_be_typed() {
        let named = Context {
            queue: Some("9a7806061c88ada191ed06f989cc3dac".into()),
            queue_name: Some("orders".into()),
            ..Context::default()
        };
        assert_eq!(named.queue_flag(), "--queue orders");
        let by_id = Context {
            queue: Some("jobs".into()),
            ..Context::default()
        };
        assert_eq!(by_id.queue_flag(), "--queue-id jobs");
        assert_eq!(Context::default().queue_flag(), "--queue QUEUE");
        assert!(creatable("orders-dlq"));
        assert!(!creatable("Orders") && !creatable("-a") && !creatable(""));
    }
}
