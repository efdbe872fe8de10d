//! Event subscriptions on the wire: the exact request of each of the five
//! calls (wrangler's create body, the list's `queue_id` filter and paging,
//! a PATCH of the fields set), the answers read tolerantly, input refused
//! before anything is sent, and the read-back after a lost create or
//! delete, which adopts only a subscription of the same name, source and
//! destination created after sending. A submodule of `wire_resources`,
//! whose helpers it shares.

use super::*;

use std::time::SystemTime;

use cf_queues::event_subscriptions::{
    EventSource, EventSubscription, EventSubscriptionChange, NewEventSubscription, events,
};

/// A subscription id, as the API's examples give one.
const SUBSCRIPTION: &str = "0e3c9a1b2d4f56789abcdef012345678";

/// `/accounts/{account}/event_subscriptions/subscriptions`, then `rest`.
fn subscriptions_path(rest: &str) -> String {
    format!("/accounts/{ACCOUNT}/event_subscriptions/subscriptions{rest}")
}

/// A subscription into [`QUEUE`] of `source`, created at `created_at`.
fn subscription(id: &str, name: &str, source: Value, created_at: &str) -> Value {
    json!({
        "id": id, "name": name, "enabled": true, "source": source,
        "destination": {"type": "queues.queue", "queue_id": QUEUE},
        "events": ["namespace.created", "namespace.deleted"],
        "created_at": created_at, "modified_at": created_at
    })
}

/// The create of a KV subscription into [`QUEUE`] with wrangler's default name.
fn kv_request() -> Value {
    json!({
        "name": format!("{QUEUE} kv"),
        "source": {"type": "kv"},
        "destination": {"type": "queues.queue", "queue_id": QUEUE},
        "events": ["namespace.created", "namespace.deleted"]
    })
}

fn kv() -> NewEventSubscription {
    NewEventSubscription::new(EventSource::Kv, events::kv::ALL)
}

/// A mock of the create matching exactly `body`, answering `status` with
/// `answer` and a `Date` of `date`.
async fn create_mock(
    server: &MockServer,
    body: Value,
    (status, answer): (u16, Value),
    date: SystemTime,
) -> Mock<'_> {
    server
        .mock_async(|when, then| {
            Auth::Token
                .authenticated(when.method(POST).path(subscriptions_path("")))
                .header("content-type", "application/json")
                .json_body(body);
            then.status(status)
                .header("date", httpdate::fmt_http_date(date))
                .json_body(answer);
        })
        .await
}

/// A mock of one page of the list with exactly this query.
async fn page_mock<'a>(
    server: &'a MockServer,
    query: &[(&str, &str)],
    answer: Value,
    date: SystemTime,
) -> Mock<'a> {
    server
        .mock_async(|when, then| {
            exact_query(
                Auth::Token.authenticated(when.method(GET).path(subscriptions_path(""))),
                query,
            );
            then.status(200)
                .header("date", httpdate::fmt_http_date(date))
                .json_body(answer);
        })
        .await
}

/// A list answer of these subscriptions, page `page` of `pages`.
fn listed(items: Value, page: u32, pages: u32) -> Value {
    let count = items.as_array().map_or(0, Vec::len);
    let mut answer = success(items);
    answer["result_info"] = json!({"count": count, "page": page, "per_page": 100,
                                   "total_count": 150, "total_pages": pages});
    answer
}

#[tokio::test]
async fn a_create_sends_wranglers_body_and_reads_the_subscription() {
    for (new, request) in [
        (kv(), kv_request()),
        (
            NewEventSubscription::new(
                EventSource::WorkflowsWorkflow {
                    workflow_name: "checkout".into(),
                },
                [events::workflows::INSTANCE_ERRORED],
            )
            .name("checkout failures")
            .enabled(false),
            json!({
                "name": "checkout failures", "enabled": false,
                "source": {"type": "workflows.workflow", "workflow_name": "checkout"},
                "destination": {"type": "queues.queue", "queue_id": QUEUE},
                "events": ["instance.errored"]
            }),
        ),
    ] {
        let server = MockServer::start_async().await;
        let now = SystemTime::now();
        let mut answer = request.clone();
        answer["id"] = json!(SUBSCRIPTION);
        answer["enabled"] = request.get("enabled").cloned().unwrap_or(json!(true));
        answer["created_at"] = json!("2026-12-06T10:00:00.000Z");
        answer["modified_at"] = json!("2026-12-06T10:00:00.000Z");
        let create = create_mock(&server, request.clone(), (200, success(answer)), now).await;
        let others = catch_all(&server).await;
        let created = queue(&server, Auth::Token)
            .create_event_subscription(new.clone())
            .await
            .expect("created");
        assert_eq!(created.id.as_deref(), Some(SUBSCRIPTION));
        assert_eq!(created.name.as_deref(), request["name"].as_str());
        assert_eq!(created.source, new_source(&request));
        assert_eq!(created.queue_id.as_deref(), Some(QUEUE));
        assert_eq!(created.destination_type.as_deref(), Some("queues.queue"));
        assert_eq!(
            created.created_at.as_deref(),
            Some("2026-12-06T10:00:00.000Z")
        );
        assert_calls(&request, &[(&create, 1), (&others, 0)]).await;
    }
}

/// The source a request names, as the answer reads it back.
fn new_source(request: &Value) -> EventSource {
    match &request["source"] {
        Value::Object(fields) => EventSource::from_fields(fields.clone()),
        other => panic!("no source in {other}"),
    }
}

#[tokio::test]
async fn the_list_reads_every_page_and_a_queues_list_sends_and_applies_its_filter() {
    let server = MockServer::start_async().await;
    let now = SystemTime::now();
    let at = "2026-12-06T10:00:00.000Z";
    let first = json!([subscription("a1", "kv", json!({"type": "kv"}), at)]);
    let mut other_queue = subscription("b2", "r2", json!({"type": "r2"}), at);
    other_queue["destination"]["queue_id"] = json!("ffffffffffffffffffffffffffffffff");
    let unknown = json!({"type": "email.sending", "zone_id": "z1", "domain": "d.example"});
    let second = json!([other_queue, subscription("c3", "mail", unknown.clone(), at)]);
    let base = [("per_page", "100")];
    let page = |n: &'static str, filtered: bool| {
        let mut query = vec![("page", n), base[0]];
        if filtered {
            query.push(("queue_id", QUEUE));
        }
        query
    };
    let account_1 = page_mock(&server, &page("1", false), listed(first.clone(), 1, 2), now).await;
    let account_2 = page_mock(
        &server,
        &page("2", false),
        listed(second.clone(), 2, 2),
        now,
    )
    .await;
    // A server that ignores the filter: the other queue's subscription is dropped.
    let queue_1 = page_mock(&server, &page("1", true), listed(first, 1, 2), now).await;
    let queue_2 = page_mock(&server, &page("2", true), listed(second, 2, 2), now).await;
    let others = catch_all(&server).await;
    let client = client(&server, Auth::Token);
    let all = client.event_subscriptions().await.expect("listed");
    let ids: Vec<_> = all.iter().map(|s| s.id.as_deref().unwrap_or("")).collect();
    assert_eq!(ids, ["a1", "b2", "c3"]);
    match &all[2].source {
        EventSource::Other(fields) => assert_eq!(&Value::Object(fields.clone()), &unknown),
        other => panic!("an unknown source is kept whole, not {other:?}"),
    }
    let mine = client.queue(QUEUE).expect("id").event_subscriptions().await;
    let ids: Vec<_> = mine.expect("listed").into_iter().map(|s| s.id).collect();
    assert_eq!(ids, [Some("a1".to_owned()), Some("c3".to_owned())]);
    assert_calls(
        "list",
        &[
            (&account_1, 1),
            (&account_2, 1),
            (&queue_1, 1),
            (&queue_2, 1),
            (&others, 0),
        ],
    )
    .await;
}

#[tokio::test]
async fn get_update_and_delete_send_exactly_their_requests() {
    let server = MockServer::start_async().await;
    let at = "2026-12-06T10:00:00.000Z";
    let one = subscription(SUBSCRIPTION, "kv", json!({"type": "kv"}), at);
    let path = subscriptions_path(&format!("/{SUBSCRIPTION}"));
    let get = answering(&server, GET, path.clone(), 200, success(one.clone())).await;
    let mut disabled = one.clone();
    disabled["enabled"] = json!(false);
    let update = server
        .mock_async(|when, then| {
            Auth::Token
                .authenticated(when.method(PATCH).path(path.clone()))
                .json_body(json!({"enabled": false, "name": "paused",
                                  "destination": {"type": "queues.queue", "queue_id": QUEUE}}));
            then.status(200).json_body(success(disabled.clone()));
        })
        .await;
    let delete = answering(&server, DELETE, path.clone(), 200, success(one.clone())).await;
    let others = catch_all(&server).await;
    let client = client(&server, Auth::Token);
    let read: EventSubscription = client.event_subscription(SUBSCRIPTION).await.expect("read");
    assert_eq!(
        (read.enabled, read.source.clone()),
        (Some(true), EventSource::Kv)
    );
    let change = EventSubscriptionChange::new()
        .enabled(false)
        .name("paused")
        .destination(QUEUE);
    let changed = client
        .update_event_subscription(SUBSCRIPTION, change)
        .await
        .expect("changed");
    assert_eq!(changed.enabled, Some(false));
    client
        .delete_event_subscription(SUBSCRIPTION)
        .await
        .expect("deleted");
    assert_calls(
        "calls",
        &[(&get, 1), (&update, 1), (&delete, 1), (&others, 0)],
    )
    .await;
}

#[tokio::test]
async fn bad_input_is_refused_before_anything_is_sent() {
    let server = MockServer::start_async().await;
    let others = catch_all(&server).await;
    let client = client(&server, Auth::Token);
    let queue = queue(&server, Auth::Token);
    let none: [&str; 0] = [];
    let blank_model = EventSource::WorkersAiModel {
        model_name: " ".into(),
    };
    let unknown = match serde_json::json!({"type": "artifacts"}) {
        Value::Object(fields) => EventSource::from_fields(fields),
        _ => unreachable!("an object"),
    };
    for (new, field) in [
        (NewEventSubscription::new(EventSource::Kv, none), "events"),
        (
            NewEventSubscription::new(EventSource::Kv, [""]),
            "events[0]",
        ),
        (kv().name(" "), "name"),
        (
            NewEventSubscription::new(blank_model, ["batch.failed"]),
            "source.model_name",
        ),
        (NewEventSubscription::new(unknown, ["x"]), "source"),
    ] {
        assert_refused(queue.create_event_subscription(new).await, field, field);
    }
    let change = EventSubscriptionChange::new();
    assert_refused(
        client.update_event_subscription(SUBSCRIPTION, change).await,
        "change",
        "",
    );
    let bad_destination = EventSubscriptionChange::new().destination("not an id");
    assert_refused(
        client
            .update_event_subscription(SUBSCRIPTION, bad_destination)
            .await,
        "destination.queue_id",
        "",
    );
    for bad in ["", "a/b", &"a".repeat(33)] {
        assert_refused(client.event_subscription(bad).await, "subscription_id", bad);
        assert_refused(
            client.delete_event_subscription(bad).await,
            "subscription_id",
            bad,
        );
    }
    assert_eq!(others.calls_async().await, 0);
}

/// A create whose answer is lost (a 500) is not repeated: the queue's
/// subscriptions are read back, and the one of the same name, source and
/// destination created after sending is the create's, whatever the
/// server's clock says. One created earlier, of another name, or without a
/// readable `created_at` is not: the caller gets the create's error.
#[tokio::test]
async fn a_lost_create_adopts_only_the_subscription_it_made() {
    let name = format!("{QUEUE} kv");
    let after = |skew: i64| rfc3339(shifted(skew) + Duration::from_millis(200));
    let mut cases: Vec<(i64, Value, bool)> = Vec::new();
    for skew in [0_i64, 3_600, -3_600] {
        let made = subscription(SUBSCRIPTION, &name, json!({"type": "kv"}), &after(skew));
        cases.push((skew, made, true));
        let earlier = rfc3339(shifted(skew - 3_600));
        let old = subscription(SUBSCRIPTION, &name, json!({"type": "kv"}), &earlier);
        cases.push((skew, old, false));
    }
    let other_name = subscription(SUBSCRIPTION, "kv feed", json!({"type": "kv"}), &after(0));
    let other_source = subscription(SUBSCRIPTION, &name, json!({"type": "r2"}), &after(0));
    let unreadable = subscription(SUBSCRIPTION, &name, json!({"type": "kv"}), "yesterday");
    cases.extend([
        (0, other_name, false),
        (0, other_source, false),
        (0, unreadable, false),
    ]);
    for (skew, found, adopted) in cases {
        let context = (skew, &found);
        let server = MockServer::start_async().await;
        let server_now = shifted(skew);
        let lost = (
            500,
            failure(codes::UNKNOWN_INTERNAL_ERROR, "internal error"),
        );
        let create = create_mock(&server, kv_request(), lost, server_now).await;
        let query = [("page", "1"), ("per_page", "100"), ("queue_id", QUEUE)];
        let lookup = page_mock(&server, &query, listed(json!([found]), 1, 1), server_now).await;
        let others = catch_all(&server).await;
        let created = queue(&server, Auth::Token)
            .create_event_subscription(kv())
            .await;
        match (created, adopted) {
            (Ok(s), true) => assert_eq!(s.id.as_deref(), Some(SUBSCRIPTION), "{context:?}"),
            (Err(error), false) => {
                assert_eq!(error.status(), Some(500), "{context:?}");
                assert_eq!(error.operation(), Some(Operation::CreateEventSubscription));
                assert!(error.may_have_landed());
            }
            (got, _) => panic!("{context:?}: {got:?}"),
        }
        assert_calls(context, &[(&create, 1), (&lookup, 1), (&others, 0)]).await;
    }
}

/// A delete whose answer is lost is not repeated: a read-back that finds
/// the subscription gone (404) is the delete's success; one that finds it
/// is the delete's error.
#[tokio::test]
async fn a_lost_delete_is_resolved_by_reading_back() {
    let at = "2026-12-06T10:00:00.000Z";
    let still = (
        200,
        success(subscription(SUBSCRIPTION, "kv", json!({"type": "kv"}), at)),
    );
    let gone = (
        404,
        failure(codes::NO_ROUTE, "Event subscription does not exist"),
    );
    for (read_back, deleted) in [(gone, true), (still, false)] {
        let server = MockServer::start_async().await;
        let path = subscriptions_path(&format!("/{SUBSCRIPTION}"));
        let lost = failure(codes::UNKNOWN_INTERNAL_ERROR, "internal error");
        let delete = answering(&server, DELETE, path.clone(), 502, lost).await;
        let get = answering(&server, GET, path, read_back.0, read_back.1.clone()).await;
        let others = catch_all(&server).await;
        let result = client(&server, Auth::Token)
            .delete_event_subscription(SUBSCRIPTION)
            .await;
        match (result, deleted) {
            (Ok(()), true) => {}
            (Err(error), false) => {
                assert_eq!(error.status(), Some(502));
                assert_eq!(error.operation(), Some(Operation::DeleteEventSubscription));
            }
            (got, _) => panic!("{read_back:?}: {got:?}"),
        }
        assert_calls(&read_back, &[(&delete, 1), (&get, 1), (&others, 0)]).await;
    }
}

/// A success that carries no subscription is not one: a read or a change
/// answered with `result: null` is a decode error, and a create answered
/// so is resolved as a lost answer is (it landed: the queue's
/// subscriptions are read back and the one it made adopted).
#[tokio::test]
async fn a_success_without_a_subscription_is_not_one() {
    let server = MockServer::start_async().await;
    let path = subscriptions_path(&format!("/{SUBSCRIPTION}"));
    let empty = success(Value::Null);
    let get = answering(&server, GET, path, 200, empty.clone()).await;
    let now = SystemTime::now();
    let create = create_mock(&server, kv_request(), (200, empty), now).await;
    let made = subscription(
        SUBSCRIPTION,
        &format!("{QUEUE} kv"),
        json!({"type": "kv"}),
        &rfc3339(now + Duration::from_millis(200)),
    );
    let query = [("page", "1"), ("per_page", "100"), ("queue_id", QUEUE)];
    let lookup = page_mock(&server, &query, listed(json!([made]), 1, 1), now).await;
    let others = catch_all(&server).await;
    let error = client(&server, Auth::Token)
        .event_subscription(SUBSCRIPTION)
        .await
        .expect_err("no subscription");
    assert!(matches!(error, Error::Decode { .. }), "{error:?}");
    let created = queue(&server, Auth::Token)
        .create_event_subscription(kv())
        .await
        .expect("adopted");
    assert_eq!(created.id.as_deref(), Some(SUBSCRIPTION));
    assert_calls(
        "calls",
        &[(&get, 1), (&create, 1), (&lookup, 1), (&others, 0)],
    )
    .await;
}
