//! A local emulator of the Cloudflare Queues HTTP API, as a local
//! Cloudflare account: the crate `cf-queues-emulator`.
//!
//! It serves the twelve operations of Cloudflare's published Queues
//! messages API and the eleven that manage queues and their consumers, at
//! Cloudflare's paths, with or without the `/client/v4` prefix, with
//! Cloudflare's envelopes, field names, error codes and semantics: delays,
//! leases that expire, late acks, retries, lease extension, `max_retries`
//! with an optional dead-letter queue, peek and purge by ref, preview,
//! exact metrics, purging a whole queue; queues with names, ids and
//! settings, and one consumer each, whose settings decide delivery. Any
//! client written for Cloudflare, the official SDKs included, can be
//! pointed at its base URL. The account can be declared in a file
//! ([`config::EmulatorConfig`], `cfq emulator --config FILE`).
//!
//! Nothing else offers this locally: Miniflare emulates the Worker
//! bindings of Queues only, and `wrangler dev` has no pull consumers. So a
//! test of an HTTP consumer either runs against a real account or against
//! this crate.
//!
//! The queue logic is a pure state machine; this crate wraps it in an
//! HTTP/1 server on tokio (axum routing, hyper connections driven by an
//! accept loop of its own, see [Limits under load](#limits-under-load)).
//! Time can be driven by a [`ManualClock`], or follow tokio's (paused)
//! clock with a [`TokioClock`], so that tests never sleep; failures can be
//! injected with [`Fault`]. On request it answers [at a
//! distance](#at-a-distance), a round trip away, and [under Cloudflare's
//! rate limits](#rate-limits), so that a client can be judged as it runs
//! against Cloudflare.
//!
//! This page is the one place where the emulator's semantics, the
//! assumptions it makes where Cloudflare's documents are silent or
//! disagree, and its limits are written down; the READMEs of the
//! repository link here.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use cf_queues::{Message, PullOptions};
//! use cf_queues_emulator::Emulator;
//!
//! let emulator = Emulator::new().start().await?;   // 127.0.0.1, a free port, a fresh token
//! let queue = emulator.client()?.queue("orders")?;
//! queue.push(Message::text("hello")).await?;
//! let batch = queue.pull(PullOptions::new()).await?;
//! assert_eq!(batch.messages[0].body().text()?, "hello");
//! emulator.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! From the command line: `cfq emulator --listen 127.0.0.1:8787` (the crate
//! `cfq`: `cargo install cfq`). It prints the base URL and the token
//! (generated unless `--token`), serves until Ctrl-C or SIGTERM (requests
//! in flight get the 5 s [shutdown grace](Emulator::shutdown_grace)), binds
//! loopback by default and warns when it listens on any other address.
//!
//! # Operations
//!
//! The messages operations, under `/accounts/{account_id}/queues/{queue_id}`,
//! with or without the `/client/v4` prefix; [`Fault::only`] aims at any
//! operation by its [`Operation`].
//!
//! | method and path | `Operation` | result |
//! |---|---|---|
//! | `POST /messages` | `Push` | `{metadata: {metrics}}` |
//! | `POST /messages/batch` | `Batch` | `{metadata: {metrics}}` |
//! | `POST /messages/pull` | `Pull` | `{messages, message_backlog_count, metadata}` |
//! | `POST /messages/ack` | `Ack` | `{ackCount, retryCount, warnings}` |
//! | `POST /messages/peek` | `Peek` | `{messages}` with a `ref` each |
//! | `POST /messages/purge` | `Purge` | `{errors: [], warnings}` |
//! | `POST /messages/extend` | `Extend` | `{extendCount, warnings}` |
//! | `POST /messages/preview` | `Preview` | `{messages}` in the pull shape |
//! | `POST /messages/preview/ack` | `DeletePreviewed` | `{warnings}` |
//! | `GET /metrics` | `Metrics` | `{backlog_count, backlog_bytes, oldest_message_timestamp_ms}` |
//! | `POST /purge` | `PurgeQueue` | the queue object |
//! | `GET /purge` | `PurgeStatus` | `{completed, started_at}`, both strings |
//!
//! The management operations, under `/accounts/{account_id}`:
//!
//! | method and path | `Operation` | result |
//! |---|---|---|
//! | `GET /queues?page&per_page&name` | `ListQueues` | queue objects, and `result_info` `{count, page, per_page, total_count, total_pages}` |
//! | `POST /queues` `{queue_name, settings?}` | `CreateQueue` | the queue object, with the settings given (checked as an update's) and the defaults for the rest |
//! | `GET /queues/{queue_id}` | `GetQueue` | the queue object |
//! | `PUT /queues/{queue_id}` `{queue_name?, settings?}` | `UpdateQueue` | the queue object; settings left out are reset |
//! | `PATCH /queues/{queue_id}` `{queue_name?, settings?}` | `EditQueue` | the queue object; settings left out are kept |
//! | `DELETE /queues/{queue_id}` | `DeleteQueue` | `null` |
//! | `GET /queues/{queue_id}/consumers` | `ListConsumers` | its consumers (at most one) |
//! | `POST /queues/{queue_id}/consumers` | `CreateConsumer` | the consumer |
//! | `GET /queues/{queue_id}/consumers/{consumer_id}` | `GetConsumer` | the consumer |
//! | `PUT /queues/{queue_id}/consumers/{consumer_id}` | `UpdateConsumer` | the consumer |
//! | `DELETE /queues/{queue_id}/consumers/{consumer_id}` | `DeleteConsumer` | `null` |
//!
//! The queue object is `mq_queue`: `{queue_id, queue_name, created_on,
//! modified_on, settings: {delivery_delay, delivery_paused,
//! message_retention_period}, consumers, consumers_total_count, producers:
//! [], producers_total_count: 0}`; a consumer is `{type, consumer_id,
//! created_on, queue_name, dead_letter_queue ("" when none), settings}`,
//! with, for a Worker, its script as both `script_name` (the published
//! description's name) and `script` (the live API's, by which wrangler
//! finds a Worker consumer), and `service` when one was given. A create or
//! update of a Worker consumer takes its script as `script_name` or
//! `script` (or, failing both, `service`). Timestamps are RFC 3339 with
//! milliseconds.
//! Every answer is wrapped in Cloudflare's `{success, errors, messages,
//! result}` envelope, with its field names as sent (camelCase `ackCount`,
//! `retryCount` and `extendCount` beside snake_case elsewhere). Bodies
//! travel as Cloudflare sends them: `json` bodies base64-encoded, the
//! content type in the message's `CF-Content-Type` metadata. Warnings are
//! maps from the lease id, ref or preview id to a text.
//!
//! # Error codes
//!
//! Failures come in Cloudflare's failure envelope with its codes (named in
//! [`cf_queues::codes`]):
//!
//! | status and code | when |
//! |---|---|
//! | 400, 10107 QueueIDMalformed | an account or queue id that is not 1 to 32 ASCII letters and digits |
//! | 404, 10104 QueueNotFound | a queue id the account does not have: deleted, outside the [strict queues](Emulator::strict_queues), or any unknown id on a management call |
//! | 405, 0 "messages cannot be pulled unless http_pull mode is enabled" | a pull, ack or lease extension on a queue without an HTTP pull consumer (as the live API answers a pull) |
//! | 409, 10252 "queue_delivery_paused" | a pull on a queue whose delivery is paused |
//! | 409, 11009 "queue name already taken" | a queue created or renamed to a name the account has |
//! | 400, 11003 InvalidQueueName | a queue name Cloudflare refuses (1 to 63 lowercase letters, digits and dashes, starting and ending with a letter or digit), for a queue created or renamed (pointer `/queue_name`) or a consumer's `dead_letter_queue`, a queue that may be created by that name (pointer `/dead_letter_queue`); a long name is shown cut after 80 characters |
//! | 409, 11004 `workers.api.error.consumer_exists` | a consumer created on a queue that has one |
//! | 404, 7003 | a consumer id the queue does not have |
//! | 400, 10202 to 10206 | a bad delay, message metadata, message size, batch size or batch count |
//! | 400, 10207 JSONRequestBodyInvalid | JSON that does not match the operation, with the field's pointer; a setting out of its bounds; a bad `page` or `per_page` |
//! | 400, 10208 JSONRequestBodyMalformed | a body that is not JSON |
//! | 413, 10204 or 10205 | a body over [`max_body_bytes`](Emulator::max_body_bytes), refused unread |
//! | 408, 10201 ClientDisconnected | a body that did not arrive within the [body timeout](Emulator::body_timeout); 400 with 10201 for one cut short |
//! | 400 9106, 400 6003 (6111, 6102, 6103), 403 10000 | missing, malformed or unknown credentials (see [Assumptions](#assumptions)) |
//! | 405, 7001 | another method on one of these paths |
//! | 404, 7003 | any other path |
//! | as injected, 15000 by default | a [`Fault`] |
//!
//! # Semantics
//!
//! Where a rule comes from Cloudflare's documents (its pull-consumer,
//! dead-letter and API reference pages, its published description), the
//! code that applies it cites the source; where none settles a question,
//! the emulator's reading is listed under [Assumptions](#assumptions)
//! instead. The rest (tokens, credentials, time, memory) is how the
//! emulator keeps itself safe to share.
//!
//! - **Delays and leases.** A pushed message with a delay becomes visible
//!   after it. A pull leases visible messages for `visibility_timeout_ms`
//!   (30 s when absent, 1 ms to 12 h) and counts the delivery in the
//!   message's `attempts`; a lease that runs out without an ack makes the
//!   message visible again, to be delivered anew. A retry makes it visible
//!   after its `delay_seconds`.
//! - **Accounts.** Queues belong to the account id of the path: the same
//!   queue id under two account ids names two queues. Any valid account id
//!   is accepted; [`EmulatorHandle`]'s methods default to
//!   [`EMULATOR_ACCOUNT_ID`], and declared queues belong to it.
//! - **Queues as resources.** A queue has a name (unique in its account),
//!   an id and settings. One created by the API gets a fresh id of 32
//!   lowercase hex digits; a declared one ([`Emulator::config`]) keeps the
//!   id it declares, so that a restart keeps `CLOUDFLARE_QUEUE_ID` valid.
//!   A queue created by the API has no consumer until one is created, as
//!   on Cloudflare. Deleting a queue deletes its messages; its id answers
//!   404 on every operation from then on, a call whose body was still
//!   arriving when the deletion was answered included (each operation
//!   checks its queue again under the lock it runs under), and never
//!   springs back into being. The list is in creation order, 20 a page unless `per_page` (1
//!   to 1,000) says otherwise; `name` keeps the queue of exactly that name;
//!   `total_count` and `total_pages` count the account's queues without
//!   the filter, as Cloudflare's description says.
//! - **The lax mode** (the default, for tests): a messages request to an
//!   unknown, valid queue id brings that queue into being, named after its
//!   id, with one HTTP pull consumer of the defaults of
//!   [`Emulator::max_retries`] and [`Emulator::dead_letter_queue`], so that
//!   any id can be pushed to and pulled from at once. That consumer can be
//!   changed or deleted like any other (pulls then get 405). Only the
//!   messages operations bring queues into being, and never an id that was
//!   deleted or that is another queue's name (a name used as an id answers
//!   404, as on Cloudflare). With [strict queues](Emulator::strict_queues)
//!   (`cfq emulator --strict`, or `strict = true` in a configuration) only
//!   those ids, the declared queues and the API's do.
//! - **One consumer per queue** (Cloudflare's "how queues work" page:
//!   "each queue can only have one active consumer"): an HTTP pull
//!   consumer, which enables pulls, acks and lease extensions over HTTP, or
//!   a Worker, which is kept and shown but never run. Deleting the HTTP
//!   pull consumer disables HTTP pull again.
//! - **Consumer settings decide delivery**, as Cloudflare documents them: a
//!   pull without `batch_size` or `visibility_timeout_ms` takes the HTTP
//!   pull consumer's (5 and 30 s by default), and so does an extension
//!   without `visibility_timeout_ms`; a retry without `delay_seconds` waits
//!   its `retry_delay` (0 by default; an explicit 0 is 0); its
//!   `max_retries` (3) ends a message's deliveries, and its
//!   `dead_letter_queue`, a queue NAME, receives the exhausted messages.
//!   A dead-letter queue named by a consumer is created if no queue has
//!   that name (Cloudflare's consumer configuration page: "If there is no
//!   Queue with the specified name, it will be created automatically"): in
//!   the lax mode as a queue whose id is that name, otherwise with a fresh
//!   id and no consumer. The name is resolved when a message is
//!   dead-lettered: if the dead-letter queue was deleted or renamed since,
//!   a queue of the consumer's name is created then the same way (a
//!   deleted id never comes back, so it gets a fresh one), listed like any
//!   other; exhausted messages always land in a queue a client can read.
//! - **Queue settings decide delivery too**: `delivery_delay` delays every
//!   message pushed without a delay of its own (an explicit 0 is 0; a batch's
//!   `delay_seconds` counts as the messages' own); `delivery_paused` keeps
//!   accepting messages and answers pulls with 409 (Cloudflare's
//!   pause-and-purge page: "Requests to pull messages will receive a `409`
//!   response, along with an error message stating `queue_delivery_paused`"),
//!   while peek, preview, acks and extensions go on; and
//!   `message_retention_period` (4 days by default, 60 s to 14 days) drops
//!   every message pushed longer ago than that on the emulator's clock,
//!   delivered or not (its leases, refs and preview ids go stale; it is not
//!   dead-lettered).
//! - **Messages as the live API shows them**: ids of 32 lowercase hex
//!   digits, `timestamp_ms` in milliseconds, `metadata` with
//!   `CF-sourceMessageSource: "api"`, `CF-Content-Type`, and
//!   `CF-msg-delay-secs` (a string of seconds, such as `"20"`) on a message
//!   pushed with a delay, its own or the queue's.
//! - **`max_retries`.** A message is dropped, or moved to its dead-letter
//!   queue, when its `attempts` reaches its consumer's `max_retries`
//!   (default 3): it is
//!   delivered at most `max_retries` times. This follows Cloudflare's
//!   pull-consumer page; its dead-letter page and Miniflare read it as
//!   `max_retries + 1` deliveries. The pull-consumer page describes the
//!   HTTP pull path this crate emulates, so its reading is the one taken;
//!   set [`Emulator::max_retries`] one higher for the other.
//! - **Late acks.** A lease id stays usable while its message exists. An ack
//!   by an expired lease deletes the message even if another consumer holds
//!   it now (that consumer's ack then gets a warning); a retry by an expired
//!   lease applies only while no one else holds the message. `ackCount` and
//!   `retryCount` count what the call changed. Cloudflare's pull-consumer
//!   page says late acks are accepted; a consumer that settles after its
//!   lease ran out (as `cf_queues::consumer` does) relies on it.
//! - **Extend.** The lease id the caller holds stays valid (Cloudflare's
//!   answer carries no new one); its lease now ends `visibility_timeout_ms`
//!   after the extension, not after the old expiry, and `attempts` does not
//!   change. A lease whose message was delivered again, or deleted, gets a
//!   warning instead. A lease that expired while its message was not
//!   delivered again takes the message back (it leaves the visible set,
//!   leased to the same lease id), as late acks are accepted, unless a
//!   retry gave it back since. `visibility_timeout_ms` is checked as for a
//!   pull (1 ms to 12 h, 30 s when absent); any number of leases per call.
//!   These are the semantics of [`Queue::extend`](cf_queues::Queue::extend).
//! - **Peek and purge by ref.** Peek shows visible messages without leasing
//!   them, each with a `ref`. Purge deletes the messages behind refs at
//!   once, whatever their state (the leases of a purged message become
//!   unknown); refs that name nothing get warnings.
//! - **Preview** shows visible messages in delivery order, in the pull
//!   shape, without leasing them: `attempts` stays, and they stay visible
//!   to pull, peek and preview. `batch_size` is 1 to 100, 5 when absent.
//!   Each `lease_id` is a preview id: no lease, usable only with
//!   `preview/ack`, and only while the message is as it was previewed; a
//!   delivery, retry, ack or purge of the message makes it stale.
//! - **Deleting previewed messages** (`preview/ack`): `acks` delete at
//!   once, counted as neither delivered nor acked, as a purge by ref;
//!   `retries` keep `attempts` (there was no delivery) and make the message
//!   visible after `delay_seconds` (at once when absent). Deletions apply
//!   first. Stale and unknown ids get warnings.
//! - **Metrics** are exact: every message not yet deleted, visible, delayed
//!   or leased, with the sum of their body sizes and the oldest push time
//!   (0 when empty). With `Accept: text/event-stream`, the same object
//!   comes as one server-sent event (`data: {...}`), and the stream ends;
//!   an `EventSource` reconnects, so it polls.
//! - **Purging a whole queue** needs `delete_messages_permanently: true`,
//!   and deletes every message at once, visible, delayed and leased alike:
//!   their lease ids, refs and preview ids go stale. Messages pushed after
//!   it stay. Cloudflare's purge runs in the background; the emulator's is
//!   done when the answer is sent, so `GET /purge` reports it completed,
//!   with `started_at` its time in RFC 3339 (`2024-03-20T16:09:14.154Z`).
//! - **Dead-letter settings** that would strand messages are refused by
//!   [`Emulator::start`], before anything is served: an invalid queue id on
//!   either side, a dead-letter queue missing from the
//!   [strict queues](Emulator::strict_queues) and the declared queues, a
//!   queue that is its own dead-letter queue (see
//!   [Assumptions](#assumptions)); and by a consumer's create or update
//!   (400 with 10207) for a queue named as its own dead-letter queue.
//! - **Tokens.** Lease ids, peek refs and preview ids look as on the live
//!   API, compact JWEs of 159 characters (`{"alg":"dir","enc":"A256CBC-HS512"}`),
//!   and carry 128 random bits from the operating system in their IV: one's
//!   own say nothing about anyone else's.
//!   They are capabilities (whoever holds one can ack, retry or purge), so
//!   a counter that could be guessed from one's own would let one client
//!   settle another's messages.
//! - **Credentials** are compared in constant time, so that the time an
//!   answer takes says nothing about how much of a token was right.
//! - **Time** is processed lazily: a lease that has run out is acted upon
//!   the next time its queue (or the dead-letter queue it feeds) is
//!   touched, so every operation costs O(k log n) in the k messages it
//!   touches, never a scan of the backlog.
//! - **Memory.** A message is freed when it is acknowledged, and a queue's
//!   tables shrink when it drains. A queue's message state exists while it
//!   holds messages, a dead-letter count or the status of a purge; peek
//!   refs and preview ids expire after an hour (at most 100,000 of each per
//!   queue), swept even from idle queues. A queue's record (name, settings,
//!   consumer) stays until it is deleted, but past 10,000 queues that
//!   sprang into being and were never changed, those holding no messages
//!   are forgotten (and spring back anew, with new `created_on` and consumer
//!   id, when named again): a client naming a new id in every request
//!   cannot grow the account without bound. An account left holding
//!   nothing by that (no queue, none deleted) is forgotten with them, so
//!   requests to ever new account ids do not grow the registry either. The
//!   ids of deleted queues are kept, so that they never spring back. So memory follows what is
//!   stored, not what was asked.
//!
//! # Durability
//!
//! By default the emulator keeps everything in memory and forgets it when
//! it stops. With a data directory ([`Emulator::data_dir`], `cfq emulator
//! --data-dir DIR`) the account is kept on disk and loaded at start: the
//! queues with their names, ids, settings and consumers; the ids of
//! deleted queues (they never spring back); the messages with their
//! bodies, content types, timestamps, delays, attempts and lease ids; the
//! dead-letter queues' contents and counts; and the status of purges.
//!
//! - **What is durable.** Every change that an answer reveals or confirms
//!   is committed to the directory, and synced, before that answer leaves:
//!   an answered push, ack, retry, purge, preview deletion, queue or
//!   consumer change, and the attempt a pull counted (so attempts never go
//!   backwards and `max_retries` holds across a crash). Concurrent
//!   requests share commits (group commit: a store thread takes every
//!   change waiting, writes them in one transaction and syncs once), so
//!   durability costs well under one sync per request
//!   ([`EmulatorHandle::data_commits`] counts them). Any answer, a read
//!   or a refusal included (a 404, 400, 405, 409, an authentication or
//!   rate-limit refusal, an unknown path), waits for the changes handed in
//!   before it, so nothing an answer shows (a 404 shows a deletion) can
//!   vanish in a crash. Changes made through
//!   [`EmulatorHandle`]'s methods are written too, but those methods do not
//!   wait for the sync.
//! - **The claim.** A process crash (`kill -9`) at any moment loses no
//!   answered push and brings back no answered ack (tested: an emulator in
//!   a child process is killed 100 times while clients push, pull and ack,
//!   `emulator/tests/crash/`). Against power loss the guarantee is the
//!   store's: [redb](https://docs.rs/redb) syncs each commit
//!   (`Durability::Immediate`, its default) with checksummed, copy-on-write
//!   pages, so a power cut leaves the last synced commit, as far as the
//!   disk honours `fsync`.
//! - **What is not.** Leases end with a crash or a stop: their messages
//!   are visible again at the next start, as if the lease expired then,
//!   and the attempt their delivery counted stays counted; so every crash
//!   costs each leased message an attempt (give a test that crashes the
//!   emulator on purpose a high `max_retries` or a dead-letter queue). A
//!   lease id from before a restart still acks, retries or extends its
//!   message as a lease that expired would (late acks are accepted), since
//!   a message's lease ids are stored with it. Peek refs and preview ids
//!   are not kept.
//! - **Time.** Timestamps, delays and retention are wall-clock times, so
//!   they count while the emulator is stopped: a delayed message may be
//!   visible at once after a restart, and one past its retention period is
//!   dropped at the first touch. A data directory needs the system clock:
//!   with a [`ManualClock`] or a [`TokioClock`], [`Emulator::start`] fails.
//! - **The format version.** The directory holds `FORMAT`, the on-disk
//!   format version ([`DATA_FORMAT_VERSION`], now 1), and `queues.redb`.
//!   A directory of another version is refused with an error naming both
//!   versions. To move its messages across versions, drain them with the
//!   old emulator (`cfq drain`, to a file) and replay them into the new one
//!   (`cfq replay`); queues and consumers are declared anew by a
//!   configuration.
//! - **The lock.** A running emulator holds an OS lock on `DIR/LOCK`; a
//!   second emulator on the same directory is refused at start. The
//!   kernel releases the lock when the process dies, so a crash never
//!   leaves the directory locked.
//! - **Seeding.** A configuration ([`Emulator::config`]) and the [strict
//!   queues](Emulator::strict_queues) seed only a new directory (one no
//!   emulator has started on). Over a directory that holds an account the
//!   directory is the truth: the queues they declare are neither applied
//!   nor checked against it, and [`EmulatorHandle::start_notes`] says so
//!   (`cfq emulator` prints it; it is also logged with `tracing`). Why: a
//!   declared queue changed through the API since (renamed, its settings
//!   or consumer changed, deleted) would otherwise make the same start
//!   command refuse the directory, and the only ways out would lose data
//!   (`--reset`) or need an edit of the file. The configuration's round
//!   trip, rate limits and strictness (which ids may spring into being)
//!   still apply: they are settings of the emulator, not of the account.
//! - **The reset.** [`Emulator::reset_data_dir`] (`cfq emulator --reset`)
//!   empties the directory at start, and [`reset_data_dir`] without
//!   starting; both are refused while another emulator holds the lock.
//! - **Failures.** A commit that fails (a full disk, an I/O error) is never
//!   answered as a success: the requests waiting for it, and every request
//!   after it, get 503 with code 15000, since memory may then hold changes
//!   the directory does not; restart the emulator once the cause is fixed.
//!   The changes of that last commit may be lost; everything answered
//!   before it is kept (tested with a child emulator whose files are
//!   limited by `RLIMIT_FSIZE`, and with a failure injected into the store).
//! - **Limits.** A queue holds at most [`Emulator::max_backlog_bytes`] of
//!   message bodies (25 GB by default, Cloudflare's per-queue backlog
//!   limit); a push beyond it gets 429 with code 10251
//!   QueueStorageLimitExceeded, as on Cloudflare, with or without a data
//!   directory. Space is reclaimed as messages are acked: redb reuses the
//!   pages they freed (tested: a second 50 MB pushed and acked grows the
//!   directory by under 10 MB), though the file does not shrink. The whole
//!   account is loaded into memory at start, so the backlog is bounded by
//!   memory as without a directory. Each request's journal holds what the
//!   request touched (its queue, the queues dead letters moved between,
//!   the records it changed), found from notes taken as they were changed,
//!   never by a walk of the account: a push costs the same beside 10,000
//!   queues holding messages, or 10,000 accounts, as alone (measured by
//!   `cargo bench -p cf-queues-emulator --bench account_scale`).
//!
//! # Limits under load
//!
//! The emulator runs its own accept loop over hyper's HTTP/1 connections,
//! because `axum::serve` has no connection cap, no per-connection
//! timeouts and no bound on unread responses, and without them one
//! misbehaving client could starve every other test sharing the server.
//! Each limit is set on [`Emulator`]:
//!
//! | limit | default | what it bounds | why this default |
//! |---|---|---|---|
//! | [`max_connections`](Emulator::max_connections) | 512 | open connections; at the cap, the longest-idle connection is closed for a new one, and when none is idle new ones wait in the listen backlog | stays under the common limit of 1,024 open files, so the server never runs out of them |
//! | [`header_timeout`](Emulator::header_timeout) | 10 s | time to send a request head, from the connect or from its first byte | local clients send a head at once; room for a loaded CI machine, and a head that trickles in (slowloris) is cut off |
//! | [`body_timeout`](Emulator::body_timeout) | 30 s | time to send a request body | 2 MiB arrive in that time well under 1 Mbit/s; a late body gets 408 with 10201 and the connection closes |
//! | [`idle_timeout`](Emulator::idle_timeout) | 120 s | a keep-alive connection between requests | longer than reqwest's 90 s pool timeout, so the client closes first and never sends on a connection being closed |
//! | [`write_timeout`](Emulator::write_timeout) | 30 s | a response the client does not read, without progress | a client that never reads its answer is disconnected |
//! | [`response_buffer_bytes`](Emulator::response_buffer_bytes) | 64 KiB | response bytes held per connection, and the size of a request head (431 beyond it) | a request head is a few hundred bytes; room for four 16 KiB pieces of a streamed answer |
//! | [`max_body_bytes`](Emulator::max_body_bytes) | 2 MiB | a request body, refused unread beyond it | eight times the largest legal batch, so no legal request is refused |
//! | [`shutdown_grace`](Emulator::shutdown_grace) | 5 s | how long [`EmulatorHandle::shutdown`] lets requests finish before closing connections | stalled faults and half-sent requests do not hold a shutdown longer |
//!
//! Pull, peek and preview answers are serialized as the client reads them,
//! so a connection holds at most `response_buffer_bytes` plus one 16 KiB
//! piece of an answer, however large the answer and however slowly it is
//! read. (A pull of 100 messages of 128 KB whose bodies are control
//! characters is about 77 MB of JSON, and a client that never reads would
//! otherwise keep all of it in the server's memory.) Other answers are
//! built whole: small, except the warnings of an ack, extension or purge naming many
//! unknown leases or refs, which are at most about 3.5 times their
//! request, so at most about 7 MB per connection with the default
//! `max_body_bytes` (and counted in [`EmulatorHandle::server_stats`]). The
//! write timeout closes a connection that does not read them.
//!
//! A request refused before its body mattered (bad credentials, an unknown
//! queue) still has its body read, up to `max_body_bytes`, and discarded:
//! an answer sent while body bytes are still on the way would leave them
//! where the next request should start, so the keep-alive connection
//! carries on instead of closing.
//!
//! What the limits do not stop: at the connection cap only idle connections
//! are evicted, and the write and body timeouts restart on any progress. So
//! clients that each read a few bytes of their answer, or send a byte of
//! their body, just inside those timeouts can hold every slot for as long
//! as they keep that pace. Each such connection holds no more than the
//! bounds above, so the cap bounds what they cost (512 connections by
//! default); a local test emulator does not try to tell a slow client from
//! a hostile one.
//!
//! The repository's `emulator/tests/abuse/` reproduces each attack against
//! an emulator with small limits (trickling and silent clients, the
//! connection cap, unread answers, forged lease ids, 500 keep-alive
//! requests after error answers, a visibility timeout of 0, account
//! separation, shutdown with half-sent requests). The full-scale figures
//! (1,100 slow clients, 60 unread 77 MB peeks) and the script that
//! measures them are in
//! [BENCHMARKS.md](https://github.com/cf-queues/cf-queues/blob/main/BENCHMARKS.md).
//!
//! # At a distance
//!
//! Cloudflare's API is tens to hundreds of milliseconds away from most
//! servers, and on loopback a round trip costs a tenth of a millisecond, so
//! a client that keeps one call in flight looks fast here and is slow
//! there. [`Emulator::latency`] (`cfq emulator --latency 100ms[,jitter]`)
//! puts a [`Latency`] in front of every request: half a round trip before
//! it is served, the rest before its answer goes, and one more round trip
//! before the first answer on a new connection (its set-up). The jitter of
//! each round trip is uniform in `[0, jitter]`. The waits run on tokio's
//! clock, never the emulator's clock, so a test on paused time takes no
//! real time; [`EmulatorHandle::set_latency`] changes it while serving (a
//! benchmark fills its queue first).
//!
//! # Rate limits
//!
//! On request ([`Emulator::rate_limits`], `cfq emulator --rate-limits
//! cloudflare`), the emulator enforces Cloudflare's rate limits as
//! [`RateLimitModel`] models them, on the emulator's clock (so a
//! five-minute window passes in an instant on a [`ManualClock`]). Every
//! figure is settable, for tests that need small ones, and
//! [`EmulatorHandle::set_rate_limits`] switches them on (all buckets full,
//! all windows empty) or off while serving.
//!
//! - **Per queue** (the pull-consumers page; cloudflare-docs#21244: since
//!   2025-04-17, pulls and acks are limited per queue to 5,000 messages a
//!   second), two token buckets of 5,000 a second with one second of
//!   burst: one for the messages pulls return (an empty pull costs
//!   nothing), one for the leases that acks, retries and extensions list. A
//!   call is refused whole when its bucket holds fewer tokens than it
//!   needs, with 429, code 10250 and `Retry-After` (the seconds until the
//!   bucket holds enough, rounded up, at least 1); a refused pull leases
//!   nothing. These calls do not count against the per-credential limit.
//! - **Per credential** (the API rate-limits page,
//!   developers.cloudflare.com/fundamentals/api/reference/limits: 1,200
//!   requests per five minutes per user or token), every other call (push,
//!   batch, peek, purge by ref, preview, preview/ack, metrics, purge of the
//!   queue and its status, and every management call:
//!   [`Operation::counts_against_api_limit`]) counts against 1,200 requests per sliding
//!   300 s window. The request over it gets 429 with code 971, and then
//!   every call of that credential, lease calls included, is refused the
//!   same way for five minutes, `Retry-After` giving the seconds left.
//!   Refused calls neither count toward the window nor extend the block.
//! - **Per client IP** (the same page: 200 requests a second), a bucket of
//!   200 a second with 200 of burst over every call: 429 with code 971
//!   beyond it, and no block follows.
//! - **Headers** (since 2025-09-03 on Cloudflare's API): with the limits
//!   on, every answer to a request with credentials carries
//!   `Ratelimit: "default";r=REMAINING;t=SECONDS` (what is left of the
//!   window, and the whole seconds, rounded up, until its oldest counted
//!   request leaves it; 0 when it counts none) and
//!   `Ratelimit-Policy: "default";q=1200;w=300`. `Retry-After` comes only
//!   on a 429.
//!
//! The checks run in this order, after credentials, ids and strict queues
//! are checked (a request refused for those counts against no limit): the
//! address's bucket, the credential's block, its window (calls outside the
//! per-queue limits), then, once the body is read and valid, the queue's
//! bucket. A call refused by one check is counted by none after it. The
//! limiter keeps a keyed hash of each credential, never the credential, and
//! tracks at most 4,096 queues, credentials and addresses beyond those
//! whose state is back to full.
//!
//! Not modelled: the per-queue limit on pushes (Cloudflare's 5,000
//! messages a second per queue for Workers' producers), and any limit on
//! requests without credentials, which an emulator with
//! [`without_auth`](Emulator::without_auth) lets through.
//!
//! # Assumptions
//!
//! Where no public source settles how Cloudflare behaves, the emulator
//! assumes:
//!
//! - **Unknown credentials.** A well-formed API token or global key that is
//!   not the accepted one gets 403 with code 10000 "Authentication error".
//!   Public reports show 403/10000 for a token that lacks a permission; none
//!   shows the answer for a token that does not exist.
//! - **Malformed or missing credentials.** 400 with 6003 and the cause under
//!   `error_chain` (6111 for `Authorization`, 6102 for `X-Auth-Email`, 6103
//!   for `X-Auth-Key`), and 400 with 9106 when none is sent: as public
//!   reports of the v4 API show, for other products than Queues.
//! - **Visibility timeouts under 1 ms.** A `visibility_timeout_ms` under 1
//!   (0, or a fraction such as 0.5) gets 400 with 10207 JSONRequestBodyInvalid and
//!   the pointer `/visibility_timeout_ms`. Cloudflare documents no minimum;
//!   such a lease would end as it is granted.
//! - **Slow bodies.** A body that does not arrive within the body timeout
//!   gets 408 with 10201 ClientDisconnected, and the connection is closed.
//! - **A queue as its own dead-letter queue** is refused at start: exhausted
//!   messages would come back as new ones forever, so `max_retries` would
//!   never end anything.
//! - **Strict queues** are known under every account id: declared in
//!   [`EMULATOR_ACCOUNT_ID`], they come into being in another account on
//!   its first messages request to them.
//! - **A lax queue comes into being** with the first messages request that
//!   names it and passes the credential and id checks, whatever becomes of
//!   that request (refused for its rate, its body, or 405).
//! - **Calls on a queue without an HTTP pull consumer.** Pulls get 405 with
//!   code 0, as seen on the live API (alchemy-run/distilled#625); acks and
//!   lease extensions get the same answer, since they settle what HTTP pull
//!   leased. Pushes, peek, purge by ref, preview, deleting previewed
//!   messages, metrics and purging the queue work on any queue, as the
//!   dashboard shows and deletes the messages of a queue whatever its
//!   consumer.
//! - **A paused queue's pull** gets 409 (the pause-and-purge page) with
//!   code 10252 QueueDisabled, whose recommended action in Cloudflare's
//!   error-code table is to unpause the queue, and the message
//!   `queue_delivery_paused`. Acks and extensions of leases granted before
//!   the pause are served.
//! - **Conflicts.** A queue name taken answers 409 with 11009 "queue name
//!   already taken", as third-party tests of the live API record; a second
//!   consumer answers 409 with 11004 `workers.api.error.consumer_exists`, the
//!   code wrangler reported for it (cloudflare/workers-sdk#5347), whose
//!   status no source shows. An invalid name answers 400 with 11003, the
//!   code and text wrangler reported (cloudflare/workers-sdk#2522).
//! - **Unknown consumer ids** answer 404 with 7003, Cloudflare's answer for
//!   an object identifier its API cannot route to. An update (PUT) of an
//!   unknown consumer id on a queue without a consumer creates it with that
//!   id (the description: "or creates one if it does not exist").
//! - **Bounds of the settings**: `batch_size` 1 to 100, `max_retries` 0 to
//!   100, `retry_delay` and `delivery_delay` 0 to 86,400 s (the limit of a
//!   message delay), `visibility_timeout_ms` 1 to 43,200,000,
//!   `message_retention_period` 60 to 1,209,600 s, a Worker's
//!   `max_concurrency` 1 to 250 and `max_wait_time_ms` 0 to 60,000, all
//!   whole numbers; beyond them, 400 with 10207 and the field's pointer.
//!   Settings left out of a consumer take the defaults of a pull request
//!   (HTTP pull: 5, 3, 0, 30,000) or of Cloudflare's consumer page (Worker:
//!   batches of 10, 5 s of wait, 3 retries).
//! - **Retention counts from the push**: a dead-lettered message keeps its
//!   push time, so its retention in the dead-letter queue counts from it.
//! - **Peek and preview without `batch_size`** show 5 messages, the
//!   default of a pull request, whatever the consumer's `batch_size`: they
//!   deliver nothing.
//! - **Queue names of lax queues** are their ids, which may hold capitals
//!   that a created queue's name may not: they are never checked against
//!   the name rules, but renaming one is.
//! - **Multiple consumers** (Cloudflare's newer multi-consumer page) are
//!   not modelled: one consumer per queue.
//! - **Messages pushed by [`EmulatorHandle::push_from_worker`]** carry the
//!   same `CF-sourceMessageSource: "api"` as HTTP pushes: no source names
//!   the value a Worker's messages carry.
//! - **Purge without confirmation.** A purge of the whole queue whose
//!   `delete_messages_permanently` is missing, `false` or not a boolean
//!   gets 400 with 10207 JSONRequestBodyInvalid and the pointer
//!   `/delete_messages_permanently`, as other bodies that do not match
//!   their operation. Cloudflare marks the call as requiring confirmation
//!   but documents no answer for its absence.
//! - **Purge status before any purge.** `{"completed": "false"}` with no
//!   `started_at`: no purge completed, and none started. A 404 would say
//!   the queue does not exist, and a client could not tell the two apart.
//!   A purge's status is kept for an hour (`PURGE_STATUS_TTL_MS`), then
//!   reads the same: a purge of a queue id never used again must not hold
//!   state for ever.
//! - **The queue object** a purge answers with is the queue's, with
//!   `modified_on` the purge's time.
//! - **Extend without `extend`**, and `preview/ack` without `acks` or
//!   `retries`, are empty lists, as in an ack: the published schema
//!   requires none of these fields. A missing `visibility_timeout_ms` in an
//!   extension is the HTTP pull consumer's, as for a pull (30 s by default).
//! - **Retries of previewed messages.** Cloudflare documents only that
//!   previewed messages deleted through `preview/ack` are not counted as
//!   delivered; the emulator reads a retry there as "make it visible again
//!   after `delay_seconds`", without using an attempt, like a retry of a
//!   lease that no one is holding.
//! - **Metrics over `text/event-stream`**: one event, then the end of the
//!   stream. Cloudflare's description gives the event's schema, not how
//!   often events come.
//! - **Lease extensions go with pulls and acks**: Cloudflare names pulls
//!   and acks when it moved pull consumers to per-queue limits; the
//!   emulator limits extensions per queue too, in the leases' bucket, and
//!   leaves them out of the per-credential window.
//! - **The credential stands for the user**: Cloudflare counts its 1,200
//!   requests per user or account token, across the dashboard, keys and
//!   tokens; the emulator counts per API token, or per e-mail and global
//!   key, and cannot know that two of them belong to one user.
//! - **Two buckets per queue**, one for pulled messages and one for
//!   settled or extended leases, each of 5,000 a second: Cloudflare gives
//!   one figure, "5,000 messages per second", for pulls and acks.
//! - **During a block** the `Ratelimit` header says `r=0` and counts `t`
//!   down to the end of the block, so that a client reading only the
//!   header waits for it.
//! - **A call larger than a bucket's burst** (only with a burst configured
//!   below 100) is served once the bucket is full and leaves it in debt,
//!   rather than being refused for ever.
//!
//! # Dashboard
//!
//! With the `dashboard` feature (on by default), the emulator serves the
//! local account ([`EMULATOR_ACCOUNT_ID`]) to a browser at `/` and under
//! `/_dashboard/`, paths no API operation uses; `cfq emulator` prints its
//! link, and [`EmulatorHandle::dashboard_url`] gives it from Rust.
//! [`Emulator::dashboard`]`(false)` (`cfq emulator --no-dashboard`) turns it
//! off.
//!
//! - **Queues**: every queue with its name and id, its available, delayed
//!   and leased messages, backlog bytes, the oldest message's age, its
//!   consumer (HTTP pull, Worker, none) and whether delivery is paused;
//!   filtered by name, sorted by any column, 100 rows a page, refreshed
//!   every 2 s.
//! - **A queue**: its figures, updated every second, and charts of its
//!   backlog (messages and bytes) and of the messages pushed, pulled,
//!   acked, retried and dead-lettered a second: sampled once a second
//!   while a page of that queue is open, for at most the last 10 minutes,
//!   and nothing is counted for a queue no page shows. Its settings and its
//!   consumer's. Its messages, 100 a page in push order, listed without
//!   leasing one or using an attempt: each expands to its body (JSON
//!   pretty-printed, text as is, `bytes` and `v8` said so, not shown), its
//!   metadata, attempts, and whether it is leased or delayed, and until
//!   when.
//! - **Requests**: the last 1,000 requests answered on the API's paths,
//!   without bodies: method, path, operation, status, Cloudflare code, the
//!   time taken, and the credential as a fingerprint (a keyed hash drawn at
//!   start, 8 hex digits: two requests with the same credential show the
//!   same one), filtered by queue and status.
//!
//! **Actions.** From the pages, a developer can also change the account;
//! each action goes through the same state machine as the API (journaled
//! with a data directory), is checked as the API checks the same change
//! (the same limits and messages), counts against no emulated limit, and
//! says what it did at the top of the page it leads back to:
//!
//! | where | action | what it guarantees |
//! |---|---|---|
//! | queue page | send a text or JSON message, with a delay, or N of them (`{n}` numbers each, at most 10,000) | checked and stored as a push |
//! | messages | delete the selected messages | their leases go stale: a later ack gets a warning |
//! | messages | retry the selected messages, with a delay | visible again after it, their leases ended, no attempt used |
//! | messages of a dead-letter queue | move all, or the selected, back to the queue whose consumer names it (chosen when several do) | under one lock: none lost, none doubled, each a new message of that queue; with a data directory both queues change in one commit |
//! | queue page | edit the delivery delay and retention; enable HTTP pull, change its settings (batch size, retries, retry delay, visibility timeout, dead-letter queue) or disable it; pause and resume delivery | as `PATCH` of the queue and `POST`/`PUT`/`DELETE` of its consumer |
//! | queue page | purge every message, or delete the queue, with its name typed to confirm | a wrong name changes nothing |
//! | account page | create a queue; switch the round trip added to every request and Cloudflare's rate-limit model on or off | as [`EmulatorHandle::set_latency`] and [`EmulatorHandle::set_rate_limits`] |
//!
//! The pages read the same state machine as the API (a data directory's
//! included) and count against none of the emulated limits. Everything
//! they use is compiled in: no asset, font or script from the network.
//!
//! **Who may see it.** The rules every page and every call of its script
//! pass, in order:
//!
//! | rule | refused with | why |
//! |---|---|---|
//! | the `Host` header names this server by an IP address or `localhost`, with its port | 403 | DNS rebinding: a site the developer visits points its own name at 127.0.0.1; its requests carry that name |
//! | no `Sec-Fetch-Site: cross-site` or `same-site`, and an `Origin`, if any, equal to this server's | 403 | no other site can read or drive the pages |
//! | a session cookie: the printed link carries a random secret of its own (128 bits, never the API token), exchanged at the first visit for an `HttpOnly`, `SameSite=Strict` cookie holding a session id (64 kept) | 401 | a program that can reach the port but was not given the link sees nothing |
//! | a change (a form posted) carries the session's own form token, written into the pages | 403 | defence in depth: a page of another site can neither read the token nor send the cookie |
//!
//! Under [`Emulator::without_auth`], which accepts every API request, the
//! pages need no secret either; the first two rules still hold. Every
//! answer says `Cache-Control: no-store`, `X-Frame-Options: DENY`,
//! `Referrer-Policy: same-origin` (a form post then carries its `Origin`; the link's secret never goes to another site) and a `Content-Security-Policy` that
//! allows scripts, styles and requests to this server only. They are
//! tested in headless Chromium (`tests/dashboard/`), with axe-core finding
//! no serious or critical accessibility violation at a laptop's and a
//! phone's width.
//!
//! # A declared account
//!
//! [`Emulator::config`] and [`Emulator::config_file`] declare queues with
//! their ids, settings and consumers, the round trip and the rate limits,
//! in the API's field names; the file format, with an example, is in
//! [`config`], beside [`config::EmulatorConfig`] and its parts. The builder's
//! [`Emulator::strict_queues`], [`Emulator::max_retries`] and
//! [`Emulator::dead_letter_queue`] are shorthands on top of it: strict
//! queues are declared queues whose id is their name, with an HTTP pull
//! consumer, and `max_retries` and `dead_letter_queue` fill in what a
//! declared pull consumer leaves out, and set the consumer of the queues
//! that spring into being.
//!
//! # Conformance
//!
//! CI runs Cloudflare's official Python SDK against `cfq emulator`
//! (`emulator/tests/conformance/official_sdk.py` in the repository): every
//! operation, the queue and consumer calls included, with the same shapes
//! as Cloudflare's, field by field. A
//! difference between this emulator and Cloudflare that the SDK can see is
//! a bug of the emulator.

mod builder;
mod clock;
pub mod config;
#[cfg(feature = "dashboard")]
mod dashboard;
mod faults;
mod handle;
mod http;
mod latency;
mod random;
mod rate_limits;
#[cfg(feature = "dashboard")]
mod request_log;
mod server;
mod state;
mod store;

/// The operation a [`Fault`] is aimed at: the crate's own [`Operation`].
pub use cf_queues::operation::Operation;

// The README's example is compiled as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
pub use builder::Emulator;
pub use clock::{EmulatorClock, ManualClock, TokioClock};
pub use faults::Fault;
pub use handle::{EmulatorHandle, WorkerBody};
pub use latency::Latency;
pub use rate_limits::RateLimitModel;
pub use server::{ServerMonitor, ServerStats};
pub use store::{DATA_FORMAT_VERSION, reset_data_dir};

/// The account id [`EmulatorHandle::client`] uses and declared queues
/// belong to; the emulator accepts any valid id.
pub const EMULATOR_ACCOUNT_ID: &str = "0123456789abcdef0123456789abcdef";

/// The largest piece a pull or peek answer is written in.
const MAX_CHUNK_BYTES: usize = 16 * 1024;
