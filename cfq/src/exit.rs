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
    pub queue: Option<String>,
    pub account: Option<String>,
    pub base_url: Option<String>,
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

const HTTP_PULL_HINT: &str = "pulling, acknowledging and extending need HTTP pull enabled on the queue: \
`wrangler queues consumer http add QUEUE_NAME`, or the queue's settings in the dashboard";

fn hint(error: &Error, context: &Context) -> Option<String> {
    let queue = context.queue.as_deref().unwrap_or("QUEUE_ID");
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
        _ if error.is_auth() => Some(format!(
            "the credentials were refused or lack a permission: cfq needs an API token \
             (CLOUDFLARE_API_TOKEN) with the Queues Read and Queues Edit permissions on account \
             {account}; check --account / CLOUDFLARE_ACCOUNT_ID too"
        )),
        _ if error_codes.contains(&codes::NO_ROUTE) => Some(format!(
            "the server at {} has no route for this call: check --base-url (Cloudflare's ends in \
             /client/v4), or the server does not offer this operation (an older `cfq emulator`?)",
            context
                .base_url
                .as_deref()
                .unwrap_or(cf_queues::Client::DEFAULT_BASE_URL)
        )),
        _ if error_codes.contains(&codes::QUEUE_ID_MALFORMED) => Some(
            "account and queue ids are 1 to 32 letters and digits: use the queue's id, not its \
             name (`wrangler queues list` shows both)"
                .into(),
        ),
        _ if error.is_not_found() => {
            let mut text = format!(
                "no queue {queue} in account {account}: use the queue's id, not its name \
                 (`wrangler queues list` shows both)"
            );
            if needs_http_pull(error.operation()) {
                text.push_str("; if the queue exists, ");
                text.push_str(HTTP_PULL_HINT);
            }
            Some(text)
        }
        _ if error.is_rate_limited() => Some(
            "the API is rate limiting this queue or account: wait a little and try again".into(),
        ),
        Error::Api(_) if (400..500).contains(&status) && needs_http_pull(error.operation()) => {
            Some(HTTP_PULL_HINT.into())
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
}
