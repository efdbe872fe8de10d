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

/// Checks how many times each named mock was called, naming the mock and
/// `context` (the case) when a count is off.
async fn assert_calls(context: impl std::fmt::Debug, expected: &[(&str, &Mock<'_>, usize)]) {
    for (name, mock, calls) in expected {
        assert_eq!(
            mock.calls_async().await,
            *calls,
            "{name} calls, {context:?}"
        );
    }
}

/// A mock of `method path` answering `status` with Cloudflare's failure
/// envelope of `code` (the message is the code's name: no test reads it).
async fn failing(
    server: &MockServer,
    method: httpmock::Method,
    path: String,
    status: u16,
    code: u32,
) -> Mock<'_> {
    answering(server, method, path, status, failure(code, "failed")).await
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

// ---------------------------------------------------------------------------
// Name resolution
// ---------------------------------------------------------------------------

/// The published list answer, filtered by the server as wrangler expects:
/// its `total_pages` of 100 does not make the client read page 2.
#[tokio::test]
async fn queue_by_name_honoured_filter_takes_one_request() {
    for auth in BOTH {
        let server = MockServer::start_async().await;
        let mut answer = success(json!([example_queue()]));
        answer["result_info"] = example_result_info();
        let first = server
            .mock_async(|when, then| {
                exact_query(
                    auth.authenticated(when.method(GET).path(queues_path())),
                    &[("page", "1"), ("name", NAME)],
                );
                then.status(200).json_body(answer);
            })
            .await;
        let others = catch_all(&server).await;
        let queue = client(&server, auth)
            .queue_by_name(NAME)
            .await
            .expect("found");
        assert_eq!(queue.id(), QUEUE, "{auth:?}");
        assert_eq!(queue.name(), Some(NAME));
        assert_eq!(first.calls_async().await, 1, "{auth:?}");
        assert_eq!(others.calls_async().await, 0, "{auth:?}");
    }
}

/// A server that ignores `name` sends other queues: the client pages on
/// (keeping the filter) until an exact match, and no further.
#[tokio::test]
async fn queue_by_name_pages_on_when_the_filter_is_ignored() {
    let server = MockServer::start_async().await;
    let info = json!({"count": 2, "page": 1, "per_page": 2, "total_count": 5, "total_pages": 3});
    let one = list_mock(
        &server,
        &[("page", "1"), ("name", NAME)],
        list_page(
            &[("billing", "b1"), ("example-queue-dlq", "c1")],
            Some(info.clone()),
        ),
    )
    .await;
    let two = list_mock(
        &server,
        &[("page", "2"), ("name", NAME)],
        list_page(&[("Example-Queue", "d1"), (NAME, QUEUE)], Some(info)),
    )
    .await;
    let others = catch_all(&server).await;
    let queue = client(&server, Auth::Token)
        .queue_by_name(NAME)
        .await
        .expect("found on page 2");
    assert_eq!(queue.id(), QUEUE);
    assert_eq!(queue.name(), Some(NAME));
    assert_eq!(one.calls_async().await, 1);
    assert_eq!(two.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0, "page 3 is not read");
}

#[tokio::test]
async fn queue_by_name_unknown_is_not_found() {
    // An honoured filter: an empty page, read once.
    let server = MockServer::start_async().await;
    let empty = list_mock(
        &server,
        &[("page", "1"), ("name", NAME)],
        list_page(
            &[],
            Some(
                json!({"count": 0, "page": 1, "per_page": 20, "total_count": 0, "total_pages": 0}),
            ),
        ),
    )
    .await;
    let others = catch_all(&server).await;
    let error = client(&server, Auth::Token)
        .queue_by_name(NAME)
        .await
        .expect_err("unknown");
    assert!(
        matches!(&error, Error::UnknownQueueName { name, .. } if name == NAME),
        "{error:?}"
    );
    assert!(error.is_not_found());
    assert!(!error.may_have_landed());
    assert!(error.to_string().contains(NAME), "{error}");
    assert_eq!(empty.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0);

    // An ignored filter and no `result_info`: paged on until an empty page.
    let server = MockServer::start_async().await;
    let one = list_mock(
        &server,
        &[("page", "1"), ("name", NAME)],
        list_page(&[("billing", "b1")], None),
    )
    .await;
    let two = list_mock(
        &server,
        &[("page", "2"), ("name", NAME)],
        list_page(&[], None),
    )
    .await;
    let others = catch_all(&server).await;
    let error = client(&server, Auth::Token)
        .queue_by_name(NAME)
        .await
        .expect_err("unknown");
    assert!(
        matches!(&error, Error::UnknownQueueName { .. }),
        "{error:?}"
    );
    assert_eq!(one.calls_async().await, 1);
    assert_eq!(two.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0);

    // An ignored filter: the last page `result_info` names ends the search.
    let server = MockServer::start_async().await;
    let info = json!({"count": 1, "page": 1, "per_page": 1, "total_count": 2, "total_pages": 2});
    let one = list_mock(
        &server,
        &[("page", "1"), ("name", NAME)],
        list_page(&[("billing", "b1")], Some(info.clone())),
    )
    .await;
    let two = list_mock(
        &server,
        &[("page", "2"), ("name", NAME)],
        list_page(&[("orders", "o1")], Some(info)),
    )
    .await;
    let others = catch_all(&server).await;
    let error = client(&server, Auth::Token)
        .queue_by_name(NAME)
        .await
        .expect_err("unknown");
    assert!(
        matches!(&error, Error::UnknownQueueName { .. }),
        "{error:?}"
    );
    assert_eq!(one.calls_async().await, 1);
    assert_eq!(two.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0, "page 3 is past total_pages");
}

#[tokio::test]
async fn queue_by_name_twice_listed_is_ambiguous() {
    let server = MockServer::start_async().await;
    let page = list_mock(
        &server,
        &[("page", "1"), ("name", NAME)],
        list_page(&[(NAME, "a1"), (NAME, "a2")], Some(example_result_info())),
    )
    .await;
    let others = catch_all(&server).await;
    let error = client(&server, Auth::Token)
        .queue_by_name(NAME)
        .await
        .expect_err("ambiguous");
    assert!(
        matches!(&error, Error::AmbiguousQueueName { name, queue_ids, .. } if name == NAME && queue_ids == &["a1", "a2"]),
        "{error:?}"
    );
    assert!(!error.is_not_found());
    assert_eq!(page.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0);
}

#[tokio::test]
async fn empty_names_are_refused_before_sending() {
    let server = MockServer::start_async().await;
    let sent = catch_all(&server).await;
    let client = client(&server, Auth::Token);
    let error = client.queue_by_name("").await.expect_err("empty");
    assert_eq!(invalid_field(&error), Ok("name"));
    assert_eq!(error.attempts(), 0);
    let error = client.create_queue("").await.expect_err("empty");
    assert_eq!(invalid_field(&error), Ok("queue_name"));
    assert_eq!(error.attempts(), 0);
    assert_eq!(sent.calls_async().await, 0);
}

// ---------------------------------------------------------------------------
// Listing
// ---------------------------------------------------------------------------

#[tokio::test]
async fn queues_reads_every_page_without_a_name_filter() {
    let server = MockServer::start_async().await;
    let info = json!({"count": 2, "page": 1, "per_page": 2, "total_count": 3, "total_pages": 2});
    let mut first = success(json!([
        example_queue(),
        {"queue_id": "b1", "queue_name": "billing"}
    ]));
    first["result_info"] = info.clone();
    let mut second = success(json!([{"queue_id": "c1", "queue_name": "orders"}]));
    second["result_info"] = info;
    let one = list_mock(&server, &[("page", "1")], first).await;
    let two = list_mock(&server, &[("page", "2")], second).await;
    let others = catch_all(&server).await;
    let queues = client(&server, Auth::Token).queues().await.expect("listed");
    let mut billing = QueueInfo::default();
    billing.queue_id = Some("b1".into());
    billing.queue_name = Some("billing".into());
    let mut orders = QueueInfo::default();
    orders.queue_id = Some("c1".into());
    orders.queue_name = Some("orders".into());
    assert_eq!(queues, vec![example_queue_decoded(), billing, orders]);
    assert_eq!(one.calls_async().await, 1);
    assert_eq!(two.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0, "page 3 is past total_pages");
}

/// Without `result_info`, the list ends at the first empty page.
#[tokio::test]
async fn queues_without_result_info_stop_at_an_empty_page() {
    let server = MockServer::start_async().await;
    let one = list_mock(&server, &[("page", "1")], list_page(&[("a", "a1")], None)).await;
    let two = list_mock(&server, &[("page", "2")], list_page(&[("b", "b1")], None)).await;
    let three = list_mock(&server, &[("page", "3")], list_page(&[], None)).await;
    let others = catch_all(&server).await;
    let queues = client(&server, Auth::Token).queues().await.expect("listed");
    let names: Vec<Option<&str>> = queues.iter().map(|q| q.queue_name.as_deref()).collect();
    assert_eq!(names, [Some("a"), Some("b")]);
    for mock in [&one, &two, &three] {
        assert_eq!(mock.calls_async().await, 1);
    }
    assert_eq!(others.calls_async().await, 0);
}

// ---------------------------------------------------------------------------
// Create
// ---------------------------------------------------------------------------

#[tokio::test]
async fn create_queue_posts_the_name() {
    for auth in BOTH {
        let server = MockServer::start_async().await;
        let create = server
            .mock_async(|when, then| {
                auth.authenticated(when.method(POST).path(queues_path()))
                    .header("content-type", "application/json")
                    .query_param_missing("page")
                    .json_body(json!({"queue_name": NAME}));
                then.status(200).json_body(success(example_queue()));
            })
            .await;
        let others = catch_all(&server).await;
        let queue = client(&server, auth)
            .create_queue(NAME)
            .await
            .expect("created");
        assert_eq!(queue.id(), QUEUE, "{auth:?}");
        assert_eq!(queue.name(), Some(NAME));
        assert_eq!(create.calls_async().await, 1, "{auth:?}");
        assert_eq!(others.calls_async().await, 0, "no lookup: {auth:?}");
    }
}

/// An answer without `queue_id` (or with an empty one) is followed by
/// exactly one name lookup.
#[tokio::test]
async fn a_create_answer_without_queue_id_is_followed_by_one_lookup() {
    for answer in [
        json!({"queue_name": NAME, "created_on": "2024-03-20T16:09:14.154Z"}),
        json!({"queue_id": "", "queue_name": NAME}),
        json!(null),
    ] {
        let server = MockServer::start_async().await;
        let create = server
            .mock_async(|when, then| {
                when.method(POST)
                    .path(queues_path())
                    .json_body(json!({"queue_name": NAME}));
                then.status(200).json_body(success(answer.clone()));
            })
            .await;
        let lookup = list_mock(
            &server,
            &[("page", "1"), ("name", NAME)],
            list_page(&[(NAME, QUEUE)], Some(example_result_info())),
        )
        .await;
        let others = catch_all(&server).await;
        let queue = client(&server, Auth::Token)
            .create_queue(NAME)
            .await
            .expect("created and found");
        assert_eq!(queue.id(), QUEUE, "{answer}");
        assert_eq!(queue.name(), Some(NAME));
        assert_eq!(create.calls_async().await, 1, "{answer}");
        assert_eq!(lookup.calls_async().await, 1, "{answer}");
        assert_eq!(others.calls_async().await, 0, "{answer}");
    }
}

/// A 500 may hide a create that landed: it is not repeated (even under a
/// policy that retries), the name is looked up, and the queue found,
/// created after the create was sent, is the create's success (one
/// created before is someone else's: `create::a_lost_answer_and_an_older_queue...`).
#[tokio::test]
async fn a_lost_create_answer_is_looked_up_not_repeated() {
    let server = MockServer::start_async().await;
    let create = server
        .mock_async(|when, then| {
            when.method(POST)
                .path(queues_path())
                .json_body(json!({"queue_name": NAME}));
            then.status(500)
                .json_body(failure(codes::UNKNOWN_INTERNAL_ERROR, "internal error"));
        })
        .await;
    // Created by the create: after it was sent.
    let mut found = example_queue();
    found["created_on"] = json!(rfc3339(std::time::SystemTime::now()));
    let lookup = list_mock(
        &server,
        &[("page", "1"), ("name", NAME)],
        success(json!([found])),
    )
    .await;
    let others = catch_all(&server).await;
    let queue = client(&server, Auth::Token)
        .create_queue(NAME)
        .await
        .expect("found after the 500");
    assert_eq!(queue.id(), QUEUE);
    assert_eq!(queue.name(), Some(NAME));
    assert_eq!(create.calls_async().await, 1, "exactly one POST");
    assert_eq!(lookup.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0);
}

/// When the lookup after a lost answer finds nothing, the caller gets the
/// create's own error, which says it may have landed.
#[tokio::test]
async fn a_lost_create_answer_not_found_after_is_the_500() {
    let server = MockServer::start_async().await;
    let create = server
        .mock_async(|when, then| {
            when.method(POST)
                .path(queues_path())
                .json_body(json!({"queue_name": NAME}));
            then.status(500)
                .json_body(failure(codes::UNKNOWN_INTERNAL_ERROR, "internal error"));
        })
        .await;
    let lookup = list_mock(
        &server,
        &[("page", "1"), ("name", NAME)],
        list_page(&[], None),
    )
    .await;
    let others = catch_all(&server).await;
    let error = client(&server, Auth::Token)
        .create_queue(NAME)
        .await
        .expect_err("not found after the 500");
    assert_eq!(error.status(), Some(500), "{error:?}");
    assert_eq!(error.codes(), [codes::UNKNOWN_INTERNAL_ERROR]);
    assert_eq!(error.operation(), Some(Operation::CreateQueue));
    assert!(error.may_have_landed());
    assert_eq!(error.attempts(), 1);
    assert!(
        !error.is_not_found(),
        "the lookup's error is not the one given"
    );
    assert_eq!(create.calls_async().await, 1, "exactly one POST");
    assert_eq!(lookup.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0);
}

/// A refused create (the name taken or invalid: code 11003) surely did
/// not land: no lookup follows.
#[tokio::test]
async fn a_refused_create_is_not_looked_up() {
    let server = MockServer::start_async().await;
    let create = server
        .mock_async(|when, then| {
            when.method(POST)
                .path(queues_path())
                .json_body(json!({"queue_name": "refused-by-the-server"}));
            then.status(400)
                .json_body(failure(codes::INVALID_QUEUE_NAME, "InvalidQueueName"));
        })
        .await;
    let others = catch_all(&server).await;
    let error = client(&server, Auth::Token)
        .create_queue("refused-by-the-server")
        .await
        .expect_err("refused");
    assert_eq!(error.status(), Some(400));
    assert_eq!(error.codes(), [11_003]);
    assert!(!error.may_have_landed());
    assert_eq!(create.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0);
}

/// A taken name (409, 11009) is a conflict with what exists: not retried,
/// whatever the policy says about 409s.
#[tokio::test]
async fn a_taken_name_is_not_retried() {
    let server = MockServer::start_async().await;
    let create = server
        .mock_async(|when, then| {
            when.method(POST).path(queues_path());
            then.status(409)
                .json_body(failure(codes::QUEUE_NAME_TAKEN, "queue name already taken"));
        })
        .await;
    let others = catch_all(&server).await;
    let error = client(&server, Auth::Token)
        .create_queue("orders")
        .await
        .expect_err("taken");
    assert_eq!((error.status(), error.codes()), (Some(409), vec![11_009]));
    assert!(!error.is_retryable());
    assert_eq!(create.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0);
}

/// A name outside the rule the live API states (lowercase letters, digits
/// and dashes, 1 to 63) is refused before anything is sent.
#[tokio::test]
async fn a_name_cloudflare_refuses_is_refused_before_sending() {
    let server = MockServer::start_async().await;
    let others = catch_all(&server).await;
    for name in ["Not A Name", "-orders", "orders_dlq"] {
        let error = client(&server, Auth::Token)
            .create_queue(name)
            .await
            .expect_err("refused");
        assert!(
            matches!(&error, Error::InvalidInput { field, .. } if field == "queue_name"),
            "{error:?}"
        );
    }
    assert_eq!(others.calls_async().await, 0);
}

// ---------------------------------------------------------------------------
// Read, edit, delete
// ---------------------------------------------------------------------------

#[tokio::test]
async fn info_decodes_the_published_example() {
    for auth in BOTH {
        let server = MockServer::start_async().await;
        let get = server
            .mock_async(|when, then| {
                auth.authenticated(when.method(GET).path(path("")));
                then.status(200).json_body(success(example_queue()));
            })
            .await;
        let info = queue(&server, auth).info().await.expect("read");
        assert_eq!(info, example_queue_decoded(), "{auth:?}");
        assert_eq!(get.calls_async().await, 1);
    }
}

/// Shapes the live API (or a proxy) may give: counts as floats, an empty
/// dead-letter queue, a consumer kind this crate does not know, counts
/// left out (then the listed ones are counted), settings left out.
#[tokio::test]
async fn info_reads_odd_shapes_tolerantly() {
    let server = MockServer::start_async().await;
    let answer = json!({
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
    let get = answering(&server, GET, path(""), 200, success(answer)).await;
    let info = queue(&server, Auth::Token).info().await.expect("read");
    let mut worker = WorkerConsumer::default();
    worker.script_name = Some("shop".into());
    worker.batch_size = Some(3);
    worker.max_retries = Some(5);
    worker.retry_delay = Some(Duration::from_secs(1));
    worker.max_wait_time = Some(Duration::from_millis(250));
    let mut expected = QueueInfo::default();
    expected.queue_id = Some(QUEUE.into());
    expected.queue_name = Some(NAME.into());
    expected.settings = QueueSettings::new()
        .delivery_delay(Duration::ZERO)
        .message_retention_period(Duration::from_secs(86_400));
    expected.consumers = vec![
        ConsumerInfo::Other {
            kind: "email".into(),
            consumer_id: Some("e1".into()),
        },
        ConsumerInfo::Other {
            kind: String::new(),
            consumer_id: None,
        },
        ConsumerInfo::Worker(worker),
    ];
    expected.consumers_total_count = 3;
    expected.producers_total_count = 1;
    assert_eq!(info, expected);
    assert_eq!(info.consumers[0].kind(), "email");
    assert_eq!(info.consumers[0].consumer_id(), Some("e1"));
    assert!(info.consumers[0].as_http_pull().is_none());
    assert_eq!(get.calls_async().await, 1);
}

#[tokio::test]
async fn info_of_an_unknown_queue_is_not_found() {
    let server = MockServer::start_async().await;
    let get = answering(
        &server,
        GET,
        path(""),
        404,
        failure(codes::QUEUE_NOT_FOUND, "QueueNotFound"),
    )
    .await;
    let error = queue(&server, Auth::Token)
        .info()
        .await
        .expect_err("unknown");
    assert!(error.is_not_found(), "{error:?}");
    assert_eq!(error.operation(), Some(Operation::GetQueue));
    assert_eq!(get.calls_async().await, 1, "a 404 is not retried");
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
        assert_eq!(patch.calls_async().await, 1, "{body}");
        assert_eq!(others.calls_async().await, 0, "{body}");
    }
}

#[tokio::test]
async fn edit_checks_before_sending() {
    let server = MockServer::start_async().await;
    let sent = catch_all(&server).await;
    let queue = queue(&server, Auth::Token);
    let day = Duration::from_secs(86_400);
    let fourteen_days = Duration::from_secs(14 * 24 * 3600);
    for (settings, field) in [
        (QueueSettings::new(), "settings"),
        (
            QueueSettings::new().message_retention_period(Duration::from_secs(59)),
            "settings.message_retention_period",
        ),
        (
            QueueSettings::new().message_retention_period(Duration::from_millis(59_999)),
            "settings.message_retention_period",
        ),
        (
            QueueSettings::new().message_retention_period(fourteen_days + Duration::from_nanos(1)),
            "settings.message_retention_period",
        ),
        (
            QueueSettings::new()
                .delivery_paused(true)
                .delivery_delay(day + Duration::from_millis(1)),
            "settings.delivery_delay",
        ),
    ] {
        let error = queue.edit(settings.clone()).await.expect_err("refused");
        assert_eq!(invalid_field(&error), Ok(field), "{settings:?}");
        assert_eq!(error.attempts(), 0);
    }
    assert_eq!(sent.calls_async().await, 0);
}
