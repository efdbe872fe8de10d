//! The dashboard under abuse: a request log that anyone can write to
//! without a token, bodies made to blow up when pretty-printed, a "send"
//! of a huge body many times, two emulators in one browser, a port
//! forward. What each bounds is stated in the dashboard's docs; the peak
//! memory of a `cfq emulator` under the same abuse is measured in `cfq`'s
//! tests (tests in one binary share one process).

use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, Emulator, EmulatorHandle};
use cf_queues_testkit::dashboard::Session;
use cf_queues_testkit::gate::Gate;
use cf_queues_testkit::raw_http::Raw;
use serde_json::{Value, json};

/// The requests page's stated bound (the dashboard's docs): 1,000 entries
/// of a path cut to 256 bytes, escaped.
const REQUESTS_PAGE_BYTES: usize = 2_700_000;
/// The queue page's stated bound: 100 messages of a body cut to 1 KB
/// (4 KB pretty-printed), escaped.
const QUEUE_PAGE_BYTES: usize = 2_700_000;

async fn started(configure: impl FnOnce(Emulator) -> Emulator) -> EmulatorHandle {
    configure(Emulator::new())
        .start()
        .await
        .expect("the emulator starts")
}

/// A JSON body of `depth` nested arrays around numbers, about `bytes`
/// long: the shape that pretty-prints to the most (a line per number,
/// each indented by its depth).
fn nested(depth: usize, bytes: usize) -> Value {
    let numbers = vec!["12345"; bytes / 6].join(",");
    let text = format!("{}{numbers}{}", "[".repeat(depth), "]".repeat(depth));
    serde_json::from_str(&text).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_a_token_keep_the_log_and_its_page_bounded() {
    let emulator = started(|e| e).await;
    let http = reqwest::Client::new();
    let huge = format!(
        "{}/accounts/{EMULATOR_ACCOUNT_ID}/queues/{}",
        emulator.base_url(),
        "x".repeat(60_000)
    );
    for _ in 0..300 {
        let answer = http.get(&huge).send().await.expect("answered");
        assert_eq!(answer.status(), 400, "no token, no such id: refused");
    }
    let session = Session::login(&emulator).await;
    let html = session.page("/_dashboard/requests").await;
    assert!(html.len() <= REQUESTS_PAGE_BYTES, "{} bytes", html.len());
    // Each listed, its path cut.
    assert!(html.matches(r#"<td class="num">400</td>"#).count() >= 300);
    assert!(html.contains("xxx…"), "the path is cut, and says so");
    assert!(!html.contains(&"x".repeat(300)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_of_bodies_that_blow_up_when_pretty_printed_keeps_its_page_bounded() {
    let emulator = started(|e| e).await;
    let raw = Raw::new(&emulator);
    let body = nested(120, 120_000);
    for _ in 0..10 {
        let (status, answer) = raw
            .post(
                "/queues/blowup/messages",
                json!({"body": body, "content_type": "json"}),
            )
            .await;
        assert_eq!(status, 200, "{answer}");
    }
    let session = Session::login(&emulator).await;
    let html = session.page("/_dashboard/queues/blowup").await;
    assert!(html.len() <= QUEUE_PAGE_BYTES, "{} bytes", html.len());
    let link = html
        .split(r#"<a href=""#)
        .find(|rest| rest.starts_with("/_dashboard/queues/blowup/messages/"))
        .and_then(|rest| rest.split('"').next())
        .expect("a link to the whole body")
        .to_owned();
    // The whole body, as it was sent (too large to pretty-print).
    let whole = session.page(&link).await;
    let sent = serde_json::to_string(&body).expect("JSON");
    assert!(
        whole.contains(&sent.replace('"', "&quot;")),
        "the whole body"
    );
    assert!(whole.len() <= sent.len() * 6 + 64 * 1024, "{}", whole.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_is_refused_before_any_copy_is_made() {
    let emulator = started(|e| e.max_backlog_bytes(1_000_000)).await;
    let raw = Raw::new(&emulator);
    assert_eq!(raw.push("sends", &["first".to_owned()]).await, 200);
    let session = Session::login(&emulator).await;
    let queue = "/_dashboard/queues/sends";
    let send = format!("{queue}/send");
    let body = |bytes: usize| "b".repeat(bytes);
    for (fields, said) in [
        (
            format!("body={}&count=1000", body(1_900_000)),
            "Nothing sent: the body is 1.9 MB (with the numbers), and a message is at most 128.0 KB",
        ),
        (
            // Three more bytes a copy for the numbers up to 1,000.
            format!("body={}{{n}}&count=1000", body(128_000 - 3)),
            "Nothing sent: the body is 128.0 KB (with the numbers), and a message is at most 128.0 KB",
        ),
        (
            format!("body={}&count=1000", body(100_000)),
            "Nothing sent: 1000 copies of 100.0 KB are 100.0 MB; one send makes at most 67.1 MB",
        ),
        (
            format!("body={}&count=200", body(10_000)),
            "Nothing sent: the queue holds 5 B of messages and may hold 1.0 MB: 200 more of 10.0 KB do not fit",
        ),
    ] {
        let (status, note) = session.act(queue, &send, &fields).await;
        assert_eq!(status, 303);
        assert_eq!(note, format!("{said}."));
    }
    assert_eq!(raw.backlog("sends").await, 1, "nothing sent");
    let (_, note) = session.act(queue, &send, "body=ok{n}&count=50").await;
    assert_eq!(note, "Sent 50 messages.");
}

/// A browser's cookie jar, as browsers keep one: by name and path, for a
/// host whatever its port.
#[derive(Default)]
struct Jar(Vec<(String, String, String)>);

impl Jar {
    /// Keeps the cookie a `Set-Cookie` value sets.
    fn set(&mut self, set_cookie: &str) {
        let mut parts = set_cookie.split(';').map(str::trim);
        let (name, value) = parts
            .next()
            .and_then(|pair| pair.split_once('='))
            .expect("name=value");
        let path = parts
            .find_map(|p| p.strip_prefix("Path="))
            .unwrap_or("/")
            .to_owned();
        self.0.retain(|(n, _, p)| !(n == name && *p == path));
        self.0.push((name.to_owned(), value.to_owned(), path));
    }

    /// The `Cookie` header a request for `path` carries, on any port.
    fn header(&self, path: &str) -> String {
        self.0
            .iter()
            .filter(|(_, _, p)| path.starts_with(p.as_str()))
            .map(|(n, v, _)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Logs `jar` in through `link`, as a browser does.
async fn log_in(http: &reqwest::Client, jar: &mut Jar, link: &str) {
    let answer = http.get(link).send().await.expect("login answered");
    assert_eq!(answer.status(), 303);
    let set = answer
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("a session cookie");
    jar.set(set);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_emulators_in_one_browser_keep_their_sessions_and_no_other_server_gets_them() {
    let (one, two) = (started(|e| e).await, started(|e| e).await);
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let mut jar = Jar::default();
    for emulator in [&one, &two] {
        log_in(&http, &mut jar, emulator.dashboard_url().expect("a link")).await;
    }
    for emulator in [&one, &two] {
        let page = format!("http://{}/_dashboard/", emulator.local_addr());
        let answer = http
            .get(&page)
            .header("cookie", jar.header("/_dashboard/"))
            .send()
            .await
            .expect("answered");
        assert_eq!(answer.status(), 200, "still logged in to {page}");
    }
    // Another local server's pages get no dashboard session.
    assert_eq!(jar.header("/"), "", "sent only to the dashboard's paths");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_answers_through_a_port_forward_and_refuses_other_sites_there_too() {
    let emulator = started(|e| e).await;
    let gate = Gate::shut(&emulator).await;
    gate.open();
    // As `ssh -L PORT:…` shows it: localhost, on the forward's port.
    let forwarded = gate
        .base_url
        .split("/client")
        .next()
        .expect("an origin")
        .replace("127.0.0.1", "localhost");
    let link = emulator.dashboard_url().expect("a link");
    let key = link.split("/_dashboard").nth(1).expect("a path");
    let session = Session::login_link(&format!("{forwarded}/_dashboard{key}")).await;
    let html = session.page("/_dashboard/").await;
    assert!(html.contains("Queues"), "the account page");
    let (status, note) = session
        .act("/_dashboard/", "/_dashboard/queues", "name=forwarded")
        .await;
    assert_eq!(
        (status, note.as_str()),
        (303, "Created the queue forwarded.")
    );
    for (name, value) in [
        ("origin", "http://evil.example"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let refused = session
            .get("/_dashboard/")
            .header(name, value)
            .send()
            .await
            .expect("answered");
        assert_eq!(refused.status(), 403, "{name}: {value}");
    }
    let rebound = session
        .get("/_dashboard/")
        .header("host", "rebound.example")
        .send()
        .await
        .expect("answered");
    assert_eq!(rebound.status(), 403, "a DNS name is still refused");
}
