//! The exact request of each management call on queues (name resolution,
//! listing, create, read, edit, delete), with both auth schemes where it
//! matters, the read-back after a lost create or delete, the pacing of
//! management calls by the rate-limit headers, and the decoding of answers
//! shaped as Cloudflare's published description (`queues-management.json`,
//! its schemas' `example` values) and as the live API has been seen to
//! answer. HTTP pull (consumers) is in `wire_http_pull.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cf_queues::operation::Operation;
use cf_queues::resources::{ConsumerInfo, QueueSettings, WorkerConsumer};
use cf_queues::response::QueueInfo;
use cf_queues::retry::RetryPolicy;
use cf_queues::{Client, Error, Message, codes};
use cf_queues_testkit::clients::{quick, without_timers};
use cf_queues_testkit::wire::{
    ACCOUNT, Auth, BOTH, QUEUE, failure, path, rfc3339, shifted, success,
};
use httpmock::Method::{DELETE, GET, PATCH, POST};
use httpmock::{HttpMockRequest, HttpMockResponse, Mock, MockServer, When};
use serde_json::{Value, json};

#[path = "wire_resources_consumers.rs"]
mod consumers;
#[path = "wire_resources_create.rs"]
mod create;
#[path = "wire_event_subscriptions.rs"]
mod event_subscriptions;
#[path = "wire_resources_faults.rs"]
mod faults;
#[path = "wire_http_pull.rs"]
mod http_pull;
#[path = "wire_pull_window.rs"]
mod pull_window;

/// The published example of an identifier (`mq_identifier`), which the
/// description also gives consumers.
const EXAMPLE_ID: &str = "023e105f4ecef8ad9ca31a8372d0c353";
/// The published example of a queue name (`mq_queue-name`).
const NAME: &str = "example-queue";

/// A day: the longest delivery delay and retry delay.
const DAY: Duration = Duration::from_secs(86_400);

/// A client on `server` with the scheme `auth` and fast retries, so that a
/// call that should not be repeated would be (and show in a hit count).
fn client(server: &MockServer, auth: Auth) -> Client {
    auth.builder(&server.base_url())
        .retry(quick())
        .build()
        .expect("valid test configuration")
}

fn queue(server: &MockServer, auth: Auth) -> cf_queues::Queue {
    client(server, auth)
        .queue(QUEUE)
        .expect("valid test queue id")
}

/// A client for paused time: no timers of its own (timeouts, pool reaping)
/// that the paused clock would jump to while a request is on the wire.
fn paused_client(server: &MockServer, retry: RetryPolicy) -> Client {
    without_timers(Auth::Token.builder(&server.base_url()))
        .retry(retry)
        .build()
        .expect("valid test configuration")
}

/// Exactly these query parameters, in any order, and no others.
fn exact_query(when: When, pairs: &[(&str, &str)]) -> When {
    let mut expected: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    expected.sort();
    when.is_true(move |req: &HttpMockRequest| {
        let mut got = req.query_params();
        got.sort();
        got == expected
    })
}

/// `/accounts/{account}/queues`.
fn queues_path() -> String {
    format!("/accounts/{ACCOUNT}/queues")
}

/// A mock of `GET /queues` with exactly this query, answering `answer`.
async fn list_mock<'a>(server: &'a MockServer, query: &[(&str, &str)], answer: Value) -> Mock<'a> {
    server
        .mock_async(|when, then| {
            exact_query(
                Auth::Token.authenticated(when.method(GET).path(queues_path())),
                query,
            );
            then.status(200).json_body(answer);
        })
        .await
}

/// A mock of `method path` answering `status` with the JSON `body`.
async fn answering(
    server: &MockServer,
    method: httpmock::Method,
    path: String,
    status: u16,
    body: Value,
) -> Mock<'_> {
    server
        .mock_async(|when, then| {
            when.method(method).path(path);
            then.status(status).json_body(body);
        })
        .await
}

/// Answers anything with a 500, so that a request that should never have
/// been sent shows up in its count (and fails the call).
async fn catch_all(server: &MockServer) -> Mock<'_> {
    server
        .mock_async(|_, then| {
            then.status(500);
        })
        .await
}

/// Checks how many times each mock was called, naming the mock by its
/// place in `expected` and `context` (the case) when a count is off.
async fn assert_calls(context: impl std::fmt::Debug, expected: &[(&Mock<'_>, usize)]) {
    for (place, (mock, calls)) in expected.iter().enumerate() {
        let got = mock.calls_async().await;
        assert_eq!(got, *calls, "calls of mock {place}, {context:?}");
    }
}

/// Checks that `result` is an [`Error::InvalidInput`] naming `field`, made
/// before anything was sent; gives the error back.
fn assert_refused<T: std::fmt::Debug>(
    result: Result<T, Error>,
    field: &str,
    context: impl std::fmt::Debug,
) -> Error {
    let error = result.expect_err("refused");
    assert_eq!(invalid_field(&error), Ok(field), "{context:?}");
    assert_eq!(error.attempts(), 0, "{context:?}");
    error
}

/// The field an [`Error::InvalidInput`] names, or the whole error when it is another.
fn invalid_field(error: &Error) -> Result<&str, String> {
    match error {
        Error::InvalidInput { field, .. } => Ok(field),
        other => Err(format!("{other:?}")),
    }
}

/// A response that answers `first` to the first `n` requests and `then`
/// to the ones after, counting them in `hits`.
fn sequenced(
    n: usize,
    first: (u16, Value),
    then: (u16, Value),
    hits: Arc<AtomicUsize>,
) -> impl Fn(&HttpMockRequest) -> HttpMockResponse + Send + Sync + 'static {
    move |_| {
        let seen = hits.fetch_add(1, Ordering::SeqCst);
        let (status, body) = if seen < n { &first } else { &then };
        HttpMockResponse::builder()
            .status(*status)
            .header("content-type", "application/json")
            .body(body.to_string())
            .build()
    }
}

/// A Worker consumer built from the published examples
/// (`mq_worker-consumer-response` and the schemas it refers to).
fn example_worker() -> Value {
    json!({
        "type": "worker",
        "consumer_id": EXAMPLE_ID,
        "created_on": "2024-03-20T16:09:14.154Z",
        "queue_name": NAME,
        "script_name": "my-consumer-worker",
        "dead_letter_queue": "",
        "settings": {
            "batch_size": 50,
            "max_concurrency": 10,
            "max_retries": 3,
            "max_wait_time_ms": 5000,
            "retry_delay": 10
        }
    })
}

/// [`example_worker`] decoded.
fn example_worker_decoded() -> ConsumerInfo {
    let mut worker = WorkerConsumer::default();
    worker.consumer_id = Some(EXAMPLE_ID.into());
    worker.created_on = Some("2024-03-20T16:09:14.154Z".into());
    worker.queue_name = Some(NAME.into());
    worker.script_name = Some("my-consumer-worker".into());
    worker.dead_letter_queue = None;
    worker.batch_size = Some(50);
    worker.max_concurrency = Some(10);
    worker.max_retries = Some(3);
    worker.max_wait_time = Some(Duration::from_millis(5000));
    worker.retry_delay = Some(Duration::from_secs(10));
    ConsumerInfo::Worker(worker)
}

/// A queue built from the published examples (`mq_queue`,
/// `mq_queue-settings`, `mq_queue-name`, producers of both kinds), with id
/// `id` and name `name`.
fn example_queue_named(id: &str, name: &str) -> Value {
    json!({
        "queue_id": id,
        "queue_name": name,
        "created_on": "2024-03-20T16:09:14.154Z",
        "modified_on": "2024-03-21T08:00:00.000Z",
        "settings": {
            "delivery_delay": 5,
            "delivery_paused": true,
            "message_retention_period": 345600
        },
        "consumers": [example_worker()],
        "consumers_total_count": 1,
        "producers": [
            {"type": "worker", "script": "my-producer-worker"},
            {"type": "r2_bucket", "bucket_name": "example-bucket"}
        ],
        "producers_total_count": 2
    })
}

fn example_queue() -> Value {
    example_queue_named(QUEUE, NAME)
}

/// [`example_queue`] decoded.
fn example_queue_decoded() -> QueueInfo {
    let mut info = QueueInfo::default();
    info.queue_id = Some(QUEUE.into());
    info.queue_name = Some(NAME.into());
    info.created_on = Some("2024-03-20T16:09:14.154Z".into());
    info.modified_on = Some("2024-03-21T08:00:00.000Z".into());
    info.settings = QueueSettings::new()
        .delivery_delay(Duration::from_secs(5))
        .delivery_paused(true)
        .message_retention_period(Duration::from_secs(345_600));
    info.consumers = vec![example_worker_decoded()];
    info.consumers_total_count = 1;
    info.producers_total_count = 2;
    info
}

/// The published `result_info` example of the queue list.
fn example_result_info() -> Value {
    json!({"count": 1, "page": 1, "per_page": 20, "total_count": 2000, "total_pages": 100})
}

/// A list page: these queues (name, id), with `result_info` if given.
fn list_page(queues: &[(&str, &str)], result_info: Option<Value>) -> Value {
    let result: Vec<Value> = queues
        .iter()
        .map(|(name, id)| json!({"queue_id": id, "queue_name": name}))
        .collect();
    let mut page = success(json!(result));
    if let Some(info) = result_info {
        page["result_info"] = info;
    }
    page
}

/// A queue as a list gives it: its id and name, nothing else.
fn listed(id: &str, name: &str) -> QueueInfo {
    let mut info = QueueInfo::default();
    info.queue_id = Some(id.into());
    info.queue_name = Some(name.into());
    info
}

/// `result_info` of a list: page 1 of `total_pages`, `per_page` a page.
fn pages_info(count: usize, per_page: usize, total_count: usize, total_pages: usize) -> Value {
    json!({"count": count, "page": 1, "per_page": per_page, "total_count": total_count, "total_pages": total_pages})
}

// ---------------------------------------------------------------------------
// Name resolution
// ---------------------------------------------------------------------------

/// How a name lookup ends.
#[derive(Debug)]
enum Found {
    /// The queue [`QUEUE`].
    Queue,
    /// [`Error::UnknownQueueName`].
    Unknown,
    /// [`Error::AmbiguousQueueName`] with these ids.
    Ambiguous(&'static [&'static str]),
}

/// The published list answer, filtered by the server as wrangler expects:
/// its `total_pages` of 100 does not make the client read page 2. A server
/// that ignores `name` sends other queues: the client pages on (keeping the
/// filter) until an exact match, and no further; without one, it stops at
/// the last page `result_info` names, or at an empty page when there is no
/// `result_info`. Two queues of that name are ambiguous, and a name with
/// characters that mean something in a query is sent encoded.
#[tokio::test]
async fn queue_by_name_honoured_filter_takes_one_request() {
    const ODD: &str = "a&name=b c+d/é?";
    let mut published = success(json!([example_queue()]));
    published["result_info"] = example_result_info();
    let ignored = pages_info(2, 2, 5, 3);
    let two_pages = pages_info(1, 1, 2, 2);
    let empty = list_page(&[], Some(pages_info(0, 20, 0, 0)));
    let paged_on = vec![
        list_page(
            &[("billing", "b1"), ("example-queue-dlq", "c1")],
            Some(ignored.clone()),
        ),
        list_page(&[("Example-Queue", "d1"), (NAME, QUEUE)], Some(ignored)),
    ];
    let not_listed = vec![list_page(&[("billing", "b1")], None), list_page(&[], None)];
    let past_the_last = vec![
        list_page(&[("billing", "b1")], Some(two_pages.clone())),
        list_page(&[("orders", "o1")], Some(two_pages)),
    ];
    let twice = list_page(&[(NAME, "a1"), (NAME, "a2")], Some(example_result_info()));
    // (scheme, name, the pages answered, how it ends)
    let cases = [
        (Auth::Token, NAME, vec![published.clone()], Found::Queue),
        (Auth::GlobalKey, NAME, vec![published], Found::Queue),
        (Auth::Token, NAME, paged_on, Found::Queue),
        (Auth::Token, NAME, vec![empty], Found::Unknown),
        (Auth::Token, NAME, not_listed, Found::Unknown),
        (Auth::Token, NAME, past_the_last, Found::Unknown),
        (
            Auth::Token,
            NAME,
            vec![twice],
            Found::Ambiguous(&["a1", "a2"]),
        ),
        (
            Auth::Token,
            ODD,
            vec![list_page(&[(ODD, QUEUE)], None)],
            Found::Queue,
        ),
    ];
    for (auth, name, pages, expected) in cases {
        let server = MockServer::start_async().await;
        let mut mocks = vec![];
        for (page, answer) in (1..).zip(&pages) {
            let query = [("page", page.to_string()), ("name", name.to_owned())];
            mocks.push(
                server
                    .mock_async(|when, then| {
                        let query = query.each_ref().map(|(k, v)| (*k, v.as_str()));
                        exact_query(
                            auth.authenticated(when.method(GET).path(queues_path())),
                            &query,
                        );
                        then.status(200).json_body(answer.clone());
                    })
                    .await,
            );
        }
        let others = catch_all(&server).await;
        let context = (auth, name, &expected);
        match (client(&server, auth).queue_by_name(name).await, &expected) {
            (Ok(queue), Found::Queue) => {
                assert_eq!(
                    (queue.id(), queue.name()),
                    (QUEUE, Some(name)),
                    "{context:?}"
                );
            }
            (Err(error), Found::Unknown) => {
                let is_unknown =
                    matches!(&error, Error::UnknownQueueName { name: n, .. } if n == name);
                assert!(is_unknown, "{context:?}: {error:?}");
                assert!(error.is_not_found() && !error.may_have_landed());
                assert!(error.to_string().contains(name), "{error}");
            }
            (Err(error), Found::Ambiguous(ids)) => {
                let is_ambiguous = matches!(&error, Error::AmbiguousQueueName { name: n, queue_ids, .. } if n == name && queue_ids == ids);
                assert!(is_ambiguous, "{context:?}: {error:?}");
                assert!(!error.is_not_found());
            }
            (got, _) => panic!("{context:?}: {got:?}"),
        }
        for (page, mock) in mocks.iter().enumerate() {
            assert_calls((&context, page + 1), &[(mock, 1)]).await;
        }
        assert_calls(context, &[(&others, 0)]).await;
    }
}

/// An empty name, or one outside the rule the live API states (lowercase
/// letters, digits and dashes, 1 to 63), is refused before anything is sent.
#[tokio::test]
async fn empty_names_are_refused_before_sending() {
    let server = MockServer::start_async().await;
    let sent = catch_all(&server).await;
    let client = client(&server, Auth::Token);
    let error = client.queue_by_name("").await.expect_err("empty");
    assert_eq!(invalid_field(&error), Ok("name"));
    assert_eq!(error.attempts(), 0);
    for name in ["", "Not A Name", "-orders", "orders_dlq"] {
        let error = client.create_queue(name).await.expect_err("refused");
        assert_eq!(invalid_field(&error), Ok("queue_name"), "{name}");
        assert_eq!(error.attempts(), 0);
    }
    assert_eq!(sent.calls_async().await, 0);
}

// ---------------------------------------------------------------------------
// Listing
// ---------------------------------------------------------------------------

/// Without a name filter every page is read, up to the last `result_info`
/// names or, without `result_info`, the first empty page.
#[tokio::test]
async fn queues_reads_every_page_without_a_name_filter() {
    let info = pages_info(2, 2, 3, 2);
    let mut first = success(json!([example_queue(), {"queue_id": "b1", "queue_name": "billing"}]));
    first["result_info"] = info.clone();
    let mut second = success(json!([{"queue_id": "c1", "queue_name": "orders"}]));
    second["result_info"] = info;
    let by_info = vec![
        example_queue_decoded(),
        listed("b1", "billing"),
        listed("c1", "orders"),
    ];
    let by_empty_page = vec![listed("a1", "a"), listed("b1", "b")];
    let until_empty = vec![
        list_page(&[("a", "a1")], None),
        list_page(&[("b", "b1")], None),
        list_page(&[], None),
    ];
    for (pages, expected) in [(vec![first, second], by_info), (until_empty, by_empty_page)] {
        let server = MockServer::start_async().await;
        let mut mocks = vec![];
        for (page, answer) in (1..).zip(pages) {
            mocks.push(list_mock(&server, &[("page", &page.to_string())], answer).await);
        }
        let others = catch_all(&server).await;
        let queues = client(&server, Auth::Token).queues().await.expect("listed");
        assert_eq!(queues, expected);
        for mock in &mocks {
            assert_calls(&expected, &[(mock, 1)]).await;
        }
        assert_calls(&expected, &[(&others, 0)]).await;
    }
}

// ---------------------------------------------------------------------------
// Create
// ---------------------------------------------------------------------------

/// The create posts the name, with either scheme. An answer without
/// `queue_id` (or with an empty one) is followed by exactly one name
/// lookup. A 500 may hide a create that landed: it is not repeated (even
/// under a policy that retries), the name is looked up, and the queue
/// found, created after the create was sent, is the create's success (one
/// created before is someone else's: `create::a_lost_answer_adopts_only...`);
/// when the lookup finds nothing, the caller gets the create's own error,
/// which says it may have landed. A refused create (the name invalid,
/// 11003) surely did not land, and a taken name (409, 11009) is a conflict
/// with what exists, not retried whatever the policy says about 409s:
/// neither is looked up.
#[tokio::test]
async fn create_queue_posts_the_name() {
    let mut found = example_queue();
    found["created_on"] = json!(rfc3339(std::time::SystemTime::now()));
    let found = success(json!([found]));
    let by_name = list_page(&[(NAME, QUEUE)], Some(example_result_info()));
    let failed = |status, code| (status, failure(code, "failed"));
    let lost = failed(500, codes::UNKNOWN_INTERNAL_ERROR);
    let ok = |answer| (200, success(answer));
    // (scheme, name, the create's answer, the lookup's answer, the
    // create's error: status, code and whether it may have landed)
    let mut cases = vec![
        (Auth::Token, NAME, ok(example_queue()), None, None),
        (Auth::GlobalKey, NAME, ok(example_queue()), None, None),
        (Auth::Token, NAME, lost.clone(), Some(found), None),
        (
            Auth::Token,
            NAME,
            lost,
            Some(list_page(&[], None)),
            Some((500, 15_000, true)),
        ),
        (
            Auth::Token,
            "refused-by-the-server",
            failed(400, codes::INVALID_QUEUE_NAME),
            None,
            Some((400, 11_003, false)),
        ),
        (
            Auth::Token,
            "orders",
            failed(409, codes::QUEUE_NAME_TAKEN),
            None,
            Some((409, 11_009, false)),
        ),
    ];
    for answer in [
        json!({"queue_name": NAME, "created_on": "2024-03-20T16:09:14.154Z"}),
        json!({"queue_id": "", "queue_name": NAME}),
        json!(null),
    ] {
        cases.push((Auth::Token, NAME, ok(answer), Some(by_name.clone()), None));
    }
    for (auth, name, (status, answer), lookup, expected) in cases {
        let context = (auth, name, status, &answer);
        let server = MockServer::start_async().await;
        let create = server
            .mock_async(|when, then| {
                auth.authenticated(when.method(POST).path(queues_path()))
                    .header("content-type", "application/json")
                    .query_param_missing("page")
                    .json_body(json!({"queue_name": name}));
                then.status(status).json_body(answer.clone());
            })
            .await;
        let lookups = usize::from(lookup.is_some());
        let lookup = list_mock(
            &server,
            &[("page", "1"), ("name", name)],
            lookup.unwrap_or_default(),
        )
        .await;
        let others = catch_all(&server).await;
        match (client(&server, auth).create_queue(name).await, expected) {
            (Ok(queue), None) => assert_eq!((queue.id(), queue.name()), (QUEUE, Some(NAME))),
            (Err(error), Some((status, code, landed))) => {
                assert_eq!(
                    (error.status(), error.codes()),
                    (Some(status), vec![code]),
                    "{context:?}: {error:?}"
                );
                assert_eq!(error.operation(), Some(Operation::CreateQueue));
                assert_eq!(error.may_have_landed(), landed);
                assert_eq!(error.attempts(), 1);
                assert!(
                    !error.is_not_found(),
                    "the lookup's error is not the one given"
                );
                assert!(landed || !error.is_retryable());
            }
            (got, _) => panic!("{context:?}: {got:?}"),
        }
        assert_calls(context, &[(&create, 1), (&lookup, lookups), (&others, 0)]).await;
    }
}

// ---------------------------------------------------------------------------
// Read, edit, delete
// ---------------------------------------------------------------------------

/// The published example decodes, with either scheme, and so do shapes
/// the live API (or a proxy) may give: counts as floats, an empty
/// dead-letter queue, a consumer kind this crate does not know, counts
/// left out (then the listed ones are counted), settings left out. An
/// unknown queue is not found, and a 404 is not retried.
#[tokio::test]
async fn info_decodes_the_published_example() {
    let odd = json!({
        "queue_id": QUEUE,
        "queue_name": NAME,
        "settings": {"delivery_delay": 0.0, "message_retention_period": 86400.0},
        "consumers": [
            {"type": "email", "consumer_id": "e1", "settings": {"batch_size": 3.0}},
            {"consumer_id": ""},
            {
                "type": "worker", "script_name": "shop", "dead_letter_queue": "",
                "settings": {"batch_size": 3.0, "max_retries": 5.0, "retry_delay": 1.0, "max_wait_time_ms": 250.0}
            }
        ],
        "producers": [{"type": "worker", "script": "shop"}],
        "unknown_field": {"nested": true}
    });
    let mut worker = WorkerConsumer::default();
    worker.script_name = Some("shop".into());
    worker.batch_size = Some(3);
    worker.max_retries = Some(5);
    worker.retry_delay = Some(Duration::from_secs(1));
    worker.max_wait_time = Some(Duration::from_millis(250));
    let mut odd_decoded = listed(QUEUE, NAME);
    odd_decoded.settings = QueueSettings::new()
        .delivery_delay(Duration::ZERO)
        .message_retention_period(Duration::from_secs(86_400));
    let other = |kind: &str, id: Option<&str>| ConsumerInfo::Other {
        kind: kind.into(),
        consumer_id: id.map(Into::into),
    };
    odd_decoded.consumers = vec![
        other("email", Some("e1")),
        other("", None),
        ConsumerInfo::Worker(worker),
    ];
    odd_decoded.consumers_total_count = 3;
    odd_decoded.producers_total_count = 1;
    let unknown = (404, failure(codes::QUEUE_NOT_FOUND, "QueueNotFound"));
    // (scheme, the answer, what it decodes to, with its first consumer's
    // kind and id; or none: not found)
    let cases = [
        (
            Auth::Token,
            (200, success(example_queue())),
            Some((example_queue_decoded(), "worker", EXAMPLE_ID)),
        ),
        (
            Auth::GlobalKey,
            (200, success(example_queue())),
            Some((example_queue_decoded(), "worker", EXAMPLE_ID)),
        ),
        (
            Auth::Token,
            (200, success(odd)),
            Some((odd_decoded, "email", "e1")),
        ),
        (Auth::Token, unknown, None),
    ];
    for (auth, (status, answer), expected) in cases {
        let server = MockServer::start_async().await;
        let get = server
            .mock_async(|when, then| {
                auth.authenticated(when.method(GET).path(path("")));
                then.status(status).json_body(answer);
            })
            .await;
        match (queue(&server, auth).info().await, expected) {
            (Ok(info), Some((decoded, kind, id))) => {
                assert_eq!(info, decoded, "{auth:?}");
                assert_eq!(info.consumers[0].kind(), kind);
                assert_eq!(info.consumers[0].consumer_id(), Some(id));
                assert!(info.consumers[0].as_http_pull().is_none());
            }
            (Err(error), None) => {
                assert!(error.is_not_found(), "{error:?}");
                assert_eq!(error.operation(), Some(Operation::GetQueue));
            }
            (got, _) => panic!("{auth:?} {status}: {got:?}"),
        }
        assert_calls((auth, status), &[(&get, 1)]).await;
    }
}

/// Only the settings given are sent, as integers, durations rounded up to
/// whole seconds.
#[tokio::test]
async fn edit_sends_only_the_given_settings_in_whole_seconds() {
    let cases = [
        (
            QueueSettings::new().delivery_paused(true),
            json!({"settings": {"delivery_paused": true}}),
        ),
        (
            QueueSettings::new()
                .delivery_delay(Duration::from_millis(1_500))
                .message_retention_period(Duration::from_secs(60) + Duration::from_nanos(1)),
            json!({"settings": {"delivery_delay": 2, "message_retention_period": 61}}),
        ),
        (
            QueueSettings::new()
                .delivery_delay(Duration::from_secs(86_400))
                .delivery_paused(false)
                .message_retention_period(Duration::from_secs(14 * 24 * 3600)),
            json!({"settings": {"delivery_delay": 86_400, "delivery_paused": false, "message_retention_period": 1_209_600}}),
        ),
        (
            QueueSettings::new().message_retention_period(Duration::from_secs(60)),
            json!({"settings": {"message_retention_period": 60}}),
        ),
    ];
    for (settings, body) in cases {
        let server = MockServer::start_async().await;
        let patch = server
            .mock_async(|when, then| {
                Auth::Token
                    .authenticated(when.method(PATCH).path(path("")))
                    .header("content-type", "application/json")
                    .json_body(body.clone());
                then.status(200).json_body(success(example_queue()));
            })
            .await;
        let others = catch_all(&server).await;
        let info = queue(&server, Auth::Token)
            .edit(settings)
            .await
            .expect("edited");
        assert_eq!(info, example_queue_decoded(), "{body}");
        assert_calls(&body, &[(&patch, 1), (&others, 0)]).await;
    }
}

/// Settings are checked before anything is sent; `create_queue_with`
/// makes the check `edit` makes: the same errors, naming the same fields.
#[tokio::test]
async fn edit_checks_before_sending() {
    let server = MockServer::start_async().await;
    let sent = catch_all(&server).await;
    let client = client(&server, Auth::Token);
    let queue = client.queue(QUEUE).expect("valid test queue id");
    let retention = "settings.message_retention_period";
    let error = queue.edit(QueueSettings::new()).await;
    assert_refused(error, "settings", "no setting");
    for (settings, field) in [
        (
            QueueSettings::new().message_retention_period(Duration::from_secs(59)),
            retention,
        ),
        (
            QueueSettings::new().message_retention_period(Duration::from_millis(59_999)),
            retention,
        ),
        (
            QueueSettings::new().message_retention_period(14 * DAY + Duration::from_nanos(1)),
            retention,
        ),
        (
            QueueSettings::new().message_retention_period(14 * DAY + Duration::from_secs(1)),
            retention,
        ),
        (
            QueueSettings::new().delivery_delay(DAY + Duration::from_secs(1)),
            "settings.delivery_delay",
        ),
        (
            QueueSettings::new()
                .delivery_paused(true)
                .delivery_delay(DAY + Duration::from_millis(1)),
            "settings.delivery_delay",
        ),
    ] {
        let edited = assert_refused(queue.edit(settings.clone()).await, field, &settings);
        let created = client.create_queue_with(NAME, settings.clone()).await;
        let created = assert_refused(created, field, &settings);
        assert_eq!(created.to_string(), edited.to_string());
    }
    let settings = QueueSettings::new().delivery_delay(Duration::from_secs(2));
    let bad_name = client.create_queue_with("Orders", settings).await;
    assert_refused(bad_name, "queue_name", "Orders");
    assert_eq!(sent.calls_async().await, 0);
}
