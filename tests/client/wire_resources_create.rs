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
    status: u16,
    answer: Value,
    date: SystemTime,
) -> Mock<'_> {
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

/// The settings go in the create, as wrangler sends them; an answer that
/// shows them (beside others not asked about) needs nothing more.
#[tokio::test]
async fn create_queue_with_sends_the_settings_in_the_create() {
    let server = MockServer::start_async().await;
    let now = SystemTime::now();
    let answer = created_queue(
        Some(
            json!({"delivery_delay": 2.0, "delivery_paused": false, "message_retention_period": 3600}),
        ),
        &rfc3339(now),
    );
    let create = create_mock(&server, wrangler_request(), 200, success(answer), now).await;
    let others = catch_all(&server).await;
    let queue = client(&server, Auth::Token)
        .create_queue_with(NAME, wrangler_settings())
        .await
        .expect("created");
    assert_eq!((queue.id(), queue.name()), (QUEUE, Some(NAME)));
    assert_eq!(create.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0, "no edit, no lookup");
}

/// Every setting, with a delay rounded up to whole seconds as `edit` does.
#[tokio::test]
async fn create_queue_with_sends_every_setting_as_edit_writes_it() {
    let server = MockServer::start_async().await;
    let now = SystemTime::now();
    let settings =
        json!({"delivery_delay": 3, "delivery_paused": true, "message_retention_period": 60});
    let create = create_mock(
        &server,
        json!({"queue_name": NAME, "settings": settings}),
        200,
        success(created_queue(Some(settings.clone()), &rfc3339(now))),
        now,
    )
    .await;
    let others = catch_all(&server).await;
    client(&server, Auth::Token)
        .create_queue_with(
            NAME,
            QueueSettings::new()
                .delivery_delay(Duration::from_millis(2_001))
                .delivery_paused(true)
                .message_retention_period(Duration::from_secs(60)),
        )
        .await
        .expect("created");
    assert_eq!(create.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0);
}

/// No setting: exactly `create_queue`'s request, without `settings`.
#[tokio::test]
async fn create_queue_with_no_setting_sends_only_the_name() {
    let server = MockServer::start_async().await;
    let now = SystemTime::now();
    let create = create_mock(
        &server,
        json!({"queue_name": NAME}),
        200,
        success(created_queue(None, &rfc3339(now))),
        now,
    )
    .await;
    let others = catch_all(&server).await;
    let client = client(&server, Auth::Token);
    client
        .create_queue_with(NAME, QueueSettings::new())
        .await
        .expect("created");
    client.create_queue(NAME).await.expect("created");
    assert_eq!(create.calls_async().await, 2);
    assert_eq!(others.calls_async().await, 0, "no edit without settings");
}

/// An answer that does not show the settings asked for (none at all,
/// others, or some left out) gets exactly one edit with all of them.
#[tokio::test]
async fn an_answer_without_the_settings_asked_gets_one_edit() {
    for settings in [
        None,
        Some(json!(null)),
        Some(json!({})),
        Some(json!({"delivery_delay": 0, "message_retention_period": 345600})),
        Some(json!({"delivery_delay": 2})),
        Some(json!({"delivery_delay": 2, "message_retention_period": 3600.5})),
    ] {
        let server = MockServer::start_async().await;
        let now = SystemTime::now();
        let answer = created_queue(settings.clone(), &rfc3339(now));
        let create = create_mock(&server, wrangler_request(), 200, success(answer), now).await;
        let edit = edit_mock(&server, edit_request()).await;
        let others = catch_all(&server).await;
        let queue = client(&server, Auth::Token)
            .create_queue_with(NAME, wrangler_settings())
            .await;
        let queue = match queue {
            Ok(queue) => queue,
            Err(error) => panic!("{settings:?}: {error:?}"),
        };
        assert_eq!(queue.id(), QUEUE);
        assert_eq!(create.calls_async().await, 1, "{settings:?}");
        assert_eq!(edit.calls_async().await, 1, "{settings:?}");
        assert_eq!(others.calls_async().await, 0, "{settings:?}");
    }
}

/// An answer without `queue_id` is looked up, and the listing decides
/// whether the settings need the edit.
#[tokio::test]
async fn an_answer_without_queue_id_is_looked_up_and_its_listing_checked() {
    for (listed, edits) in [
        (
            Some(json!({"delivery_delay": 2, "message_retention_period": 3600})),
            0,
        ),
        (None, 1),
    ] {
        let server = MockServer::start_async().await;
        let now = SystemTime::now();
        let create = create_mock(
            &server,
            wrangler_request(),
            200,
            success(json!({"queue_name": NAME})),
            now,
        )
        .await;
        let lookup = lookup_mock(
            &server,
            json!([created_queue(listed.clone(), &rfc3339(now))]),
            now,
        )
        .await;
        let edit = edit_mock(&server, edit_request()).await;
        let others = catch_all(&server).await;
        client(&server, Auth::Token)
            .create_queue_with(NAME, wrangler_settings())
            .await
            .expect("created and found");
        assert_eq!(create.calls_async().await, 1);
        assert_eq!(lookup.calls_async().await, 1);
        assert_eq!(edit.calls_async().await, edits, "{listed:?}");
        assert_eq!(others.calls_async().await, 0);
    }
}

/// The settings are checked before anything is sent, by the check `edit`
/// makes: the same errors, naming the same fields.
#[tokio::test]
async fn create_queue_with_checks_settings_as_edit_does() {
    let server = MockServer::start_async().await;
    let sent = catch_all(&server).await;
    let client = client(&server, Auth::Token);
    let day = Duration::from_secs(86_400);
    for (settings, field) in [
        (
            QueueSettings::new().delivery_delay(day + Duration::from_secs(1)),
            "settings.delivery_delay",
        ),
        (
            QueueSettings::new().message_retention_period(Duration::from_secs(59)),
            "settings.message_retention_period",
        ),
        (
            QueueSettings::new().message_retention_period(14 * day + Duration::from_secs(1)),
            "settings.message_retention_period",
        ),
    ] {
        let created = client
            .create_queue_with(NAME, settings.clone())
            .await
            .expect_err("refused");
        let edited = queue(&server, Auth::Token)
            .edit(settings.clone())
            .await
            .expect_err("refused");
        assert_eq!(invalid_field(&created), Ok(field), "{settings:?}");
        assert_eq!(created.to_string(), edited.to_string());
        assert_eq!(created.attempts(), 0);
    }
    let bad_name = client
        .create_queue_with("Orders", wrangler_settings())
        .await
        .expect_err("refused");
    assert_eq!(invalid_field(&bad_name), Ok("queue_name"));
    assert_eq!(sent.calls_async().await, 0);
}

/// The edit that applies the settings fails: its error is the call's
/// (the queue exists, with Cloudflare's defaults).
#[tokio::test]
async fn a_failed_edit_after_the_create_is_the_error() {
    let server = MockServer::start_async().await;
    let now = SystemTime::now();
    let create = create_mock(
        &server,
        wrangler_request(),
        200,
        success(created_queue(None, &rfc3339(now))),
        now,
    )
    .await;
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

/// Item 10 of the review: a queue of that name created an hour earlier by
/// someone else is not the create's; the caller gets the create's error.
#[tokio::test]
async fn a_lost_answer_and_an_older_queue_of_that_name_is_the_first_error() {
    for skew in [0_i64, 3_600, -3_600] {
        let server = MockServer::start_async().await;
        let server_now = shifted(skew);
        let created_earlier = rfc3339(shifted(skew - 3_600));
        let create = create_mock(
            &server,
            json!({"queue_name": NAME}),
            500,
            failure(codes::UNKNOWN_INTERNAL_ERROR, "internal error"),
            server_now,
        )
        .await;
        let lookup = lookup_mock(
            &server,
            json!([created_queue(None, &created_earlier)]),
            server_now,
        )
        .await;
        let others = catch_all(&server).await;
        let error = client(&server, Auth::Token)
            .create_queue(NAME)
            .await
            .expect_err("someone else's queue");
        assert_eq!(error.status(), Some(500), "skew {skew}: {error:?}");
        assert_eq!(error.operation(), Some(Operation::CreateQueue));
        assert!(error.may_have_landed());
        assert_eq!(create.calls_async().await, 1, "exactly one POST");
        assert_eq!(lookup.calls_async().await, 1);
        assert_eq!(others.calls_async().await, 0, "never edited");
    }
}

/// The same with settings: someone else's queue is never edited.
#[tokio::test]
async fn a_lost_answer_and_an_older_queue_is_never_edited() {
    let server = MockServer::start_async().await;
    let now = SystemTime::now();
    let create = create_mock(
        &server,
        wrangler_request(),
        502,
        failure(codes::UNKNOWN_INTERNAL_ERROR, "bad gateway"),
        now,
    )
    .await;
    let lookup = lookup_mock(
        &server,
        json!([created_queue(None, &rfc3339(shifted(-60)))]),
        now,
    )
    .await;
    let others = catch_all(&server).await;
    let error = client(&server, Auth::Token)
        .create_queue_with(NAME, wrangler_settings())
        .await
        .expect_err("someone else's queue");
    assert_eq!(error.status(), Some(502), "{error:?}");
    assert_eq!(create.calls_async().await, 1);
    assert_eq!(lookup.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0, "no PATCH");
}

/// A queue created after sending is the create's, whether the server's
/// clock is ours, an hour ahead or an hour behind: compared with our
/// clock alone, the first would look created an hour late and the
/// second an hour before the create.
#[tokio::test]
async fn a_lost_answer_and_a_queue_created_after_sending_is_adopted_whatever_the_skew() {
    for skew in [0_i64, 3_600, -3_600] {
        let server = MockServer::start_async().await;
        // The server dates its answers by its clock, and created the
        // queue a moment after the create was sent (by that clock too).
        let server_now = shifted(skew);
        let created_on = rfc3339(shifted(skew) + Duration::from_millis(200));
        let create = create_mock(
            &server,
            wrangler_request(),
            500,
            failure(codes::UNKNOWN_INTERNAL_ERROR, "internal error"),
            server_now,
        )
        .await;
        let listed = created_queue(
            Some(json!({"delivery_delay": 2, "message_retention_period": 3600})),
            &created_on,
        );
        let lookup = lookup_mock(&server, json!([listed]), server_now).await;
        let others = catch_all(&server).await;
        let queue = client(&server, Auth::Token)
            .create_queue_with(NAME, wrangler_settings())
            .await;
        let queue = match queue {
            Ok(queue) => queue,
            Err(error) => panic!("skew {skew}: {error:?}"),
        };
        assert_eq!((queue.id(), queue.name()), (QUEUE, Some(NAME)));
        assert_eq!(create.calls_async().await, 1, "exactly one POST");
        assert_eq!(lookup.calls_async().await, 1);
        assert_eq!(others.calls_async().await, 0, "settings shown: no edit");
    }
}

/// An adopted queue whose listing does not show the settings gets the one
/// edit, as a create's answer would.
#[tokio::test]
async fn an_adopted_queue_without_the_settings_gets_one_edit() {
    let server = MockServer::start_async().await;
    let now = SystemTime::now();
    let create = create_mock(
        &server,
        wrangler_request(),
        500,
        failure(codes::UNKNOWN_INTERNAL_ERROR, "internal error"),
        now,
    )
    .await;
    let lookup = lookup_mock(&server, json!([created_queue(None, &rfc3339(now))]), now).await;
    let edit = edit_mock(&server, edit_request()).await;
    let others = catch_all(&server).await;
    client(&server, Auth::Token)
        .create_queue_with(NAME, wrangler_settings())
        .await
        .expect("adopted");
    assert_eq!(create.calls_async().await, 1);
    assert_eq!(lookup.calls_async().await, 1);
    assert_eq!(edit.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0);
}

/// A queue found without a readable `created_on` cannot be told from
/// someone else's: the first error.
#[tokio::test]
async fn a_lost_answer_and_a_queue_without_a_creation_time_is_the_first_error() {
    for created_on in [json!(null), json!("yesterday"), json!(1_710_950_954)] {
        let server = MockServer::start_async().await;
        let now = SystemTime::now();
        let create = create_mock(
            &server,
            json!({"queue_name": NAME}),
            500,
            failure(codes::UNKNOWN_INTERNAL_ERROR, "internal error"),
            now,
        )
        .await;
        let mut listed = created_queue(None, "");
        listed["created_on"] = created_on.clone();
        let lookup = lookup_mock(&server, json!([listed]), now).await;
        let error = client(&server, Auth::Token)
            .create_queue(NAME)
            .await
            .expect_err("cannot tell");
        assert_eq!(error.status(), Some(500), "{created_on}: {error:?}");
        assert_eq!(
            error.operation(),
            Some(Operation::CreateQueue),
            "{created_on}"
        );
        assert_eq!(create.calls_async().await, 1);
        assert_eq!(lookup.calls_async().await, 1);
    }
}
