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
use crate::shell_words::{QueueFlag, looks_like_id, queue_words};

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

    /// A library call's result, its error as [`Account::fail`] gives it.
    pub fn answer<T>(&self, result: Result<T, Error>) -> Result<T, Failure> {
        result.map_err(|e| self.fail(&e))
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

/// Resolves a queue named on the command line: one list call for a name,
/// none for an id.
///
/// A value of `--queue` (or `CFQ_QUEUE`, or `--to`) is an id only when it
/// has an id's shape, 32 lowercase hex digits; any other is a name, and a
/// name no queue has is an error (exit 4) naming the queues with a near
/// name. It is never tried as an id: the emulator, like any lax server,
/// makes a queue spring into being for an unknown id, so a typo such as
/// `Orders` for `orders` would push to a new queue and succeed silently.
/// `--queue-id` still takes any value as an id.
pub async fn resolve(client: &Client, given: &QueueRef) -> Result<Queue, Failure> {
    let fail = |e: &Error| Failure::call(e, &context_of(client, given));
    let name = match given {
        QueueRef::Id(id) => return client.queue(id).map_err(|e| fail(&e)),
        QueueRef::Either(value) if looks_like_id(value) => {
            return client.queue(value).map_err(|e| fail(&e));
        }
        QueueRef::Either(name) | QueueRef::Name(name) => name,
    };
    match client.queue_by_name(name).await {
        Ok(queue) => Ok(queue),
        Err(unknown @ Error::UnknownQueueName { .. }) => {
            let mut failure = fail(&unknown);
            // The account's queues are listed only here, on the way to an
            // error: a name that resolves costs its one lookup, no more.
            if let Ok(queues) = client.queues().await {
                let near = near_queues(name, &queues);
                if let Some(suggestion) = suggestion(&near) {
                    failure.hint = Some(match failure.hint {
                        Some(hint) => format!("{suggestion}; {hint}"),
                        None => suggestion,
                    });
                }
            }
            Err(failure)
        }
        Err(other) => Err(fail(&other)),
    }
}

/// A queue of the account that the user may have meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NearQueue {
    pub name: String,
    pub id: Option<String>,
    /// How far the typed value is from the name (0: the same but for case),
    /// or `None` when the typed value is the queue's id in another case.
    pub distance: Option<usize>,
}

/// The most near queues a hint names.
const MOST_NEAR: usize = 5;

/// The queues whose name is the typed value but for case, or within a
/// small edit distance of it (1 for names of up to 4 characters, 2 for
/// longer ones: a slip of one or two keys, not another word), and a queue
/// whose id is the value in another case; nearest first, at most
/// [`MOST_NEAR`].
pub fn near_queues(typed: &str, queues: &[cf_queues::response::QueueInfo]) -> Vec<NearQueue> {
    let typed_lower = typed.to_lowercase();
    let most = if typed.chars().count() <= 4 { 1 } else { 2 };
    let mut near: Vec<NearQueue> = queues
        .iter()
        .filter_map(|q| {
            let name = q.queue_name.clone().unwrap_or_default();
            let by_id = q
                .queue_id
                .as_deref()
                .is_some_and(|id| id.eq_ignore_ascii_case(typed));
            let distance = edit_distance(&typed_lower, &name.to_lowercase());
            let distance = if by_id {
                None
            } else if distance <= most && !name.is_empty() {
                Some(distance)
            } else {
                return None;
            };
            Some(NearQueue {
                name,
                id: q.queue_id.clone(),
                distance,
            })
        })
        .collect();
    near.sort_by(|a, b| {
        (a.distance.unwrap_or(0), &a.name).cmp(&(b.distance.unwrap_or(0), &b.name))
    });
    near.truncate(MOST_NEAR);
    near
}

/// `did you mean "orders"?`, or `None` with nothing near.
fn suggestion(near: &[NearQueue]) -> Option<String> {
    let shown: Vec<String> = near
        .iter()
        .map(|q| match (q.distance, &q.id) {
            (None, Some(id)) => format!("the queue of id {id:?} (ids are lowercase)"),
            _ => format!("{:?}", q.name),
        })
        .collect();
    match shown.as_slice() {
        [] => None,
        [one] => Some(format!("did you mean {one}?")),
        many => Some(format!("did you mean one of {}?", many.join(", "))),
    }
}

/// The optimal string alignment distance: insertions, deletions,
/// substitutions and swaps of two neighbours (`ordres`) each count one.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the table: two back (for swaps), one back, this one.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (previous[j] + 1)
                .min(row[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            row[j] = best;
        }
        before = std::mem::replace(&mut previous, row);
    }
    previous[b.len()]
}

/// What hints name for a queue as the user named it, before it resolved.
pub fn context_of(client: &Client, given: &QueueRef) -> Context {
    let (QueueRef::Either(value) | QueueRef::Id(value) | QueueRef::Name(value)) = given;
    Context {
        queue: matches!(given, QueueRef::Id(_)).then(|| value.clone()),
        queue_name: (!matches!(given, QueueRef::Id(_))).then(|| value.clone()),
        account: Some(client.account_id().to_owned()),
        base_url: Some(client.base_url().to_owned()),
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
        let queue = resolve(&client, &given).await?;
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

    /// Another queue of the same account, as the user named it (`--to`),
    /// resolved once.
    pub async fn other(&self, given: &QueueRef) -> Result<Queue, Failure> {
        resolve(&self.client, given).await
    }

    /// What hints name for this session's queue.
    pub fn context(&self) -> Context {
        self.context_for(&self.queue)
    }

    pub fn context_for(&self, queue: &Queue) -> Context {
        Context {
            queue: Some(queue.id().to_owned()),
            queue_name: queue.name().map(str::to_owned),
            account: Some(self.client.account_id().to_owned()),
            base_url: Some(self.client.base_url().to_owned()),
        }
    }

    /// A library error on this session's queue, with its hint.
    pub fn fail(&self, error: &cf_queues::Error) -> Failure {
        Failure::call(error, &self.context())
    }

    /// A library call's result, its error as [`Session::fail`] gives it.
    pub fn answer<T>(&self, result: Result<T, cf_queues::Error>) -> Result<T, Failure> {
        result.map_err(|e| self.fail(&e))
    }

    /// How this session's queue is named in a printed command: by name when
    /// known, else by id (see [`queue_words`]).
    pub fn queue_words(&self, flag: QueueFlag) -> Vec<String> {
        queue_words(flag, self.queue.name(), self.queue.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cf_queues::response::QueueInfo;

    fn info(name: &str, id: &str) -> QueueInfo {
        let mut info = QueueInfo::default();
        info.queue_name = Some(name.to_owned());
        info.queue_id = Some(id.to_owned());
        info
    }

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("orders", "orders"), 0);
        assert_eq!(edit_distance("ordres", "orders"), 1);
        assert_eq!(edit_distance("order", "orders"), 1);
        assert_eq!(edit_distance("odrers", "orders"), 1);
        assert_eq!(edit_distance("ordrs", "orders"), 1);
        assert_eq!(edit_distance("jobs", "orders"), 5);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn near_names_nearest_first() {
        let id = "9a7806061c88ada191ed06f989cc3dac";
        let queues = [
            info("orders", id),
            info("order", "b"),
            info("orders-dlq", "c"),
            info("jobs", "d"),
            info("job", "e"),
        ];
        let names = |typed: &str| -> Vec<String> {
            near_queues(typed, &queues)
                .into_iter()
                .map(|q| q.name)
                .collect()
        };
        assert_eq!(names("Orders"), ["orders", "order"]);
        assert_eq!(names("ORDER"), ["order", "orders"]);
        assert_eq!(names("jbos"), ["jobs"]);
        assert_eq!(names("hobs"), ["jobs"]);
        assert!(names("payments").is_empty());
        let upper = near_queues(&id.to_uppercase(), &queues);
        assert_eq!(upper[0].distance, None);
        assert_eq!(
            suggestion(&upper).as_deref(),
            Some(format!("did you mean the queue of id {id:?} (ids are lowercase)?").as_str())
        );
        assert_eq!(
            suggestion(&near_queues("Orders", &queues)).as_deref(),
            Some("did you mean one of \"orders\", \"order\"?")
        );
        assert_eq!(suggestion(&[]), None);
    }
}
