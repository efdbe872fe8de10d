//! Creating a queue: with settings (`Client::create_queue_with`, as
//! wrangler's `queues create` sends them, and the one edit that follows an
//! answer that does not show them), and the lookup after a lost answer,
//! which adopts only a queue created after the create was sent, whatever
//! the server's clock says. A submodule of `wire_resources`, whose helpers
//! it shares.

use super::*;

use std::time::SystemTime;

/// The settings of the facts sheet's `wrangler queues create orders
/// --delivery-delay-secs 2 --message-retention-period-secs 3600`.
fn wrangler_settings() -> QueueSettings {
    QueueSettings::new()
        .delivery_delay(Duration::from_secs(2))
        .message_retention_period(Duration::from_secs(3600))
}

/// The create request wrangler sends for [`wrangler_settings`].
fn wrangler_request() -> Value {
    json!({
        "queue_name": NAME,
        "settings": {"delivery_delay": 2, "message_retention_period": 3600}
    })
}

/// The edit that applies [`wrangler_settings`].
fn edit_request() -> Value {
    json!({"settings": {"delivery_delay": 2, "message_retention_period": 3600}})
}

/// A queue named [`NAME`] with these settings (none when `None`), created
/// at `created_on`.
fn created_queue(settings: Option<Value>, created_on: &str) -> Value {
    let mut queue = json!({
        "queue_id": QUEUE,
        "queue_name": NAME,
        "created_on": created_on,
        "modified_on": created_on,
        "consumers": [],
        "consumers_total_count": 0,
        "producers": [],
        "producers_total_count": 0
    });
    if let Some(settings) = settings {
        queue["settings"] = settings;
    }
    queue
}

/// `SystemTime` as an HTTP `Date` header.
fn http_date(time: SystemTime) -> String {
    httpdate::fmt_http_date(time)
}

/// A mock of the create, matching exactly `body`, answering `status`
/// with `answer` and a `Date` of `date`.
async fn create_mock(
    server: &MockServer,
    body: Value,
    answer: (u16, Value),
    date: SystemTime,
) -> Mock<'_> {
    let (status, answer) = answer;
    server
        .mock_async(|when, then| {
            Auth::Token
                .authenticated(when.method(POST).path(queues_path()))
                .header("content-type", "application/json")
                .json_body(body);
            then.status(status)
                .header("date", http_date(date))
                .json_body(answer);
        })
        .await
}

/// A mock of the name lookup answering these queues with a `Date` of `date`.
async fn lookup_mock(server: &MockServer, queues: Value, date: SystemTime) -> Mock<'_> {
    server
        .mock_async(|when, then| {
            exact_query(
                Auth::Token.authenticated(when.method(GET).path(queues_path())),
                &[("page", "1"), ("name", NAME)],
            );
            then.status(200)
                .header("date", http_date(date))
                .json_body(success(queues));
        })
        .await
}

/// A mock of the edit, matching exactly `body`.
async fn edit_mock(server: &MockServer, body: Value) -> Mock<'_> {
    server
        .mock_async(|when, then| {
            Auth::Token
                .authenticated(when.method(PATCH).path(path("")))
                .json_body(body);
            then.status(200).json_body(success(created_queue(
                Some(json!({"delivery_delay": 2, "message_retention_period": 3600})),
                "2024-03-20T16:09:14.154Z",
            )));
        })
        .await
}

// ---------------------------------------------------------------------------
// Settings given at creation
// ---------------------------------------------------------------------------

/// The settings go in the create, as wrangler sends them, every one as
/// `edit` writes it (a delay rounded up to whole seconds), and no setting
/// is exactly `create_queue`'s request. An answer that shows them (beside
/// others not asked about) needs nothing more; one that does not (none at
/// all, others, or some left out) gets exactly one edit with all of them.
#[tokio::test]
async fn create_queue_with_sends_the_settings_in_the_create() {
    let every =
        json!({"delivery_delay": 3, "delivery_paused": true, "message_retention_period": 60});
    let every_settings = QueueSettings::new()
        .delivery_delay(Duration::from_millis(2_001))
        .delivery_paused(true)
        .message_retention_period(Duration::from_secs(60));
    let shown =
        json!({"delivery_delay": 2.0, "delivery_paused": false, "message_retention_period": 3600});
    // (settings, exact create request, settings in the answer, edits)
    let mut cases = vec![
        (wrangler_settings(), wrangler_request(), Some(shown), 0),
        (
            every_settings,
            json!({"queue_name": NAME, "settings": every}),
            Some(every),
            0,
        ),
        (QueueSettings::new(), json!({"queue_name": NAME}), None, 0),
    ];
    for answered in [
        None,
        Some(json!(null)),
        Some(json!({})),
        Some(json!({"delivery_delay": 0, "message_retention_period": 345600})),
        Some(json!({"delivery_delay": 2})),
        Some(json!({"delivery_delay": 2, "message_retention_period": 3600.5})),
    ] {
        cases.push((wrangler_settings(), wrangler_request(), answered, 1));
    }
    for (settings, request, answered, edits) in cases {
        let server = MockServer::start_async().await;
        let now = SystemTime::now();
        let answer = success(created_queue(answered.clone(), &rfc3339(now)));
        let create = create_mock(&server, request.clone(), (200, answer), now).await;
        let edit = edit_mock(&server, edit_request()).await;
        let others = catch_all(&server).await;
        let client = client(&server, Auth::Token);
        let queue = client.create_queue_with(NAME, settings.clone()).await;
        let queue = queue.unwrap_or_else(|error| panic!("{answered:?}: {error:?}"));
        assert_eq!((queue.id(), queue.name()), (QUEUE, Some(NAME)));
        let mut creates = 1;
        if settings == QueueSettings::new() {
            client.create_queue(NAME).await.expect("created");
            creates = 2;
        }
        let context = (&request, &answered);
        assert_calls(context, &[(&create, creates), (&edit, edits), (&others, 0)]).await;
    }
}

/// The edit that applies the settings fails: its error is the call's
/// (the queue exists, with Cloudflare's defaults).
#[tokio::test]
async fn a_failed_edit_after_the_create_is_the_error() {
    let server = MockServer::start_async().await;
    let now = SystemTime::now();
    let created = (200, success(created_queue(None, &rfc3339(now))));
    let create = create_mock(&server, wrangler_request(), created, now).await;
    let edit = server
        .mock_async(|when, then| {
            when.method(PATCH).path(path(""));
            then.status(400).json_body(failure(
                codes::JSON_REQUEST_BODY_INVALID,
                "invalid settings",
            ));
        })
        .await;
    let error = client(&server, Auth::Token)
        .create_queue_with(NAME, wrangler_settings())
        .await
        .expect_err("the edit failed");
    assert_eq!(error.operation(), Some(Operation::EditQueue), "{error:?}");
    assert_eq!(error.codes(), [codes::JSON_REQUEST_BODY_INVALID]);
    assert_eq!(create.calls_async().await, 1);
    assert_eq!(edit.calls_async().await, 1);
}

// ---------------------------------------------------------------------------
// A lost answer: adopt only a queue created after sending
// ---------------------------------------------------------------------------

/// An answer without `queue_id`, or a lost one (a 500 or a 502), is
/// followed by one lookup, which adopts a queue created after the create
/// was sent, whether the server's clock is ours, an hour ahead or an hour
/// behind: compared with our clock alone, the first would look created an
/// hour late and the second an hour before the create. The listing decides
/// whether the settings need the edit, as a create's answer would. A queue
/// of that name created earlier by someone else (item 10 of the review),
/// or found without a readable `created_on`, is not the create's: the
/// caller gets the create's error, and someone else's queue is never edited.
#[tokio::test]
async fn a_lost_answer_adopts_only_a_queue_created_after_sending() {
    let shown = || Some(json!({"delivery_delay": 2, "message_retention_period": 3600}));
    let after = |skew: i64| json!(rfc3339(shifted(skew) + Duration::from_millis(200)));
    let before = |skew: i64| json!(rfc3339(shifted(skew - 3_600)));
    let lost = |status| {
        (
            status,
            failure(codes::UNKNOWN_INTERNAL_ERROR, "internal error"),
        )
    };
    let no_id = || (200, success(json!({"queue_name": NAME})));
    // (skew, with settings, create's answer, listed created_on, listed
    // settings, edits, or the create's status as the error)
    type Case = (
        i64,
        bool,
        (u16, Value),
        Value,
        Option<Value>,
        Result<usize, u16>,
    );
    let mut cases: Vec<Case> = vec![
        (0, true, no_id(), after(0), shown(), Ok(0)),
        (0, true, no_id(), after(0), None, Ok(1)),
        (
            0,
            true,
            lost(502),
            json!(rfc3339(shifted(-60))),
            None,
            Err(502),
        ),
        (0, true, lost(500), after(0), None, Ok(1)),
    ];
    for skew in [0_i64, 3_600, -3_600] {
        cases.push((skew, false, lost(500), before(skew), None, Err(500)));
        cases.push((skew, true, lost(500), after(skew), shown(), Ok(0)));
    }
    for unreadable in [json!(null), json!("yesterday"), json!(1_710_950_954)] {
        cases.push((0, false, lost(500), unreadable, None, Err(500)));
    }
    for (skew, with_settings, (status, answer), created_on, listed, expected) in cases {
        let context = (skew, with_settings, status, &created_on, &listed);
        let server = MockServer::start_async().await;
        let server_now = shifted(skew);
        let request = match with_settings {
            true => wrangler_request(),
            false => json!({"queue_name": NAME}),
        };
        let create = create_mock(&server, request, (status, answer), server_now).await;
        let mut found = created_queue(listed.clone(), "");
        found["created_on"] = created_on.clone();
        let lookup = lookup_mock(&server, json!([found]), server_now).await;
        let edit = edit_mock(&server, edit_request()).await;
        let others = catch_all(&server).await;
        let client = client(&server, Auth::Token);
        let created = match with_settings {
            true => client.create_queue_with(NAME, wrangler_settings()).await,
            false => client.create_queue(NAME).await,
        };
        let edits = match (created, expected) {
            (Ok(queue), Ok(edits)) => {
                assert_eq!((queue.id(), queue.name()), (QUEUE, Some(NAME)));
                edits
            }
            (Err(error), Err(status)) => {
                assert_eq!(error.status(), Some(status), "{context:?}: {error:?}");
                assert_eq!(error.operation(), Some(Operation::CreateQueue));
                assert!(error.may_have_landed());
                0
            }
            (got, _) => panic!("{context:?}: {got:?}"),
        };
        assert_calls(
            context,
            &[(&create, 1), (&lookup, 1), (&edit, edits), (&others, 0)],
        )
        .await;
    }
}
