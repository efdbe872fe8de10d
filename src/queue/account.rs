//! The account's queues: listing them, resolving a name, creating one.

use super::Queue;
use crate::call::Call;
use crate::client::Client;
use crate::envelope::QueuePage;
use crate::error::{Result, built};
use crate::operation::Operation;
use crate::raw::types;
use crate::resources::lookup::{NameLookup, Next, after_page, page_ids};
use crate::resources::settings::{check_name, check_new_name};
use crate::response::QueueInfo;
use crate::response_cap::SMALL_RESPONSE_BYTES;

impl Client {
    /// A handle on the queue of this name, found with the account's queue
    /// list (`GET /queues?name=`, as wrangler does). The handle remembers
    /// the name ([`Queue::name`]).
    ///
    /// One list call with the `name` filter answers it. Only an exact
    /// `queue_name` match counts, whatever the server returns; when the
    /// page holds other names (a server that ignores the filter, which is
    /// not in Cloudflare's published description) the list is paged on
    /// until the name is found or the list ends.
    ///
    /// ```no_run
    /// # async fn demo(client: cf_queues::Client) -> cf_queues::Result<()> {
    /// let queue = client.queue_by_name("orders").await?;
    /// println!("orders is {}", queue.id());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) for an empty name,
    /// before sending; [`Error::UnknownQueueName`](crate::Error::UnknownQueueName)
    /// when no queue has it ([`Error::is_not_found`](crate::Error::is_not_found)
    /// is true); [`Error::AmbiguousQueueName`](crate::Error::AmbiguousQueueName)
    /// when several do; otherwise what the list call met (retried like any
    /// read).
    ///
    /// # Cancellation
    ///
    /// Reading changes nothing; dropping the future is safe.
    pub async fn queue_by_name(&self, name: &str) -> Result<Queue> {
        check_name("name", name)?;
        let mut lookup = NameLookup::new(name);
        let mut number = 1;
        let mut previous: Option<Vec<Option<String>>> = None;
        loop {
            let page = self.list_page(number, Some(name)).await?;
            let ids = page_ids(&page);
            if previous.as_ref() == Some(&ids) {
                break; // the same page again: `page` is ignored too
            }
            match lookup.read(number, &page)? {
                Next::Page(next) => number = next,
                Next::Done => break,
            }
            previous = Some(ids);
        }
        let id = lookup.finish()?;
        Ok(self.queue(id)?.named(name.to_owned()))
    }

    /// Every queue of the account, with its settings and consumers, read
    /// page by page (`GET /queues?page=N`) until the list ends.
    ///
    /// # Errors
    ///
    /// What a list call met; each is retried like any read. At most
    /// 1,000 pages are read (Cloudflare allows 10,000 queues per account,
    /// 500 pages of 20), and the list ends at a page served twice.
    ///
    /// # Cancellation
    ///
    /// Reading changes nothing; dropping the future is safe.
    pub async fn queues(&self) -> Result<Vec<QueueInfo>> {
        let mut queues = Vec::new();
        let mut number = 1;
        let mut previous: Option<Vec<Option<String>>> = None;
        loop {
            let page = self.list_page(number, None).await?;
            let ids = page_ids(&page);
            if previous.as_ref() == Some(&ids) {
                // The same page again: a server that ignores `page` and
                // gives no `result_info` would otherwise be read 1,000 times.
                return Ok(queues);
            }
            let next = after_page(number, &page);
            queues.extend(page.queues.into_iter().map(QueueInfo::from));
            match next {
                Next::Page(n) => number = n,
                Next::Done => return Ok(queues),
            }
            previous = Some(ids);
        }
    }

    /// Creates a queue of this name (`POST /queues`) and returns a handle
    /// on it. Its settings are Cloudflare's defaults: change them with
    /// [`Queue::edit`], and enable HTTP pull with [`Queue::enable_http_pull`].
    ///
    /// Like a push, a create is not repeated after an ambiguous failure (a
    /// 5xx, a timeout, a broken connection): it may have landed, and a
    /// second create of a taken name fails. The name is looked up instead:
    /// a queue of that name is taken as the one created. An answer without
    /// `queue_id` is followed by one lookup too.
    ///
    /// ```no_run
    /// # async fn demo(client: cf_queues::Client) -> cf_queues::Result<()> {
    /// use cf_queues::resources::HttpPullSettings;
    /// let queue = client.create_queue("orders").await?;
    /// queue.enable_http_pull(HttpPullSettings::new().max_retries(5)).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) before sending
    /// for a name outside the rule the live API states when it refuses one
    /// (1 to 63 lowercase letters, digits and dashes, no dash first or
    /// last); an [`Error::Api`](crate::Error::Api) when the name is taken
    /// (409, code 11009, not retried) or refused (code 11003,
    /// InvalidQueueName); the first error when the lookup after a lost
    /// answer does not find the queue.
    ///
    /// # Cancellation
    ///
    /// A create dropped after it was sent may have landed: look the name up.
    pub async fn create_queue(&self, name: &str) -> Result<Queue> {
        check_new_name("queue_name", name)?;
        let body: types::CreateQueueRequest =
            built(types::CreateQueueRequest::builder().queue_name(name))?;
        let created = self
            .account_call(Operation::CreateQueue)
            .run(|| {
                self.raw()
                    .create_queue()
                    .account_id(self.account_id())
                    .body(body.clone())
                    .send()
            })
            .await;
        match created {
            Ok(details) => match details.queue_id.filter(|id| !id.is_empty()) {
                Some(id) => Ok(self.queue(id)?.named(name.to_owned())),
                None => self.queue_by_name(name).await,
            },
            Err(error) if error.may_have_landed() => {
                tracing::debug!(%error, name, "create queue may have landed; looking the name up");
                self.queue_by_name(name).await.map_err(|_| error)
            }
            Err(error) => Err(error),
        }
    }

    /// One page of the queue list, filtered by name if given.
    async fn list_page(&self, number: u32, name: Option<&str>) -> Result<QueuePage> {
        self.account_call(Operation::ListQueues)
            .run(|| {
                let request = self
                    .raw()
                    .list_queues()
                    .account_id(self.account_id())
                    .page(number);
                match name {
                    Some(name) => request.name(name),
                    None => request,
                }
                .send()
            })
            .await
    }

    /// The call settings of an account-wide call (no queue id yet).
    fn account_call(&self, operation: Operation) -> Call<'_> {
        Call {
            operation,
            queue_id: "",
            retry: self.retry_policy(),
            deadline: self.deadline(),
            limiter: self.limiter(),
            pacer: self.pacer(),
            first_pass: None,
            observe: None,
            messages: 0,
            response_cap: self.max_response_bytes().unwrap_or(SMALL_RESPONSE_BYTES),
            pull_grace_until: None,
        }
    }
}
