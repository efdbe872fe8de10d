//! What the dashboard changes, driven in the browser and checked through
//! the client: sends, deletes and retries, settings, pause, purge, the
//! dead-letter redrive and the emulator's knobs; and forms from elsewhere
//! that change nothing.

use std::time::{Duration, Instant};

use cf_queues::Acks;
use cf_queues::resources::HttpPullSettings;
use cf_queues::{Message, PullOptions};
use cf_queues_emulator::EmulatorHandle;
use cf_queues_testkit::dashboard::Session;
use serde_json::json;

use crate::webdriver::{Browser, Result};
use crate::{WAIT, ensure, origin};

/// Submits the form of the button `css` and gives the note the action
/// left on the page it led to, once that page has replaced this one.
async fn submit(browser: &Browser, css: &str) -> Result<String> {
    browser
        .execute("window.stillThisPage = true", json!([]))
        .await?;
    browser.click(css).await?;
    let loaded = "return window.stillThisPage !== true && document.readyState === 'complete' \
                  && document.querySelector('p.done') !== null";
    if let Err(e) = browser.wait_for("the next page's note", loaded, WAIT).await {
        let url = browser.current_url().await?;
        return Err(format!("{e} at {url}").into());
    }
    browser.text("p.done").await
}

async fn open_queue(browser: &Browser, emulator: &EmulatorHandle, id: &str) -> Result<()> {
    browser
        .goto(&format!("{}/_dashboard/queues/{id}", origin(emulator)))
        .await
}

pub async fn send_from_the_page(browser: &Browser, emulator: &EmulatorHandle) -> Result<()> {
    let queue = emulator.client()?.create_queue("sent").await?;
    open_queue(browser, emulator, queue.id()).await?;
    browser.type_into("#send-body", r#"{"n": {n}}"#).await?;
    browser
        .execute(
            "document.getElementById('send-type').value = 'json'",
            json!([]),
        )
        .await?;
    browser
        .execute(
            "document.getElementById('send-count').value = '3'",
            json!([]),
        )
        .await?;
    let said = submit(browser, "form[action$='/send'] button").await?;
    ensure(said == "Sent 3 messages.", || format!("note {said:?}"))?;
    queue.enable_http_pull(HttpPullSettings::new()).await?;
    let batch = queue.pull(PullOptions::new().batch_size(10)).await?;
    let mut bodies: Vec<String> = batch
        .messages
        .iter()
        .map(|m| m.body().json::<serde_json::Value>().map(|v| v.to_string()))
        .collect::<std::result::Result<_, _>>()?;
    bodies.sort();
    ensure(bodies == [r#"{"n":1}"#, r#"{"n":2}"#, r#"{"n":3}"#], || {
        format!("{bodies:?}")
    })
}

/// The queue page lists its event subscriptions, and its form emits an
/// event of one of them: the message arrives in Cloudflare's shape, with
/// the payload typed in.
pub async fn emit_from_the_page(browser: &Browser, emulator: &EmulatorHandle) -> Result<()> {
    use cf_queues::event_subscriptions::{EventSource, NewEventSubscription};
    let queue = emulator.client()?.create_queue("namespaces").await?;
    queue.enable_http_pull(HttpPullSettings::new()).await?;
    let new =
        NewEventSubscription::new(EventSource::Kv, ["namespace.created", "namespace.deleted"]);
    let subscription = queue.create_event_subscription(new).await?;
    open_queue(browser, emulator, queue.id()).await?;
    let listed = browser
        .text("section[aria-labelledby='subscriptions-title'] table")
        .await?;
    ensure(
        listed.contains("namespaces kv") && listed.contains("namespace.created, namespace.deleted"),
        || format!("the subscriptions listed: {listed:?}"),
    )?;
    browser
        .execute(
            "document.getElementById('emit-event').value = arguments[0] + '|namespace.deleted'",
            json!([subscription.id.clone().unwrap_or_default()]),
        )
        .await?;
    browser
        .type_into("#emit-payload", r#"{"id": "ns-1", "name": "sessions"}"#)
        .await?;
    let said = submit(browser, "#emit-form button").await?;
    ensure(
        said == "Emitted cf.kv.namespace.deleted: 1 message delivered.",
        || format!("note {said:?}"),
    )?;
    let batch = queue.pull(PullOptions::new().batch_size(10)).await?;
    let bodies: Vec<serde_json::Value> = batch
        .messages
        .iter()
        .map(|m| m.body().json::<serde_json::Value>())
        .collect::<std::result::Result<_, _>>()?;
    let expected_id = subscription.id.clone().unwrap_or_default();
    ensure(
        bodies.len() == 1
            && bodies[0]["type"] == "cf.kv.namespace.deleted"
            && bodies[0]["payload"] == json!({"id": "ns-1", "name": "sessions"})
            && bodies[0]["metadata"]["eventSubscriptionId"] == json!(expected_id),
        || format!("{bodies:?}"),
    )
}

pub async fn delete_and_retry_selected(browser: &Browser, emulator: &EmulatorHandle) -> Result<()> {
    let queue = emulator.client()?.create_queue("chosen").await?;
    queue.enable_http_pull(HttpPullSettings::new()).await?;
    for i in 0..4 {
        queue.push(Message::text(format!("m{i}"))).await?;
    }
    open_queue(browser, emulator, queue.id()).await?;
    browser
        .click("ol.messages li:nth-child(1) input[type=checkbox]")
        .await?;
    browser
        .click("ol.messages li:nth-child(2) input[type=checkbox]")
        .await?;
    let said = submit(browser, "button[value=delete]").await?;
    ensure(said == "Deleted 2 messages.", || format!("note {said:?}"))?;
    let left = queue.metrics().await?.backlog_count;
    ensure(left == 2, || format!("backlog {left}"))?;
    ensure(browser.text("#available").await? == "2", || {
        "counts not updated".into()
    })?;
    // Lease one through the client, then give it back from the page.
    let leased = queue.pull(PullOptions::new().batch_size(1)).await?;
    let body = leased
        .messages
        .first()
        .ok_or("nothing pulled")?
        .body()
        .text()?
        .to_owned();
    ensure(body == "m2", || format!("pulled {body}"))?;
    open_queue(browser, emulator, queue.id()).await?;
    browser
        .click("ol.messages li:nth-child(1) input[type=checkbox]")
        .await?;
    let said = submit(browser, "button[value=retry]").await?;
    ensure(
        said == "Retried 1 message: visible again in 0s, no attempt used.",
        || format!("note {said:?}"),
    )?;
    let again = queue.pull(PullOptions::new().batch_size(10)).await?;
    let mut bodies: Vec<&str> = again
        .messages
        .iter()
        .map(|m| m.body().text())
        .collect::<std::result::Result<_, _>>()?;
    // m3 was visible first; m2 since the retry.
    ensure(bodies == ["m3", "m2"], || {
        format!("pulled again {bodies:?}")
    })?;
    bodies.clear();
    Ok(())
}

pub async fn edit_settings_and_pause(browser: &Browser, emulator: &EmulatorHandle) -> Result<()> {
    let queue = emulator.client()?.create_queue("tuned").await?;
    open_queue(browser, emulator, queue.id()).await?;
    // HTTP pull, with a batch size of 7.
    browser
        .execute(
            "document.getElementById('batch-size').value = '7'",
            json!([]),
        )
        .await?;
    let said = submit(browser, "form[action$='/consumer'] button[value=save]").await?;
    ensure(said == "HTTP pull enabled.", || format!("note {said:?}"))?;
    let pull = queue.http_pull().await?.ok_or("no HTTP pull consumer")?;
    ensure(pull.settings.batch_size == Some(7), || {
        format!("{:?}", pull.settings)
    })?;
    // A delivery delay of 5 s.
    browser
        .execute(
            "document.getElementById('delivery-delay').value = '5'",
            json!([]),
        )
        .await?;
    let said = submit(browser, "form[action$='/settings'] button").await?;
    ensure(said.starts_with("Saved: delivery delay 5s"), || {
        format!("note {said:?}")
    })?;
    let info = queue.info().await?;
    ensure(
        info.settings.delivery_delay == Some(Duration::from_secs(5)),
        || format!("{:?}", info.settings),
    )?;
    // An out-of-range value is refused with the API's reason.
    browser
        .execute(
            "document.getElementById('batch-size').value = '1000'",
            json!([]),
        )
        .await?;
    let said = submit(browser, "form[action$='/consumer'] button[value=save]").await?;
    ensure(said.starts_with("Nothing changed: "), || {
        format!("note {said:?}")
    })?;
    // Pause: a pull is refused with 409; resume: it succeeds.
    let said = submit(browser, "form[action$='/delivery'] button").await?;
    ensure(said.starts_with("Delivery paused"), || {
        format!("note {said:?}")
    })?;
    let refused = queue.pull(PullOptions::new()).await;
    let status = refused.as_ref().err().and_then(|e| e.status());
    ensure(status == Some(409), || format!("paused pull: {refused:?}"))?;
    let said = submit(browser, "form[action$='/delivery'] button").await?;
    ensure(said == "Delivery resumed.", || format!("note {said:?}"))?;
    queue.pull(PullOptions::new()).await?;
    Ok(())
}

pub async fn purge_with_the_name_typed(browser: &Browser, emulator: &EmulatorHandle) -> Result<()> {
    let queue = emulator.client()?.create_queue("emptied").await?;
    for i in 0..3 {
        queue.push(Message::text(format!("m{i}"))).await?;
    }
    open_queue(browser, emulator, queue.id()).await?;
    browser.type_into("#purge-confirm", "emptie").await?;
    let said = submit(browser, "form[action$='/purge'] button").await?;
    ensure(said.contains("type the queue's name, emptied"), || {
        format!("note {said:?}")
    })?;
    ensure(queue.metrics().await?.backlog_count == 3, || {
        "purged anyway".into()
    })?;
    browser.type_into("#purge-confirm", "emptied").await?;
    let said = submit(browser, "form[action$='/purge'] button").await?;
    ensure(said.starts_with("Purged emptied"), || {
        format!("note {said:?}")
    })?;
    let left = queue.metrics().await?.backlog_count;
    ensure(left == 0, || format!("backlog {left}"))
}

pub async fn redrive_a_dead_letter_queue(
    browser: &Browser,
    emulator: &EmulatorHandle,
) -> Result<()> {
    let client = emulator.client()?;
    let work = client.create_queue("work").await?;
    work.enable_http_pull(
        HttpPullSettings::new()
            .max_retries(1)
            .dead_letter_queue("work-dlq"),
    )
    .await?;
    let dlq = client.queue_by_name("work-dlq").await?;
    for i in 0..50 {
        work.push(Message::text(format!("w{i}"))).await?;
    }
    // One delivery each, given back: out of attempts, into the DLQ.
    let mut moved = 0;
    while moved < 50 {
        let batch = work.pull(PullOptions::new().batch_size(100)).await?;
        if batch.messages.is_empty() {
            break;
        }
        let mut acks = Acks::new();
        for m in &batch.messages {
            acks = acks.retry(m.lease_id.clone());
        }
        work.ack(acks).await?;
        moved += batch.messages.len();
    }
    let (in_work, in_dlq) = (
        work.metrics().await?.backlog_count,
        dlq.metrics().await?.backlog_count,
    );
    ensure((in_work, in_dlq) == (0, 50), || {
        format!("before: {in_work}, {in_dlq}")
    })?;
    open_queue(browser, emulator, dlq.id()).await?;
    let target = browser
        .execute(
            "return document.getElementById('redrive-to').value",
            json!([]),
        )
        .await?;
    ensure(target == json!(work.id()), || format!("target {target}"))?;
    let said = submit(browser, "button[value=redrive_all]").await?;
    ensure(said == "Moved 50 messages back to work.", || {
        format!("note {said:?}")
    })?;
    let (in_work, in_dlq) = (
        work.metrics().await?.backlog_count,
        dlq.metrics().await?.backlog_count,
    );
    ensure((in_work, in_dlq) == (50, 0), || {
        format!("after: {in_work}, {in_dlq}")
    })?;
    // Each once: fifty distinct bodies come back to the work queue.
    let mut bodies = std::collections::BTreeSet::new();
    loop {
        let batch = work.pull(PullOptions::new().batch_size(100)).await?;
        if batch.messages.is_empty() {
            break;
        }
        for m in &batch.messages {
            bodies.insert(m.body().text()?.to_owned());
        }
    }
    ensure(bodies.len() == 50, || {
        format!("{} distinct bodies", bodies.len())
    })
}

pub async fn switch_the_round_trip(browser: &Browser, emulator: &EmulatorHandle) -> Result<()> {
    let queue = emulator.client()?.create_queue("distant").await?;
    browser
        .goto(&format!("{}/_dashboard/", origin(emulator)))
        .await?;
    browser
        .execute(
            "document.getElementById('round-trip').value = '400'",
            json!([]),
        )
        .await?;
    let said = submit(browser, "form[action='/_dashboard/emulator'] button").await?;
    ensure(
        said.starts_with("Every request now takes a round trip of 400 ms"),
        || said.clone(),
    )?;
    let started = Instant::now();
    queue.metrics().await?;
    let took = started.elapsed();
    browser
        .execute(
            "document.getElementById('round-trip').value = '0'",
            json!([]),
        )
        .await?;
    submit(browser, "form[action='/_dashboard/emulator'] button").await?;
    ensure(took >= Duration::from_millis(400), || {
        format!("the call took {took:?}")
    })?;
    let started = Instant::now();
    queue.metrics().await?;
    let took = started.elapsed();
    ensure(took < Duration::from_millis(400), || {
        format!("after: {took:?}")
    })
}

pub async fn forms_from_elsewhere_change_nothing(emulator: &EmulatorHandle) -> Result<()> {
    let queue = emulator.client()?.create_queue("guarded").await?;
    queue.push(Message::text("kept")).await?;
    let session = Session::login(emulator).await;
    let page = format!("/_dashboard/queues/{}", queue.id());
    let token = session.form_token(&page).await;
    let purge = format!("{page}/purge");
    let form = format!("token={token}&confirm=guarded");
    // A cross-site form post, with the cookie a lax browser would send.
    let status = session
        .post_form(&purge, form.clone(), true)
        .header("origin", "http://evil.example")
        .send()
        .await?
        .status();
    ensure(status == 403, || format!("cross-site: {status}"))?;
    // Without the cookie.
    let status = session
        .post_form(&purge, form.clone(), false)
        .send()
        .await?
        .status();
    ensure(status == 401, || format!("no cookie: {status}"))?;
    // With the cookie but not the session's form token.
    let status = session
        .post_form(&purge, "token=guess&confirm=guarded".into(), true)
        .send()
        .await?
        .status();
    ensure(status == 403, || format!("no token: {status}"))?;
    let left = queue.metrics().await?.backlog_count;
    ensure(left == 1, || format!("changed: backlog {left}"))?;
    // The same form from the page itself goes through.
    let status = session.post_form(&purge, form, true).send().await?.status();
    ensure(status == 303, || format!("own form: {status}"))?;
    let left = queue.metrics().await?.backlog_count;
    ensure(left == 0, || format!("own form: backlog {left}"))
}
