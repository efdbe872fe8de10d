//! The emulator under abuse, with small limits so that each case takes a
//! fraction of a second: trickling and silent clients, more connections than
//! the cap, responses no one reads, forged lease ids, keep-alive after error
//! answers, a visibility timeout of 0, accounts apart, and shutdown with a
//! half-sent request. Outcomes are checked (connections closed, the server's
//! own counters), never the machine's memory. `cargo xtask abuse`
//! reproduces the full-scale figures outside the test suite.

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use cf_queues::{Acks, Client, Message, PullOptions};
use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, Emulator, EmulatorHandle, WorkerBody};
use cf_queues_testkit::emulators::emulator_with;
use cf_queues_testkit::pulls::{pull, texts_of};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{post_head, read_response};

async fn start(configure: impl FnOnce(Emulator) -> Emulator) -> EmulatorHandle {
    emulator_with(|emulator| configure(emulator.token("abuse-token"))).await
}

fn path(account: &str, queue: &str, op: &str) -> String {
    format!("/accounts/{account}/queues/{queue}/messages{op}")
}

/// Sends the head of a push of 1000 bytes to `queue`, then only the start
/// of its body, as a client that stops mid-request.
async fn half_sent_push(stream: &mut TcpStream, queue: &str) {
    let head = post_head(
        &path(EMULATOR_ACCOUNT_ID, queue, ""),
        Some("Bearer abuse-token"),
        1000,
    );
    stream.write_all(head.as_bytes()).await.expect("head");
    let part: &[u8] = b"{\"body\":";
    stream.write_all(part).await.expect("part of the body");
}

/// Waits until `done` holds, for at most `within`.
async fn eventually(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

/// Whether the server closed the connection: a read gives end of file or
/// an error within `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 4096];
    let start = Instant::now();
    while start.elapsed() < within {
        match tokio::time::timeout(within, stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
    false
}

/// One request on a keep-alive connection, its body written after its
/// head, as a slow client or a large body would arrive. Returns the status
/// and body of the answer.
async fn exchange(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
    head: &str,
    body: &[u8],
) -> std::io::Result<(u16, Vec<u8>)> {
    stream.write_all(head.as_bytes()).await?;
    stream.flush().await?;
    tokio::time::sleep(Duration::from_millis(1)).await;
    stream.write_all(body).await?;
    read_response(stream, pending).await
}

#[tokio::test]
async fn trickling_and_silent_clients_are_closed_by_the_header_timeout() {
    let emulator = start(|e| e.header_timeout(Duration::from_millis(300))).await;
    let address = emulator.local_addr();
    let mut silent = TcpStream::connect(address).await.expect("connect");
    let mut trickling = TcpStream::connect(address).await.expect("connect");
    let trickle = async {
        for byte in b"POST /client/v4/accounts/a/queues/q/messages HTTP/1.1\r\n" {
            if trickling.write_all(&[*byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        closed_within(&mut trickling, Duration::from_secs(3)).await
    };
    let (trickler_closed, silent_closed) =
        tokio::join!(trickle, closed_within(&mut silent, Duration::from_secs(3)));
    assert!(trickler_closed && silent_closed);
    let stats = emulator.server_stats();
    assert!(stats.timed_out_connections >= 2, "{stats:?}");
    assert!(
        eventually(Duration::from_secs(2), || emulator
            .server_stats()
            .open_connections
            == 0)
        .await
    );
}

#[tokio::test]
async fn a_body_that_stops_arriving_is_cut_by_the_body_timeout() {
    let emulator = start(|e| e.body_timeout(Duration::from_millis(300))).await;
    let mut stream = TcpStream::connect(emulator.local_addr())
        .await
        .expect("connect");
    half_sent_push(&mut stream, "slow").await;
    let started = Instant::now();
    let mut pending = Vec::new();
    let (status, body) = read_response(&mut stream, &mut pending)
        .await
        .expect("answer");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let body: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(
        (status, body["errors"][0]["code"].as_u64()),
        (408, Some(10201))
    );
    assert!(closed_within(&mut stream, Duration::from_secs(2)).await);
    assert_eq!(emulator.metrics("slow").backlog_count, 0);
}

#[tokio::test]
async fn idle_keep_alive_connections_are_closed_by_the_idle_timeout() {
    let emulator = start(|e| {
        e.idle_timeout(Duration::from_millis(300))
            .header_timeout(Duration::from_secs(30))
    })
    .await;
    let mut stream = TcpStream::connect(emulator.local_addr())
        .await
        .expect("connect");
    let mut pending = Vec::new();
    let pull = path(EMULATOR_ACCOUNT_ID, "idle", "/pull");
    let head = post_head(&pull, Some("Bearer abuse-token"), 2);
    let (status, _) = exchange(&mut stream, &mut pending, &head, b"{}")
        .await
        .expect("answer");
    assert_eq!(status, 200);
    let started = Instant::now();
    assert!(closed_within(&mut stream, Duration::from_secs(3)).await);
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn connections_beyond_the_cap_do_not_starve_a_normal_request() {
    let emulator = start(|e| e.max_connections(4).header_timeout(Duration::from_secs(30))).await;
    let address = emulator.local_addr();
    // Twelve slow clients, three times the cap, each sending its head one
    // byte at a time; the header timeout is far away.
    let mut slow = Vec::new();
    for _ in 0..12 {
        let mut stream = TcpStream::connect(address).await.expect("connect");
        let _ = stream.write_all(b"POST /client/v4/acc").await;
        slow.push(stream);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(emulator.server_stats().open_connections <= 4);
    let client = emulator.client().expect("client");
    let started = Instant::now();
    let receipt = tokio::time::timeout(
        Duration::from_secs(5),
        client
            .queue("normal")
            .expect("id")
            .push(Message::text("through")),
    )
    .await
    .expect("served in time");
    receipt.expect("push succeeds");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let stats = emulator.server_stats();
    assert!(stats.open_connections <= 4, "{stats:?}");
    assert!(stats.evicted_connections >= 8, "{stats:?}");
    assert_eq!(emulator.metrics("normal").backlog_count, 1);
}

#[tokio::test]
async fn unread_responses_hold_no_more_than_the_response_buffer() {
    const BUFFER: usize = 16 * 1024;
    let emulator = start(|e| {
        e.response_buffer_bytes(BUFFER)
            .write_timeout(Duration::from_millis(500))
    })
    .await;
    // 100 bodies of 400 KB: 53 MB of base64 per peek, far beyond what the
    // kernel's socket buffers can absorb.
    for i in 0..100u8 {
        emulator.push_from_worker("big", WorkerBody::Bytes(vec![i; 400_000]));
    }
    let body = json!({"batch_size": 100}).to_string();
    let head = post_head(
        &path(EMULATOR_ACCOUNT_ID, "big", "/peek"),
        Some("Bearer abuse-token"),
        body.len(),
    );
    let mut readers_who_never_read = Vec::new();
    for _ in 0..6 {
        let mut stream = TcpStream::connect(emulator.local_addr())
            .await
            .expect("connect");
        stream.write_all(head.as_bytes()).await.expect("head");
        stream.write_all(body.as_bytes()).await.expect("body");
        readers_who_never_read.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A normal client is served meanwhile.
    let metrics = emulator.client().and_then(|c| c.queue("other"));
    let metrics = metrics.expect("queue");
    let pushed = metrics.push(Message::text("x")).await;
    pushed.expect("push while others stall");
    let stats = emulator.server_stats();
    // hyper's buffer, plus one piece of a quarter of it, plus a response head.
    let bound = (BUFFER + BUFFER / 4 + 1024) as u64;
    assert!(stats.peak_buffered_response_bytes > 0, "{stats:?}");
    assert!(
        stats.peak_buffered_response_bytes <= bound,
        "{stats:?} > {bound}"
    );
    assert!(stats.buffered_response_bytes <= 6 * bound, "{stats:?}");
    // The write timeout then closes each stalled connection.
    assert!(
        eventually(Duration::from_secs(5), || {
            // The normal client's keep-alive connection stays open.
            let stats = emulator.server_stats();
            stats.open_connections == 1 && stats.timed_out_connections >= 6
        })
        .await,
        "{:?}",
        emulator.server_stats()
    );
    assert_eq!(emulator.server_stats().buffered_response_bytes, 0);
    drop(readers_who_never_read);
}

#[tokio::test]
async fn whole_answers_are_counted_and_bounded_by_their_request() {
    const MAX_BODY: usize = 256 * 1024;
    let emulator = start(|e| e.max_body_bytes(MAX_BODY)).await;
    // An ack naming as many distinct unknown leases as the body allows:
    // each gets a warning, the largest answer not streamed.
    let mut leases = Vec::new();
    let mut size = 16;
    let mut i = 0u32;
    while size < MAX_BODY - 64 {
        let lease = json!({ "lease_id": format!("{i:x}") });
        size += lease.to_string().len() + 1;
        leases.push(lease);
        i += 1;
    }
    let body = json!({ "acks": leases }).to_string();
    assert!(body.len() <= MAX_BODY, "{}", body.len());
    let head = post_head(
        &path(EMULATOR_ACCOUNT_ID, "q", "/ack"),
        Some("Bearer abuse-token"),
        body.len(),
    );
    let mut stream = TcpStream::connect(emulator.local_addr())
        .await
        .expect("connect");
    let mut pending = Vec::new();
    let (status, answer) = exchange(&mut stream, &mut pending, &head, body.as_bytes())
        .await
        .expect("answer");
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_slice(&answer).expect("json");
    let warnings = answer["result"]["warnings"].as_object().map(|w| w.len());
    assert_eq!(warnings, Some(leases.len()));
    let peak = emulator.server_stats().peak_buffered_response_bytes;
    assert!(
        peak as usize > MAX_BODY,
        "the whole answer was held: {peak}"
    );
    assert!(
        peak as usize <= MAX_BODY * 7 / 2,
        "at most 3.5 times the largest request: {peak}"
    );
}

#[tokio::test]
async fn a_request_head_over_the_buffer_gets_431_and_is_closed() {
    let emulator = start(|e| e.response_buffer_bytes(16 * 1024)).await;
    let mut stream = TcpStream::connect(emulator.local_addr())
        .await
        .expect("connect");
    let head = format!(
        "POST /client/v4{} HTTP/1.1\r\nhost: emulator\r\nx-padding: {}\r\n\r\n",
        path(EMULATOR_ACCOUNT_ID, "q", "/pull"),
        "a".repeat(40 * 1024)
    );
    // The server may stop reading before the end: a failed write is fine.
    let _ = stream.write_all(head.as_bytes()).await;
    // Closed, with a 431 first; the close of a socket with unread bytes may
    // reset the connection and take the 431 with it.
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the connection was closed");
    let text = String::from_utf8_lossy(&answer);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 431"),
        "{text}"
    );
    assert_eq!(emulator.requests_received(), 0, "never reached a handler");
    assert_eq!(emulator.server_stats().open_connections, 0);
}

#[tokio::test]
async fn one_own_lease_id_does_not_forge_another() {
    let emulator = start(|e| e).await;
    let q = emulator
        .client()
        .expect("client")
        .queue("forge")
        .expect("id");
    q.push(Message::text("mine")).await.expect("push");
    q.push(Message::text("theirs")).await.expect("push");
    let mine = pull(&q, PullOptions::new().batch_size(1)).await;
    let theirs = pull(&q, PullOptions::new().batch_size(1)).await;
    let (mine, theirs) = (&mine.messages[0], &theirs.messages[0]);
    let (my_lease, their_lease) = (mine.lease_id.as_str(), theirs.lease_id.as_str());
    // Tokens are compact JWEs of 159 characters, as on the live API, whose
    // IV carries the 128 random bits. The old attack read a counter out of
    // one's own lease id and predicted the next: here the next IV is not
    // one's own plus one, and nothing built from one's own token acks
    // someone else's message.
    assert_eq!((my_lease.len(), their_lease.len()), (159, 159));
    let iv = |lease: &str| -> u128 {
        let part = lease.split('.').nth(2).expect("an IV part");
        let bytes = URL_SAFE_NO_PAD.decode(part).expect("base64url");
        u128::from_be_bytes(bytes.try_into().expect("16 bytes"))
    };
    let (my_iv, their_iv) = (iv(my_lease), iv(their_lease));
    assert!(
        their_iv.abs_diff(my_iv) > 1 << 64,
        "the next lease id was predicted"
    );
    let with_iv = |lease: &str, value: u128| {
        let mut parts: Vec<String> = lease.split('.').map(str::to_owned).collect();
        parts[2] = URL_SAFE_NO_PAD.encode(value.to_be_bytes());
        parts.join(".")
    };
    let forged: Vec<String> = (1..64u128)
        .map(|c| with_iv(my_lease, my_iv.wrapping_add(c)))
        .chain([
            with_iv(my_lease, their_iv),
            with_iv(their_lease, my_iv),
            their_lease.to_uppercase(),
            format!("{}x", &their_lease[..158]),
        ])
        .collect();
    let outcome = q
        .ack(
            forged
                .iter()
                .fold(Acks::new(), |acks, f| acks.ack(f.as_str())),
        )
        .await
        .expect("forged acks are warnings");
    assert_eq!(
        (outcome.acked, outcome.warnings.len()),
        (Some(0), forged.len())
    );
    assert_eq!(emulator.metrics("forge").backlog_count, 2);
    let fair = q.ack(Acks::new().ack(theirs)).await.expect("ack");
    assert_eq!(fair.acked, Some(1));
}

#[tokio::test]
async fn keep_alive_survives_500_error_answers() {
    let emulator = start(|e| e.strict_queues(["known"])).await;
    let mut stream = TcpStream::connect(emulator.local_addr())
        .await
        .expect("connect");
    // Without it, each body waits for the delayed ACK of its head (40 ms).
    stream.set_nodelay(true).expect("nodelay");
    let mut pending = Vec::new();
    let body = vec![b' '; 16 * 1024];
    let pull = path(EMULATOR_ACCOUNT_ID, "known", "/pull");
    let cases: [(String, Option<&str>, u16); 6] = [
        (pull.clone(), None, 400),                 // 9106
        (pull.clone(), Some("Bearer wrong"), 403), // 10000
        (pull.clone(), Some("wrong"), 400),        // 6003
        (
            path("a-b", "known", "/pull"),
            Some("Bearer abuse-token"),
            400,
        ), // 10107
        (
            path(EMULATOR_ACCOUNT_ID, "unknown", "/pull"),
            Some("Bearer abuse-token"),
            404,
        ),
        (
            "/accounts/x/queues/y/nothing".into(),
            Some("Bearer abuse-token"),
            404,
        ),
    ];
    let mut failures = 0;
    for i in 0..500 {
        let (path, auth, status) = &cases[i % cases.len()];
        let head = post_head(path, *auth, body.len());
        match exchange(&mut stream, &mut pending, &head, &body).await {
            Ok((got, _)) if got == *status => {}
            _ => failures += 1,
        }
    }
    assert_eq!(failures, 0);
    let head = post_head(&pull, Some("Bearer abuse-token"), 2);
    let (status, _) = exchange(&mut stream, &mut pending, &head, b"{}")
        .await
        .expect("answer");
    assert_eq!(status, 200);
    assert_eq!(emulator.server_stats().accepted_connections, 1);
}

#[tokio::test]
async fn visibility_timeouts_below_1_ms_are_refused() {
    let emulator = start(|e| e).await;
    let mut stream = TcpStream::connect(emulator.local_addr())
        .await
        .expect("connect");
    let mut pending = Vec::new();
    let pull = path(EMULATOR_ACCOUNT_ID, "vis", "/pull");
    for (timeout, status) in [
        (json!(0), 400),
        (json!(0.49), 400),
        (json!(0.5), 400),
        (json!(0.999), 400),
        (json!(1), 200),
        (json!(1.4), 200),
    ] {
        let body = json!({ "visibility_timeout_ms": timeout }).to_string();
        let head = post_head(&pull, Some("Bearer abuse-token"), body.len());
        let (got, answer) = exchange(&mut stream, &mut pending, &head, body.as_bytes())
            .await
            .expect("answer");
        assert_eq!(got, status, "{timeout}");
        if status == 400 {
            let answer: Value = serde_json::from_slice(&answer).expect("json");
            assert_eq!(answer["errors"][0]["code"], 10207);
        }
    }
}

#[tokio::test]
async fn accounts_do_not_share_queues() {
    let emulator = start(|e| e).await;
    let other_account = "fedcba9876543210fedcba9876543210";
    let mine = emulator
        .client()
        .expect("client")
        .queue("shared")
        .expect("id");
    let theirs = emulator
        .client_builder()
        .expect("builder")
        .account_id(other_account)
        .build()
        .and_then(|c: Client| c.queue("shared"))
        .expect("queue");
    mine.push(Message::text("mine")).await.expect("push");
    theirs.push(Message::text("theirs")).await.expect("push");
    emulator.push_from_worker_in(other_account, "shared", WorkerBody::Bytes(vec![1]));
    assert_eq!(emulator.metrics("shared").backlog_count, 1);
    assert_eq!(
        emulator.metrics_in(other_account, "shared").backlog_count,
        2
    );
    let pulled = pull(&mine, PullOptions::new().batch_size(10)).await;
    assert_eq!(texts_of(&pulled.messages), ["mine"]);
    let cross = theirs
        .ack(Acks::new().ack(&pulled.messages[0]))
        .await
        .expect("ack");
    assert_eq!((cross.acked, cross.warnings.len()), (Some(0), 1));
    assert_eq!(emulator.metrics("shared").backlog_count, 1);
    assert_eq!(emulator.dead_lettered_in(other_account, "shared"), 0);
}

#[tokio::test]
async fn shutdown_returns_while_a_client_holds_a_half_sent_request() {
    let emulator = start(|e| {
        e.shutdown_grace(Duration::from_millis(300))
            .header_timeout(Duration::from_secs(60))
            .body_timeout(Duration::from_secs(60))
    })
    .await;
    let address = emulator.local_addr();
    let mut half_head = TcpStream::connect(address).await.expect("connect");
    half_head
        .write_all(b"POST /client/v4/accounts/")
        .await
        .expect("write");
    let mut half_body = TcpStream::connect(address).await.expect("connect");
    half_sent_push(&mut half_body, "q").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), emulator.shutdown())
        .await
        .expect("shutdown returns within the grace period")
        .expect("clean shutdown");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(closed_within(&mut half_head, Duration::from_secs(2)).await);
    assert!(closed_within(&mut half_body, Duration::from_secs(2)).await);
    assert!(
        TcpStream::connect(address).await.is_err(),
        "no longer listening"
    );
}
