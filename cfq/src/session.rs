//! A session: the client, the queue a command works on, and the flags a
//! resume command repeats.
//!
//! A queue is named by a name or an id. The name is resolved here, once
//! per command: a run of `drain`, `move` or `replay` then works on the
//! handle, whatever happens to the account's names meanwhile.

use cf_queues::{Client, ClientBuilder, Error, Queue};

use crate::args::{self, Global, QueueRef};
use crate::exit::{Context, Failure};
use crate::output::Output;
use crate::words::{QueueFlag, looks_like_id, queue_words};

/// A client and the queue a command works on.
pub struct Session {
    pub client: Client,
    pub queue: Queue,
    pub out: Output,
    /// The account, base URL and output options given as flags, as words
    /// of a command line: a command printed to resume a run repeats them,
    /// since it may be pasted where the environment differs.
    pub flags: Vec<String>,
    /// The value of `--queue` was looked up as a name first, found none,
    /// and was taken as an id: hints say that it is neither.
    pub by_fallback: bool,
}

/// A client for the commands that work on the account, not one queue.
pub struct Account {
    pub client: Client,
    pub out: Output,
}

impl Account {
    pub fn open(global: &Global, out: Output) -> Result<Account, Failure> {
        Ok(Account {
            client: client(global)?,
            out,
        })
    }

    /// What hints name, before any queue.
    pub fn context(&self) -> Context {
        Context {
            account: Some(self.client.account_id().to_owned()),
            base_url: Some(self.client.base_url().to_owned()),
            ..Context::default()
        }
    }

    pub fn fail(&self, error: &Error) -> Failure {
        Failure::call(error, &self.context())
    }
}

fn client(global: &Global) -> Result<Client, Failure> {
    let context = Context {
        account: global.account.clone(),
        base_url: global.base_url.clone(),
        ..Context::default()
    };
    let fail = |e: cf_queues::Error| Failure::call(&e, &context);
    let mut builder = ClientBuilder::from_env().map_err(fail)?;
    if let Some(account) = &global.account {
        builder = builder.account_id(account);
    }
    if let Some(base_url) = &global.base_url {
        builder = builder.base_url(base_url);
    }
    builder.build().map_err(fail)
}

/// A queue as the user named it: a handle, and whether a `--queue` value
/// was taken as an id after no queue had it as a name.
pub struct Resolved {
    pub queue: Queue,
    pub by_fallback: bool,
}

/// Resolves a queue named on the command line: one list call for a name,
/// none for an id.
pub async fn resolve(client: &Client, given: &QueueRef) -> Result<Resolved, Error> {
    let queue = match given {
        QueueRef::Id(id) => client.queue(id)?,
        QueueRef::Name(name) => client.queue_by_name(name).await?,
        QueueRef::Either(value) if looks_like_id(value) => client.queue(value)?,
        QueueRef::Either(value) => match client.queue_by_name(value).await {
            Ok(queue) => queue,
            // No queue has that name: the emulator's queues that spring
            // into being (and declared ones) have ids of any letters and
            // digits, so the value may still be an id. One that cannot be
            // an id keeps the error about the name.
            Err(unknown @ Error::UnknownQueueName { .. }) => match client.queue(value) {
                Ok(queue) => {
                    return Ok(Resolved {
                        queue,
                        by_fallback: true,
                    });
                }
                Err(_) => return Err(unknown),
            },
            Err(other) => return Err(other),
        },
    };
    Ok(Resolved {
        queue,
        by_fallback: false,
    })
}

/// What hints name for a queue as the user named it, before it resolved.
pub fn context_of(client: &Client, given: &QueueRef) -> Context {
    let (QueueRef::Either(value) | QueueRef::Id(value) | QueueRef::Name(value)) = given;
    Context {
        queue: matches!(given, QueueRef::Id(_)).then(|| value.clone()),
        queue_name: (!matches!(given, QueueRef::Id(_))).then(|| value.clone()),
        account: Some(client.account_id().to_owned()),
        base_url: Some(client.base_url().to_owned()),
        by_fallback: false,
    }
}

impl Session {
    /// The client, and the queue named after the command, before it, or by
    /// `CFQ_QUEUE`, in that order.
    pub async fn open(
        global: &Global,
        given: Option<QueueRef>,
        out: Output,
    ) -> Result<Session, Failure> {
        let client = client(global)?;
        let given = given
            .or_else(|| {
                std::env::var("CFQ_QUEUE")
                    .ok()
                    .filter(|q| !q.is_empty())
                    .map(QueueRef::Either)
            })
            .ok_or_else(|| {
                Failure::usage("no queue: pass --queue QUEUE (a name or an id) or set CFQ_QUEUE")
                    .with_hint("`cfq queues list` shows the account's queues")
            })?;
        let resolved = resolve(&client, &given)
            .await
            .map_err(|e| Failure::call(&e, &context_of(&client, &given)))?;
        let mut flags = Vec::new();
        if let Some(account) = &global.account {
            flags.extend(["--account".to_owned(), account.clone()]);
        }
        if let Some(base_url) = &global.base_url {
            flags.extend(["--base-url".to_owned(), base_url.clone()]);
        }
        if let Some(format) = global.output {
            let name = match format {
                args::OutputFormat::Json => "json",
                args::OutputFormat::Table => "table",
            };
            flags.extend(["--output".to_owned(), name.to_owned()]);
        }
        Ok(Session {
            client,
            queue: resolved.queue,
            out,
            flags,
            by_fallback: resolved.by_fallback,
        })
    }

    /// Another queue of the same account, as the user named it (`--to`),
    /// resolved once.
    pub async fn other(&self, given: &QueueRef) -> Result<Resolved, Failure> {
        resolve(&self.client, given)
            .await
            .map_err(|e| Failure::call(&e, &context_of(&self.client, given)))
    }

    /// What hints name for this session's queue.
    pub fn context(&self) -> Context {
        let mut context = self.context_for(&self.queue);
        context.by_fallback = self.by_fallback;
        context
    }

    pub fn context_for(&self, queue: &Queue) -> Context {
        Context {
            queue: Some(queue.id().to_owned()),
            queue_name: queue.name().map(str::to_owned),
            account: Some(self.client.account_id().to_owned()),
            base_url: Some(self.client.base_url().to_owned()),
            by_fallback: false,
        }
    }

    /// A library error on this session's queue, with its hint.
    pub fn fail(&self, error: &cf_queues::Error) -> Failure {
        Failure::call(error, &self.context())
    }

    /// How this session's queue is named in a printed command: by name when
    /// known, else by id (see [`queue_words`]).
    pub fn queue_words(&self, flag: QueueFlag) -> Vec<String> {
        queue_words(flag, self.queue.name(), self.queue.id())
    }
}
