//! The client under a hostile or surprising server: redirects are never
//! followed (credentials stay on the configured origin), and a legal answer
//! is never refused for its size, however much escaping grew it.

use cf_queues::operation::Operation;
use cf_queues::retry::RetryClass;
use cf_queues::{Acks, Client, Error, Message, PullOptions};
use cf_queues_testkit::clients::configured_queue;
use cf_queues_testkit::emulators::emulator;
use httpmock::Method::POST;
use httpmock::MockServer;

#[tokio::test]
async fn redirects_are_reported_and_never_followed() {
    let elsewhere = MockServer::start_async().await;
    let stolen = elsewhere
        .mock_async(|when, then| {
            when.any_request();
            then.status(200)
                .body(r#"{"success":true,"errors":[],"messages":[],"result":{}}"#);
        })
        .await;
    let target = elsewhere.url("/collect");
    for user_http_client in [false, true] {
        for status in [301, 302, 303, 307, 308] {
            let origin = MockServer::start_async().await;
            origin
                .mock_async(|when, then| {
                    when.method(POST);
                    then.status(status).header("location", target.as_str());
                })
                .await;
            let mut builder = Client::builder()
                .global_api_key("me@example.com", "global-key-secret")
                .account_id("acc")
                .base_url(origin.base_url());
            if user_http_client {
                // A caller's builder, whatever its redirect policy, gets none.
                builder = builder.http_client(
                    reqwest::Client::builder().redirect(reqwest::redirect::Policy::limited(10)),
                );
            }
            let queue = builder.build().and_then(|c| c.queue("q")).expect("queue");
            let error = queue
                .push(Message::text("secret payload"))
                .await
                .expect_err("a redirect is not success");
            let api = error.as_api().expect("an API error");
            assert_eq!(api.status, status);
            assert_eq!(api.operation, Operation::Push);
            assert_eq!(api.location.as_deref(), Some(target.as_str()));
            assert_eq!(api.class, RetryClass::Permanent);
            assert!(error.to_string().contains("not followed"), "{error}");
            assert!(!error.to_string().contains("global-key-secret"));
        }
    }
    assert_eq!(
        stolen.calls_async().await,
        0,
        "nothing reached the other origin"
    );
}

#[tokio::test]
async fn bodies_that_grow_sixfold_when_escaped_are_still_received() {
    let emulator = emulator().await;
    let queue = emulator
        .client()
        .and_then(|c| c.queue("escapes"))
        .expect("queue");
    // 127,900 control characters: within 128 KB with the metadata, and
    // 767,400 bytes once JSON-escaped as \u0001. Fifty of them make a
    // 38 MB answer, over the 32 MiB cap the client used to have.
    let body = "\u{1}".repeat(127_900);
    for _ in 0..50 {
        let pushed = queue.push(Message::text(body.as_str())).await;
        pushed.expect("within the message limit");
    }
    let pulled = queue.pull(PullOptions::new().batch_size(50)).await;
    let batch = pulled.expect("a legal answer is never too large");
    assert_eq!(batch.messages.len(), 50);
    let mut acks = Acks::new();
    for message in &batch.messages {
        assert_eq!(message.body().text().map(str::len).ok(), Some(127_900));
        acks = acks.ack(message);
    }
    assert_eq!(queue.ack(acks).await.map(|o| o.acked).ok(), Some(Some(50)));

    // The raw client sees no request to size a cap from: it accepts the
    // largest legal answer of any call, so it receives these too.
    for _ in 0..50 {
        queue
            .push(Message::text(body.as_str()))
            .await
            .expect("push");
    }
    let client = emulator.client().expect("client");
    let request = cf_queues::raw::types::PullRequest::builder().batch_size(Some(50));
    let pulled = client
        .raw()
        .pull_messages()
        .account_id(cf_queues_emulator::EMULATOR_ACCOUNT_ID)
        .queue_id("escapes")
        .body(request)
        .send()
        .await
        .expect("a legal answer is never too large for the raw client either")
        .into_inner();
    let messages = pulled.result.and_then(|r| r.messages).unwrap_or_default();
    assert_eq!(messages.len(), 50);
}

#[tokio::test]
async fn a_user_cap_refuses_a_pull_before_it_leases() {
    let emulator = emulator().await;
    let queue = configured_queue(&emulator, "capped", |b| {
        b.max_response_bytes(32 * 1024 * 1024)
    });
    queue.push(Message::text("x")).await.expect("push");
    let error = queue
        .pull(PullOptions::new().batch_size(100))
        .await
        .expect_err("100 messages can need 77 MB");
    assert!(
        matches!(&error, Error::InvalidInput { field, .. } if field == "batch_size"),
        "{error:?}"
    );
    let pulled = queue.pull(PullOptions::new().batch_size(40)).await;
    let leased = pulled.expect("40 fit in 32 MiB").messages.len();
    assert_eq!(leased, 1, "nothing was leased by the refused pull");
}
