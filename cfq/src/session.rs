//! A session: the client, the queue a command works on, and the flags a
//! resume command repeats.

use cf_queues::{Client, ClientBuilder, Queue};

use crate::args::{self, Global, Target};
use crate::exit::{Context, Failure};
use crate::output::Output;

/// A client and the queue a command works on.
pub struct Session {
    pub client: Client,
    pub queue: Queue,
    pub out: Output,
    /// The account, base URL and output options given as flags, as words
    /// of a command line: a command printed to resume a run repeats them,
    /// since it may be pasted where the environment differs.
    pub flags: Vec<String>,
}

impl Session {
    pub fn open(
        global: &Global,
        target: &Target,
        top_queue: Option<&str>,
        out: Output,
    ) -> Result<Session, Failure> {
        let context = Context {
            queue: None,
            account: global.account.clone(),
            base_url: global.base_url.clone(),
        };
        let fail = |e: cf_queues::Error| Failure::call(&e, &context);
        let mut builder = ClientBuilder::from_env().map_err(fail)?;
        if let Some(account) = &global.account {
            builder = builder.account_id(account);
        }
        if let Some(base_url) = &global.base_url {
            builder = builder.base_url(base_url);
        }
        let client = builder.build().map_err(fail)?;
        let queue_id = target
            .queue
            .clone()
            .or_else(|| top_queue.map(str::to_owned))
            .or_else(|| std::env::var("CFQ_QUEUE").ok().filter(|q| !q.is_empty()))
            .ok_or_else(|| Failure::usage("no queue: pass --queue QUEUE_ID or set CFQ_QUEUE"))?;
        let queue = client.queue(&queue_id).map_err(fail)?;
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
            queue,
            out,
            flags,
        })
    }

    /// What hints name for this session's queue.
    pub fn context(&self) -> Context {
        self.context_for(&self.queue)
    }

    pub fn context_for(&self, queue: &Queue) -> Context {
        Context {
            queue: Some(queue.id().to_owned()),
            account: Some(self.client.account_id().to_owned()),
            base_url: Some(self.client.base_url().to_owned()),
        }
    }

    /// A library error on this session's queue, with its hint.
    pub fn fail(&self, error: &cf_queues::Error) -> Failure {
        Failure::call(error, &self.context())
    }
}
