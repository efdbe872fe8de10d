//! Consumers as the live API writes them and names they must carry: a
//! Worker consumer named by `script` (and `service`) as well as by the
//! published `script_name`, and the dead-letter queue of an HTTP pull
//! consumer, whose name is checked before anything is sent. A submodule of
//! `wire_resources`, whose helpers (and `http_pull`'s) it shares.

use super::*;

use cf_queues::resources::HttpPullSettings;

use super::http_pull::{CONSUMER, consumers_mock, consumers_path};

fn worker(script_name: Option<&str>, service: Option<&str>) -> ConsumerInfo {
    let mut worker = WorkerConsumer::default();
    worker.consumer_id = Some(CONSUMER.into());
    worker.script_name = script_name.map(str::to_owned);
    worker.service = service.map(str::to_owned);
    ConsumerInfo::Worker(worker)
}

/// `script` (the live API's, which wrangler's `consumer remove` reads) or
/// `script_name` (the published description's), whichever is given and not
/// empty; `service` is exposed.
#[tokio::test]
async fn worker_consumers_are_read_by_script_or_script_name_and_service() {
    let cases = [
        (json!({"script": "mailer"}), worker(Some("mailer"), None)),
        (
            json!({"script_name": "mailer"}),
            worker(Some("mailer"), None),
        ),
        (
            json!({"script_name": "by-name", "script": "by-script", "service": "svc"}),
            worker(Some("by-name"), Some("svc")),
        ),
        (
            json!({"script_name": "", "script": "mailer"}),
            worker(Some("mailer"), None),
        ),
        (json!({"service": "svc"}), worker(None, Some("svc"))),
        (
            json!({"script": "", "service": "", "script_name": null}),
            worker(None, None),
        ),
    ];
    for (fields, expected) in cases {
        let mut listed = json!({"type": "worker", "consumer_id": CONSUMER});
        for (key, value) in fields.as_object().expect("an object") {
            listed[key] = value.clone();
        }
        let server = MockServer::start_async().await;
        let list = consumers_mock(&server, json!([listed.clone()])).await;
        let read = server
            .mock_async(|when, then| {
                Auth::Token.authenticated(when.method(GET).path(path("")));
                then.status(200).json_body(success(json!({
                    "queue_id": QUEUE, "queue_name": NAME, "consumers": [listed.clone()]
                })));
            })
            .await;
        let queue = queue(&server, Auth::Token);
        let consumers = queue.consumers().await.expect("listed");
        assert_eq!(consumers, vec![expected.clone()], "{listed}");
        let info = queue.info().await.expect("read");
        assert_eq!(info.consumers, vec![expected], "{listed}");
        assert_eq!((list.calls_async().await, read.calls_async().await), (1, 1));
    }
}

/// HTTP pull is never enabled over a Worker, and the error names it by
/// whichever field the API gave.
#[tokio::test]
async fn enable_http_pull_over_a_worker_named_by_script_or_service_names_it() {
    for (listed, named) in [
        (
            json!({"type": "worker", "consumer_id": CONSUMER, "script": "mailer"}),
            "the Worker \"mailer\"",
        ),
        (
            json!({"type": "worker", "consumer_id": CONSUMER, "service": "svc"}),
            "the Worker service \"svc\"",
        ),
    ] {
        let server = MockServer::start_async().await;
        let list = consumers_mock(&server, json!([listed])).await;
        let others = catch_all(&server).await;
        let error = queue(&server, Auth::Token)
            .enable_http_pull(HttpPullSettings::new())
            .await
            .expect_err("a Worker consumes it");
        assert!(
            matches!(&error, Error::OtherConsumer { consumer, .. } if consumer == named),
            "{error:?}"
        );
        assert_calls("nothing written", &[(&list, 1), (&others, 0)]).await;
    }
}

/// Review item 8: a dead-letter queue name that no queue can have (2 MB
/// long, or one queue creation refuses with 11003) was sent, and made a
/// consumer whose dead letters go nowhere. It is checked before anything
/// is sent, with the rule `create_queue` checks names with.
#[tokio::test]
async fn a_dead_letter_queue_no_queue_can_have_is_refused_before_sending() {
    let server = MockServer::start_async().await;
    let sent = catch_all(&server).await;
    let queue = queue(&server, Auth::Token);
    let huge = "d".repeat(2 << 20);
    for name in [
        huge.as_str(),
        &"d".repeat(64),
        "Orders-DLQ",
        "orders_dlq",
        "orders.dlq",
        "-dlq",
        "dlq-",
        "",
    ] {
        let settings = HttpPullSettings::new().dead_letter_queue(name);
        let shown = &name[..name.len().min(20)];
        let error = assert_refused(
            queue.enable_http_pull(settings).await,
            "dead_letter_queue",
            shown,
        );
        let text = error.to_string();
        assert!(
            text.len() < 400,
            "{shown}: the error is {} bytes",
            text.len()
        );
        if !name.is_empty() {
            assert!(text.contains("63"), "{shown}: names the limit: {text}");
        }
        let created = queue
            .client()
            .create_queue(name)
            .await
            .expect_err("refused");
        assert_eq!(invalid_field(&created), Ok("queue_name"), "{shown}");
    }
    assert_eq!(sent.calls_async().await, 0, "not even the read");
}

/// The longest name the rule allows is sent as it is.
#[tokio::test]
async fn a_dead_letter_queue_of_63_characters_is_sent() {
    let name = format!("a{}9", "-".repeat(61));
    let server = MockServer::start_async().await;
    let _list = consumers_mock(&server, json!([])).await;
    let create = server
        .mock_async(|when, then| {
            Auth::Token
                .authenticated(when.method(POST).path(consumers_path()))
                .json_body(json!({"type": "http_pull", "dead_letter_queue": name}));
            then.status(200).json_body(success(json!({
                "type": "http_pull", "consumer_id": CONSUMER, "dead_letter_queue": name
            })));
        })
        .await;
    let consumer = queue(&server, Auth::Token)
        .enable_http_pull(HttpPullSettings::new().dead_letter_queue(&name))
        .await
        .expect("enabled");
    assert_eq!(
        consumer.settings.dead_letter_queue.as_deref(),
        Some(name.as_str())
    );
    assert_eq!(create.calls_async().await, 1);
}
