//! The dashboard in a real browser: Debian's headless Chromium through
//! chromedriver, against an emulator started here.
//!
//! A `harness = false` binary: it prints `SKIPPED` with the install
//! command when no browser is found, or no axe-core (the accessibility
//! checker, installed from its lock file into `target/test-tools/` by
//! `cargo xtask test-tools axe`: this test downloads nothing), and fails
//! instead when `CI` is set (`.ci/run` installs both).
#![allow(missing_docs, unreachable_pub)]

mod actions;
mod webdriver;

use std::path::PathBuf;
use std::time::Duration;

use cf_queues::Message;
use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, Emulator, EmulatorHandle};
use serde_json::{Value, json};
use webdriver::{Browser, Result, find_browser};

const WAIT: Duration = Duration::from_secs(15);

/// Skips the tests outside CI, or fails under it, for want of `what`,
/// which `install` installs.
fn missing(what: &str, install: &str) {
    if std::env::var_os("CI").is_some() {
        eprintln!("dashboard tests: no {what}, and CI is set: `{install}`");
        std::process::exit(1);
    }
    println!("SKIPPED: the dashboard's browser tests need {what}: `{install}`");
}

fn main() {
    let Some((chromium, driver)) = find_browser() else {
        missing(
            "Chromium and chromedriver",
            "apt-get install chromium chromium-driver",
        );
        return;
    };
    if !axe_core_path().exists() {
        missing("axe-core", "cargo xtask test-tools axe");
        return;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("dashboard tests: no runtime: {e}");
            std::process::exit(1);
        }
    };
    let failed = runtime.block_on(run_all(&chromium, &driver));
    if failed > 0 {
        eprintln!("dashboard tests: {failed} failed");
        std::process::exit(1);
    }
}

async fn run_all(chromium: &std::path::Path, driver: &std::path::Path) -> usize {
    let axe = match axe_core() {
        Ok(axe) => axe,
        Err(e) => {
            eprintln!("dashboard tests: cannot load axe-core: {e}");
            return 1;
        }
    };
    let browser = match Browser::start(chromium, driver).await {
        Ok(browser) => browser,
        Err(e) => {
            eprintln!("dashboard tests: cannot start the browser: {e}");
            return 1;
        }
    };
    let emulator = match Emulator::new().start().await {
        Ok(emulator) => emulator,
        Err(e) => {
            eprintln!("dashboard tests: cannot start the emulator: {e}");
            return 1;
        }
    };
    let mut failed = 0;
    macro_rules! check {
        ($name:literal, $test:expr) => {
            let started = std::time::Instant::now();
            match $test.await {
                Ok(()) => println!(
                    "test {} ... ok ({:.1} s)",
                    $name,
                    started.elapsed().as_secs_f64()
                ),
                Err(e) => {
                    println!("test {} ... FAILED: {e}", $name);
                    failed += 1;
                }
            }
        };
    }
    check!(
        "logs_in_through_the_printed_link",
        logs_in(&browser, &emulator)
    );
    check!(
        "counts_and_charts_move_without_a_reload",
        live(&browser, &emulator)
    );
    check!(
        "a_body_expands_pretty_printed_and_a_long_one_links_its_whole_page",
        bodies(&browser, &emulator)
    );
    check!(
        "a_list_of_300_queues_filters_and_sorts",
        many_queues(&browser, &emulator)
    );
    check!(
        "a_request_the_test_made_is_listed",
        request_list(&browser, &emulator)
    );
    check!("strangers_are_refused", refusals(&emulator));
    check!(
        "sends_from_the_page",
        actions::send_from_the_page(&browser, &emulator)
    );
    check!(
        "an_event_is_emitted_from_the_queue_page",
        actions::emit_from_the_page(&browser, &emulator)
    );
    check!(
        "deletes_and_retries_selected_messages",
        actions::delete_and_retry_selected(&browser, &emulator)
    );
    check!(
        "edits_settings_and_pauses_delivery",
        actions::edit_settings_and_pause(&browser, &emulator)
    );
    check!(
        "purges_with_the_name_typed",
        actions::purge_with_the_name_typed(&browser, &emulator)
    );
    check!(
        "redrives_a_dead_letter_queue_of_50",
        actions::redrive_a_dead_letter_queue(&browser, &emulator)
    );
    check!(
        "switches_the_round_trip",
        actions::switch_the_round_trip(&browser, &emulator)
    );
    check!(
        "forms_from_elsewhere_change_nothing",
        actions::forms_from_elsewhere_change_nothing(&emulator)
    );
    check!(
        "no_serious_accessibility_violation",
        accessibility(&browser, &emulator, &axe)
    );
    if let Some(dir) = std::env::var_os("CFQ_DASHBOARD_SCREENSHOTS") {
        check!("screenshots", screenshots(&browser, PathBuf::from(dir)));
    }
    browser.quit().await;
    println!("dashboard tests: {} failed", failed);
    failed
}

/// Where `cargo xtask test-tools axe` puts axe-core: the target directory
/// this test runs from (`target/<profile>/deps/`), `test-tools/axe`.
fn axe_core_path() -> PathBuf {
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("test-tools/axe/node_modules/axe-core/axe.min.js")
}

/// axe-core's source.
fn axe_core() -> Result<String> {
    Ok(std::fs::read_to_string(axe_core_path())?)
}

fn origin(emulator: &EmulatorHandle) -> String {
    format!("http://{}", emulator.local_addr())
}

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<()> {
    if ok { Ok(()) } else { Err(what().into()) }
}

async fn logs_in(browser: &Browser, emulator: &EmulatorHandle) -> Result<()> {
    let link = emulator.dashboard_url().ok_or("no dashboard link")?;
    let token = emulator.token().ok_or("no token")?;
    ensure(!link.contains(token), || {
        "the link carries the API token".into()
    })?;
    browser.goto(link).await?;
    let url = browser.current_url().await?;
    ensure(url == format!("{}/_dashboard/", origin(emulator)), || {
        format!("landed on {url}")
    })?;
    let title = browser.title().await?;
    ensure(title == "Queues · cf-queues emulator", || {
        format!("title {title:?}")
    })?;
    // The session is in an HttpOnly cookie: the page's script cannot read it.
    let cookies = browser.execute("return document.cookie", json!([])).await?;
    ensure(cookies == json!(""), || format!("script sees {cookies}"))
}

async fn live(browser: &Browser, emulator: &EmulatorHandle) -> Result<()> {
    let client = emulator.client()?;
    let queue = client.create_queue("live").await?;
    let id = queue.id().to_owned();
    for i in 0..2 {
        queue.push(Message::text(format!("m{i}"))).await?;
    }
    browser
        .goto(&format!("{}/_dashboard/queues/{id}", origin(emulator)))
        .await?;
    browser
        .wait_for(
            "two available",
            "return document.getElementById('available').textContent === '2'",
            WAIT,
        )
        .await?;
    browser
        .execute("window.stillHere = true", json!([]))
        .await?;
    for i in 2..5 {
        queue.push(Message::text(format!("m{i}"))).await?;
    }
    browser
        .wait_for(
            "five available, and a point of the pushes",
            "return document.getElementById('available').textContent === '5' \
             && Number(document.getElementById('figures').dataset.points || 0) >= 1",
            WAIT,
        )
        .await?;
    let lines = browser
        .execute(
            "return [window.stillHere === true, \
              document.querySelectorAll('#chart-count polyline').length, \
              document.querySelectorAll('#chart-rates polyline').length]",
            json!([]),
        )
        .await?;
    ensure(lines[0] == json!(true), || "the page was reloaded".into())?;
    // Two points make a line: wait for the second.
    browser
        .wait_for(
            "a drawn backlog",
            "return document.querySelectorAll('#chart-count polyline').length === 1 \
             && document.querySelectorAll('#chart-rates polyline').length === 5",
            WAIT,
        )
        .await
}

async fn bodies(browser: &Browser, emulator: &EmulatorHandle) -> Result<()> {
    let client = emulator.client()?;
    let queue = client.create_queue("bodies").await?;
    queue
        .push(Message::json(&json!({ "order": 7, "items": ["a", "b"] }))?)
        .await?;
    queue.push(Message::text("hello <b>world</b>")).await?;
    let page = format!("{}/_dashboard/queues/{}", origin(emulator), queue.id());
    browser.goto(&page).await?;
    browser.click("ol.messages li:nth-child(1) summary").await?;
    let json_body = browser.text("ol.messages li:nth-child(1) pre.body").await?;
    ensure(
        json_body == "{\n  \"items\": [\n    \"a\",\n    \"b\"\n  ],\n  \"order\": 7\n}",
        || format!("JSON body {json_body:?}"),
    )?;
    browser.click("ol.messages li:nth-child(2) summary").await?;
    let text_body = browser.text("ol.messages li:nth-child(2) pre.body").await?;
    ensure(text_body == "hello <b>world</b>", || {
        format!("text body {text_body:?}")
    })?;
    // Shown, not leased: the queue still has both available.
    let available = browser.text("#available").await?;
    ensure(available == "2", || format!("available {available}"))?;
    // A body past the list's kilobyte: cut there, whole on its own page.
    let long = "0123456789".repeat(300);
    queue.push(Message::text(long.clone())).await?;
    browser.goto(&page).await?;
    browser.click("ol.messages li:nth-child(3) summary").await?;
    let cut = browser.text("ol.messages li:nth-child(3) pre.body").await?;
    ensure(cut.len() < 1100 && cut.ends_with('…'), || {
        format!("the list's cut body: {} bytes", cut.len())
    })?;
    browser
        .click("ol.messages li:nth-child(3) p.note a")
        .await?;
    let whole = browser.text("pre.body").await?;
    ensure(whole == long, || {
        format!("the whole body: {} bytes", whole.len())
    })?;
    queue
        .enable_http_pull(cf_queues::resources::HttpPullSettings::default())
        .await?;
    let pulled = queue
        .pull(cf_queues::PullOptions::new().batch_size(10))
        .await?;
    ensure(pulled.messages.iter().all(|m| m.attempts == 1), || {
        "a listed message used an attempt".into()
    })
}

async fn many_queues(browser: &Browser, emulator: &EmulatorHandle) -> Result<()> {
    let client = emulator.client()?;
    for i in 0..300 {
        client.create_queue(&format!("bulk-{i:03}")).await?;
    }
    let busy = client.queue_by_name("bulk-150").await?;
    for i in 0..4 {
        busy.push(Message::text(format!("b{i}"))).await?;
    }
    browser
        .goto(&format!("{}/_dashboard/", origin(emulator)))
        .await?;
    browser.type_into("#q", "bulk-01").await?;
    browser.click("form.filter button").await?;
    browser
        .wait_for(
            "ten rows",
            "return document.querySelectorAll('#queues tbody tr').length === 10",
            WAIT,
        )
        .await?;
    let first = browser.text("#queues tbody tr td a").await?;
    ensure(first == "bulk-010", || format!("first row {first}"))?;
    browser
        .goto(&format!("{}/_dashboard/?q=bulk", origin(emulator)))
        .await?;
    let summary = browser.text("#queue-count").await?;
    ensure(
        summary == "300 queues named like “bulk”. Page 1 of 3.",
        || format!("summary {summary:?}"),
    )?;
    // Sort by the available count, highest first: a click on its heading
    // sorts ascending, a second descending.
    browser.click("th:nth-child(3) a").await?;
    browser.click("th:nth-child(3) a").await?;
    let url = browser.current_url().await?;
    ensure(
        url.contains("sort=available") && url.contains("order=desc"),
        || url.clone(),
    )?;
    let first = browser.text("#queues tbody tr td a").await?;
    ensure(first == "bulk-150", || {
        format!("first row {first} at {url}")
    })
}

async fn request_list(browser: &Browser, emulator: &EmulatorHandle) -> Result<()> {
    let client = emulator.client()?;
    let queue = client.create_queue("traced").await?;
    queue.push(Message::text("traced")).await?;
    browser
        .goto(&format!(
            "{}/_dashboard/requests?queue={}",
            origin(emulator),
            queue.id()
        ))
        .await?;
    let rows = browser
        .execute(
            "return [...document.querySelectorAll('tbody tr')].map(r => [...r.cells].map(c => c.textContent))",
            json!([]),
        )
        .await?;
    let rows = rows.as_array().ok_or("no rows")?;
    ensure(rows.len() == 1, || format!("rows {rows:?}"))?;
    let row = &rows[0];
    ensure(
        row[1] == json!("POST") && row[3] == json!("push_message") && row[4] == json!("200"),
        || format!("row {row:?}"),
    )?;
    let fingerprint = row[7].as_str().unwrap_or_default();
    ensure(fingerprint.len() == 8, || {
        format!("fingerprint {fingerprint:?}")
    })?;
    let source = browser.source().await?;
    let token = emulator.token().ok_or("no token")?;
    ensure(!source.contains(token), || {
        "the token is on the page".into()
    })
}

async fn refusals(emulator: &EmulatorHandle) -> Result<()> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let page = format!("{}/_dashboard/", origin(emulator));
    // Without the cookie.
    let status = http.get(&page).send().await?.status();
    ensure(status == 401, || format!("no cookie: {status}"))?;
    // Logged in, as the browser is.
    let cookie = cf_queues_testkit::dashboard::Session::login(emulator)
        .await
        .cookie;
    let status = http
        .get(&page)
        .header("cookie", &cookie)
        .send()
        .await?
        .status();
    ensure(status == 200, || format!("with the cookie: {status}"))?;
    // A foreign Host (DNS rebinding), even with the cookie.
    let port = emulator.local_addr().port();
    let status = http
        .get(&page)
        .header("cookie", &cookie)
        .header("host", format!("rebound.example:{port}"))
        .send()
        .await?
        .status();
    ensure(status == 403, || format!("foreign host: {status}"))?;
    // Another origin, even with the cookie.
    for (name, value) in [
        ("origin", "http://evil.example"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let status = http
            .get(&page)
            .header("cookie", &cookie)
            .header(name, value)
            .send()
            .await?
            .status();
        ensure(status == 403, || format!("{name}: {value}: {status}"))?;
    }
    // The API's paths are the API's: no cookie needed, none accepted instead of the token.
    let api = format!(
        "{}/accounts/{EMULATOR_ACCOUNT_ID}/queues",
        emulator.base_url()
    );
    let status = http
        .get(&api)
        .header("cookie", &cookie)
        .send()
        .await?
        .status();
    ensure([400, 401, 403].contains(&status.as_u16()), || {
        format!("API with a cookie only: {status}")
    })
}

async fn accessibility(browser: &Browser, emulator: &EmulatorHandle, axe: &str) -> Result<()> {
    let client = emulator.client()?;
    let queue = client.create_queue("accessible").await?;
    queue.push(Message::json(&json!({ "a": 1 }))?).await?;
    let pages = [
        format!("{}/_dashboard/", origin(emulator)),
        format!("{}/_dashboard/queues/{}", origin(emulator), queue.id()),
        format!("{}/_dashboard/requests", origin(emulator)),
    ];
    let mut problems = Vec::new();
    for (width, height) in [(1366, 800), (390, 844)] {
        browser.window(width, height).await?;
        for page in &pages {
            browser.goto(page).await?;
            if page.contains("/queues/") {
                browser.click("ol.messages li:nth-child(1) summary").await?;
            }
            browser.execute(axe, json!([])).await?;
            let found = browser
                .execute_async(
                    "const done = arguments[arguments.length - 1];\
                     axe.run(document, { resultTypes: ['violations'] })\
                       .then(r => done(r.violations\
                         .filter(v => v.impact === 'serious' || v.impact === 'critical')\
                         .map(v => v.id + ' (' + v.impact + ', ' + v.nodes.length + '): ' + v.help)))\
                       .catch(e => done(['axe failed: ' + e]));",
                    json!([]),
                )
                .await?;
            if let Some(list) = found.as_array().filter(|l| !l.is_empty()) {
                problems.push(format!(
                    "{page} at {width}px: {}",
                    Value::from(list.clone())
                ));
            }
        }
    }
    browser.window(1366, 800).await?;
    ensure(problems.is_empty(), || problems.join("; "))
}

/// Screenshots of the four pages at a laptop's and a phone's width, into
/// `dir` (for the docs; only when `CFQ_DASHBOARD_SCREENSHOTS` names it), on
/// an emulator of their own with a small, plausible account.
async fn screenshots(browser: &Browser, dir: PathBuf) -> Result<()> {
    std::fs::create_dir_all(&dir)?;
    let emulator = Emulator::new().start().await?;
    browser
        .goto(emulator.dashboard_url().ok_or("no link")?)
        .await?;
    let client = emulator.client()?;
    let orders = client.create_queue("orders").await?;
    orders
        .enable_http_pull(
            cf_queues::resources::HttpPullSettings::new().dead_letter_queue("orders-dlq"),
        )
        .await?;
    for (name, count) in [("emails", 3), ("payments", 41), ("thumbnails", 0)] {
        let queue = client.create_queue(name).await?;
        for i in 0..count {
            queue.push(Message::text(format!("{name} {i}"))).await?;
        }
    }
    let order = |i: u32| json!({ "order": 1000 + i, "items": ["tea", "cake"], "total": 12.5 });
    let pages = format!("{}/_dashboard", origin(&emulator));
    let mut next = 0;
    for (width, height, name) in [(1366, 800, "laptop"), (390, 844, "phone")] {
        browser.window(width, height).await?;
        browser
            .goto(&format!("{pages}/queues/{}", orders.id()))
            .await?;
        // Traffic for the charts: more pushed than pulled and acked.
        for round in 0..6 {
            for _ in 0..(4 + round * 2) {
                orders.push(Message::json(&order(next))?).await?;
                next += 1;
            }
            let batch = orders
                .pull(cf_queues::PullOptions::new().batch_size(2 + round))
                .await?;
            let mut acks = cf_queues::Acks::new();
            for m in &batch.messages {
                acks = acks.ack(m.lease_id.clone());
            }
            if !acks.is_empty() {
                orders.ack(acks).await?;
            }
            tokio::time::sleep(Duration::from_millis(1100)).await;
        }
        browser
            .wait_for(
                "drawn charts",
                "return document.querySelectorAll('#chart-rates polyline').length === 5",
                WAIT,
            )
            .await?;
        std::fs::write(
            dir.join(format!("dashboard-queue-{name}.png")),
            browser.screenshot().await?,
        )?;
        browser
            .goto(&format!("{pages}/queues/{}", orders.id()))
            .await?;
        browser.click("ol.messages li:nth-child(1) summary").await?;
        browser
            .execute(
                "document.getElementById('messages-title').scrollIntoView()",
                json!([]),
            )
            .await?;
        std::fs::write(
            dir.join(format!("dashboard-messages-{name}.png")),
            browser.screenshot().await?,
        )?;
        browser.goto(&format!("{pages}/")).await?;
        std::fs::write(
            dir.join(format!("dashboard-account-{name}.png")),
            browser.screenshot().await?,
        )?;
        browser.goto(&format!("{pages}/requests")).await?;
        std::fs::write(
            dir.join(format!("dashboard-requests-{name}.png")),
            browser.screenshot().await?,
        )?;
    }
    browser.window(1366, 800).await?;
    Ok(())
}
