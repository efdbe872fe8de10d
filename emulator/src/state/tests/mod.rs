//! Unit tests of the broker. QueueState lifetimes, accounts and late leases are
//! in [`lifecycle`]; extend, preview and purging a whole queue in
//! [`operations`]; the randomized run is in [`randomized`].

mod journal;
mod lifecycle;
mod operations;
mod randomized;
#[cfg(feature = "dashboard")]
mod view;

use std::collections::{HashMap, HashSet};

use super::messages::{queue, tokens};
use super::*;

const VIS: u64 = 30_000;

/// The account of the tests that use one.
const ACCOUNT: &str = "acct";

/// A bare queue id names that queue of [`ACCOUNT`].
impl<'a> From<&'a str> for At<'a> {
    fn from(queue: &'a str) -> At<'a> {
        At {
            account: ACCOUNT,
            queue,
        }
    }
}

fn new_broker(config: BrokerConfig) -> Broker {
    Broker::new(config, RandomSource::seeded(7))
}

fn text(body: &str) -> NewMessage {
    NewMessage {
        kind: BodyKind::Text,
        body: body.as_bytes().to_vec(),
        delay_ms: 0,
    }
}

fn delayed(body: &str, delay_ms: u64) -> NewMessage {
    NewMessage {
        delay_ms,
        ..text(body)
    }
}

fn broker() -> Broker {
    new_broker(BrokerConfig::default())
}

/// A broker whose queue `q` holds one message, `a`, pulled at 0 with a
/// lease of `visibility_ms`: the broker and that delivery.
fn leased_one(visibility_ms: u64) -> (Broker, Vec<Delivery>) {
    let mut b = broker();
    b.push("q", vec![text("a")], 0);
    let (d, _) = b.pull("q", 1, visibility_ms, 0);
    (b, d)
}

/// A broker whose messages have `max_retries` deliveries, with no
/// dead-letter queue.
fn broker_retrying(max_retries: u32) -> Broker {
    new_broker(BrokerConfig {
        max_retries,
        ..BrokerConfig::default()
    })
}

/// A broker of one attempt per message, `q` dead-lettering into `dlq`,
/// whose message `a` was pulled at 0 with a lease of `visibility_ms`.
fn one_attempt_into_dlq(visibility_ms: u64) -> Broker {
    let mut b = broker_with_dlq(1);
    b.push("q", vec![text("a")], 0);
    b.pull("q", 1, visibility_ms, 0);
    b
}

/// A broker whose queue `q` holds `a` and `b`, visible, and `body`,
/// delayed by `delay_ms`, all pushed at 0.
fn two_visible_and_delayed(body: &str, delay_ms: u64) -> Broker {
    let mut b = broker();
    b.push("q", vec![text("a"), text("b"), delayed(body, delay_ms)], 0);
    b
}

fn broker_with_dlq(max_retries: u32) -> Broker {
    let mut dead_letter_queues = HashMap::new();
    dead_letter_queues.insert("q".to_owned(), "dlq".to_owned());
    new_broker(BrokerConfig {
        max_retries,
        dead_letter_queues,
        ..BrokerConfig::default()
    })
}

fn bodies(deliveries: &[Delivery]) -> Vec<String> {
    deliveries
        .iter()
        .map(|d| String::from_utf8_lossy(&d.body).into_owned())
        .collect()
}

fn leases(deliveries: &[Delivery]) -> Vec<String> {
    deliveries.iter().map(|d| d.lease_id.clone()).collect()
}

fn metrics(count: u64, bytes: u64, oldest: u64) -> QueueStats {
    QueueStats {
        backlog_count: count,
        backlog_bytes: bytes,
        oldest_message_timestamp_ms: oldest,
    }
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A lease id, ref or preview id as the live API spells them: a compact
/// JWE of 159 characters that parses back.
fn is_token(s: &str) -> bool {
    s.len() == 159
        && s.starts_with("eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2Q0JDLUhTNTEyIn0..")
        && s.split('.').count() == 5
        && tokens::parse_token(s).is_some()
}

impl Broker {
    /// A queue of [`ACCOUNT`] that must exist.
    fn queue(&self, name: &str) -> &queue::QueueState {
        let queue = self
            .accounts
            .get(ACCOUNT)
            .and_then(|queues| queues.get(name));
        queue.expect("the queue exists")
    }

    /// The expiry of `lease_id` if it is the live lease of its message.
    fn lease_expiry(&self, name: &str, lease_id: &str) -> Option<u64> {
        let q = self.accounts.get(ACCOUNT)?.get(name)?;
        let key = tokens::parse_token(lease_id)?;
        let stored = q.messages.get(q.leases.get(&key)?)?;
        stored.lease.filter(|l| l.key == key).map(|l| l.expiry_ms)
    }

    /// Checks every internal index against the stored messages.
    fn check_invariants(&self) {
        let queues = self.accounts.values().flat_map(|queues| queues.iter());
        for (name, q) in queues {
            assert!(!q.is_reclaimable(), "{name}: empty queue kept");
            let mut bytes = 0u64;
            let mut oldest = None::<u64>;
            let mut leased = 0usize;
            let mut issued = 0usize;
            for (&seq, s) in &q.messages {
                bytes += s.body.len() as u64;
                oldest = Some(oldest.map_or(s.timestamp_ms, |o| o.min(s.timestamp_ms)));
                issued += s.issued.len();
                for key in &s.issued {
                    assert_eq!(q.leases.get(key), Some(&seq), "{name}: lease map");
                }
                assert!(q.oldest.contains(&(s.timestamp_ms, seq)), "{name}: oldest");
                match s.lease {
                    Some(l) => {
                        leased += 1;
                        assert!(q.inflight.contains(&(l.expiry_ms, seq)), "{name}: inflight");
                        assert_eq!(s.issued.last(), Some(&l.key), "{name}: live lease");
                        assert!(s.attempts >= 1);
                    }
                    None => assert!(q.ready.contains(&(s.visible_at_ms, seq)), "{name}: ready"),
                }
            }
            assert_eq!(q.bytes, bytes, "{name}: bytes");
            assert_eq!(q.oldest.len(), q.messages.len(), "{name}: oldest len");
            assert_eq!(
                q.ready.len() + q.inflight.len(),
                q.messages.len(),
                "{name}: index"
            );
            assert_eq!(q.inflight.len(), leased, "{name}: inflight len");
            assert_eq!(q.leases.len(), issued, "{name}: leases len");
            if let Some(due) = q.sweep_due_ms {
                let scheduled = self.sweeps.iter().any(|(d, _, n)| *d == due && n == name);
                assert!(scheduled, "{name}: sweep");
            }
            for book in [&q.refs, &q.previews] {
                if !book.is_empty() {
                    assert!(q.sweep_due_ms.is_some(), "{name}: tokens never swept");
                }
                assert!(book.consistent(), "{name}: token order");
                assert!(book.len() <= PEEK_REF_CAP, "{name}: token cap");
            }
            let m = q.metrics();
            assert_eq!(m.backlog_count, q.messages.len() as u64);
            assert_eq!(m.backlog_bytes, bytes);
            assert_eq!(m.oldest_message_timestamp_ms, oldest.unwrap_or(0));
        }
    }
}

#[test]
fn body_kind_names() {
    assert_eq!(BodyKind::Text.as_str(), "text");
    assert_eq!(BodyKind::Json.as_str(), "json");
    assert_eq!(BodyKind::Bytes.as_str(), "bytes");
    assert_eq!(BodyKind::V8.as_str(), "v8");
}

#[test]
fn default_config() {
    let config = BrokerConfig::default();
    assert_eq!(config.max_retries, 3);
    assert!(config.dead_letter_queues.is_empty());
    let b = new_broker(config.clone());
    assert_eq!(b.config(), &config);
}

#[test]
fn push_sets_fields_and_metrics() {
    let mut b = broker();
    let m = b.push(
        "q",
        vec![
            text("hello"),
            NewMessage {
                kind: BodyKind::Json,
                body: b"{\"a\":1}".to_vec(),
                delay_ms: 0,
            },
        ],
        1_000,
    );
    assert_eq!(m, metrics(2, 12, 1_000));
    let m = b.push("q", vec![text("x")], 2_000);
    assert_eq!(m, metrics(3, 13, 1_000));
    let (d, m) = b.pull("q", 10, VIS, 3_000);
    assert_eq!(m, metrics(3, 13, 1_000));
    assert_eq!(d.len(), 3);
    assert!(d.iter().all(|d| d.attempts == 1));
    assert_eq!(d[0].kind, BodyKind::Text);
    assert_eq!(d[1].kind, BodyKind::Json);
    assert_eq!(&*d[1].body, b"{\"a\":1}");
    assert_eq!(d[0].timestamp_ms, 1_000);
    assert_eq!(d[2].timestamp_ms, 2_000);
    assert!(is_hex(&d[0].id, 32));
    assert!(is_token(&d[0].lease_id));
}

#[test]
fn fifo_order_across_pulls() {
    let mut b = broker();
    let msgs = (0..10).map(|i| text(&i.to_string())).collect();
    b.push("q", msgs, 0);
    let (first, _) = b.pull("q", 4, VIS, 1);
    let (second, _) = b.pull("q", 100, VIS, 1);
    assert_eq!(bodies(&first), ["0", "1", "2", "3"]);
    assert_eq!(bodies(&second), ["4", "5", "6", "7", "8", "9"]);
    let (none, _) = b.pull("q", 100, VIS, 1);
    assert!(none.is_empty());
}

#[test]
fn batch_size_zero_returns_nothing() {
    let mut b = broker();
    b.push("q", vec![text("a")], 0);
    let (d, m) = b.pull("q", 0, VIS, 0);
    assert!(d.is_empty());
    assert_eq!(m.backlog_count, 1);
    assert!(b.peek("q", 0, 0).is_empty());
    let (d, _) = b.pull("q", 1, VIS, 0);
    assert_eq!(d[0].attempts, 1);
}

#[test]
fn delays_hide_messages_and_order_by_visible_time() {
    let mut b = broker();
    b.push(
        "q",
        vec![delayed("late", 500), text("now"), delayed("mid", 200)],
        1_000,
    );
    let (d, _) = b.pull("q", 10, VIS, 1_000);
    assert_eq!(bodies(&d), ["now"]);
    let (d, _) = b.pull("q", 10, VIS, 1_199);
    assert!(d.is_empty());
    assert_eq!(b.peek("q", 10, 1_199).len(), 0);
    let (d, _) = b.pull("q", 10, VIS, 1_200);
    assert_eq!(bodies(&d), ["mid"]);
    // Later pushes with no delay still come after an earlier-visible message.
    b.push("q", vec![text("after")], 1_600);
    let (d, m) = b.pull("q", 10, VIS, 1_600);
    assert_eq!(bodies(&d), ["late", "after"]);
    assert_eq!(m, metrics(4, 15, 1_000));
}

#[test]
fn concurrent_pulls_are_disjoint() {
    let mut b = broker();
    b.push("q", (0..50).map(|i| text(&i.to_string())).collect(), 0);
    let (a, _) = b.pull("q", 20, VIS, 10);
    let (c, _) = b.pull("q", 20, VIS, 10);
    let (e, _) = b.pull("q", 20, VIS, 10);
    let ids: HashSet<String> = a.iter().chain(&c).chain(&e).map(|d| d.id.clone()).collect();
    assert_eq!(ids.len(), 50);
    assert_eq!(e.len(), 10);
    b.check_invariants();
}

#[test]
fn ack_at_expiry_is_late_but_accepted_and_zero_visibility_expires_at_once() {
    let (mut b, d) = leased_one(50);
    let r = b.ack("q", &leases(&d), &[], 50);
    assert_eq!((r.ack_count, r.warnings.len()), (1, 0));
    b.push("q", vec![text("b")], 55);
    let (d, _) = b.pull("q", 1, 0, 60);
    assert_eq!(d[0].attempts, 1);
    let (d, _) = b.pull("q", 1, 0, 60);
    assert_eq!(d[0].attempts, 2);
    let (again, _) = b.pull("q", 1, 0, 60);
    assert_eq!(again[0].attempts, 3);
    assert_eq!(
        b.metrics("q", 60).backlog_count,
        0,
        "third expiry hits max_retries"
    );
    assert_eq!(b.dead_lettered("q"), 1);
}

#[test]
fn ack_deletes_and_updates_metrics() {
    let mut b = broker();
    b.push("q", vec![text("aa"), text("bbb")], 5);
    b.push("q", vec![text("c")], 9);
    let (d, _) = b.pull("q", 2, VIS, 10);
    let r = b.ack("q", &leases(&d)[..1], &[], 11);
    assert_eq!((r.ack_count, r.retry_count), (1, 0));
    assert_eq!(b.metrics("q", 11), metrics(2, 4, 5));
    let r = b.ack("q", &leases(&d)[1..], &[], 11);
    assert_eq!(r.ack_count, 1);
    assert_eq!(b.metrics("q", 11), metrics(1, 1, 9));
    let (d, _) = b.pull("q", 2, VIS, 12);
    b.ack("q", &leases(&d), &[], 12);
    assert_eq!(b.metrics("q", 12), QueueStats::default());
    b.check_invariants();
}

#[test]
fn retry_requeues_immediately_or_after_delay() {
    let mut b = broker();
    b.push("q", vec![text("a"), text("b"), text("c")], 0);
    let (d, _) = b.pull("q", 3, VIS, 0);
    let retries = vec![(d[0].lease_id.clone(), 0), (d[1].lease_id.clone(), 1_000)];
    let r = b.ack("q", &[], &retries, 10);
    assert_eq!((r.ack_count, r.retry_count), (0, 2));
    assert!(r.warnings.is_empty());
    assert_eq!(b.metrics("q", 10).backlog_count, 3);
    let (d2, _) = b.pull("q", 10, VIS, 10);
    assert_eq!(bodies(&d2), ["a"]);
    assert_eq!(d2[0].attempts, 2);
    let (d3, _) = b.pull("q", 10, VIS, 1_009);
    assert!(d3.is_empty());
    let (d4, _) = b.pull("q", 10, VIS, 1_010);
    assert_eq!(bodies(&d4), ["b"]);
    // A retried lease stays usable while its message exists: its late ack
    // deletes the message now held by the second delivery.
    let r = b.ack("q", &[d[0].lease_id.clone()], &[], 1_011);
    assert_eq!((r.ack_count, r.warnings.len()), (1, 0));
    let r = b.ack("q", &leases(&d2), &[], 1_012);
    assert_eq!((r.ack_count, r.warnings.len()), (0, 1));
    b.check_invariants();
}

#[test]
fn duplicate_and_unknown_leases_warn() {
    let mut b = broker();
    b.push("q", vec![text("a"), text("b")], 0);
    let (d, _) = b.pull("q", 2, VIS, 0);
    let l0 = d[0].lease_id.clone();
    let l1 = d[1].lease_id.clone();
    let junk = vec![
        String::new(),
        "nope".to_owned(),
        "0".repeat(48),
        "0".repeat(32),
        l1.to_uppercase(),
        format!("+{}", &l1[1..]),
        l1.replace(|c: char| c == l1.chars().last().unwrap_or('0'), "g"),
    ];
    let mut acks = vec![l0.clone(), l0.clone()];
    acks.extend(junk.iter().cloned());
    let r = b.ack(
        "q",
        &acks,
        &[(l0.clone(), 0), (l1.clone(), 0), (l1.clone(), 0)],
        1,
    );
    assert_eq!((r.ack_count, r.retry_count), (1, 1));
    assert_eq!(
        r.warnings.get(&l0).map(String::as_str),
        Some(LEASE_DUPLICATE)
    );
    assert_eq!(
        r.warnings.get(&l1).map(String::as_str),
        Some(LEASE_DUPLICATE)
    );
    for j in &junk {
        assert_eq!(
            r.warnings.get(j).map(String::as_str),
            Some(LEASE_UNKNOWN),
            "{j:?}"
        );
    }
    // In a later call, the acked message is gone; the retried one is back
    // in the queue and no one holds it, so its old lease retries it again.
    let r = b.ack("q", std::slice::from_ref(&l0), &[(l1.clone(), 0)], 2);
    assert_eq!((r.ack_count, r.retry_count), (0, 1));
    assert_eq!(r.warnings.len(), 1);
    assert_eq!(r.warnings.get(&l0).map(String::as_str), Some(LEASE_UNKNOWN));
    b.check_invariants();
}

#[test]
fn ack_and_retry_of_same_lease_acks_first() {
    let (mut b, d) = leased_one(VIS);
    let l = d[0].lease_id.clone();
    let r = b.ack("q", std::slice::from_ref(&l), &[(l.clone(), 0)], 1);
    assert_eq!((r.ack_count, r.retry_count), (1, 0));
    assert_eq!(r.warnings.len(), 1);
    assert!(r.warnings.contains_key(&l));
    assert_eq!(b.metrics("q", 1).backlog_count, 0);
}

#[test]
fn lease_from_another_queue_is_unknown() {
    let mut b = broker();
    b.push("a", vec![text("x")], 0);
    b.push("b", vec![text("y")], 0);
    let (d, _) = b.pull("a", 1, VIS, 0);
    let r = b.ack("b", &leases(&d), &[], 1);
    assert_eq!(r.ack_count, 0);
    assert_eq!(r.warnings.len(), 1);
    let r = b.ack("a", &leases(&d), &[], 1);
    assert_eq!(r.ack_count, 1);
}

#[test]
fn peek_ref_is_not_a_lease_and_lease_is_not_a_ref() {
    let mut b = broker();
    b.push("q", vec![text("x"), text("y")], 0);
    let p = b.peek("q", 1, 0);
    let r = b.ack("q", &[p[0].peek_ref.clone()], &[], 0);
    assert_eq!(r.ack_count, 0);
    let (d, _) = b.pull("q", 1, VIS, 0);
    let r = b.purge("q", &leases(&d), 0);
    assert_eq!(r.purged, 0);
    assert_eq!(r.warnings.len(), 1);
}

#[test]
fn max_retries_drops_without_dlq() {
    let mut b = broker_retrying(2);
    b.push("q", vec![text("a")], 0);
    // Attempt 1 expires, attempt 2 expires: dropped.
    b.pull("q", 1, 10, 0);
    let (d, _) = b.pull("q", 1, 10, 10);
    assert_eq!(bodies(&d), ["a"]);
    assert_eq!(d[0].attempts, 2);
    b.push("q", vec![text("bb")], 15);
    assert_eq!(b.metrics("q", 19), metrics(2, 3, 0));
    assert_eq!(b.dead_lettered("q"), 0);
    assert_eq!(b.metrics("q", 20), metrics(1, 2, 15));
    assert_eq!(b.dead_lettered("q"), 1);
    // Retry path: attempts 1 then retried -> requeued; attempts 2 retried -> dropped.
    let (d, _) = b.pull("q", 1, VIS, 20);
    let r = b.ack("q", &[], &[(d[0].lease_id.clone(), 0)], 21);
    assert_eq!(r.retry_count, 1);
    assert_eq!(b.metrics("q", 21).backlog_count, 1);
    let (d, _) = b.pull("q", 1, VIS, 21);
    assert_eq!(d[0].attempts, 2);
    let r = b.ack("q", &[], &[(d[0].lease_id.clone(), 0)], 22);
    assert_eq!(r.retry_count, 1);
    assert!(r.warnings.is_empty());
    assert_eq!(b.metrics("q", 22), QueueStats::default());
    assert_eq!(b.dead_lettered("q"), 2);
    assert!(!b.has_queue("dlq"));
    b.check_invariants();
}

#[test]
fn max_retries_zero_dead_letters_on_first_failure() {
    let mut b = broker_retrying(0);
    b.push("q", vec![text("a")], 0);
    b.pull("q", 1, 10, 0);
    assert_eq!(b.metrics("q", 10).backlog_count, 0);
    assert_eq!(b.dead_lettered("q"), 1);
}

#[test]
fn dead_letter_queue_receives_moved_messages() {
    let mut b = broker_with_dlq(1);
    b.push(
        "q",
        vec![NewMessage {
            kind: BodyKind::Json,
            body: b"[1]".to_vec(),
            delay_ms: 0,
        }],
        100,
    );
    b.push("q", vec![text("retry-me")], 150);
    let (d, _) = b.pull("q", 2, 1_000, 200);
    let original_id = d[0].id.clone();
    // Retry with attempts 1 >= 1 moves at once.
    let r = b.ack("q", &[], &[(d[1].lease_id.clone(), 5_000)], 300);
    assert_eq!(r.retry_count, 1);
    assert_eq!(b.dead_lettered("q"), 1);
    assert_eq!(b.metrics("dlq", 300), metrics(1, 8, 150));
    // The expiry of the first lease is picked up when the DLQ is observed,
    // without touching the source queue.
    assert_eq!(b.metrics("dlq", 1_200), metrics(2, 11, 100));
    assert_eq!(b.dead_lettered("q"), 2);
    assert_eq!(b.metrics("q", 1_200), QueueStats::default());
    let (moved, _) = b.pull("dlq", 10, VIS, 1_200);
    assert_eq!(bodies(&moved), ["retry-me", "[1]"]);
    assert!(
        moved.iter().all(|m| m.attempts == 1),
        "attempts reset then pulled once"
    );
    assert_eq!(moved[1].kind, BodyKind::Json);
    assert_eq!(moved[1].timestamp_ms, 100);
    assert_eq!(moved[0].timestamp_ms, 150);
    assert_ne!(moved[1].id, original_id);
    assert_eq!(b.dead_lettered("dlq"), 0);
    b.check_invariants();
}

#[test]
fn dead_letter_queue_peek_and_pull_see_expired_feeders() {
    let mut b = one_attempt_into_dlq(10);
    let p = b.peek("dlq", 10, 10);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].attempts, 0);
    let (d, _) = b.pull("dlq", 10, VIS, 10);
    assert_eq!(d.len(), 1);
}

#[test]
fn self_and_chained_dead_letter_queues() {
    let mut dead_letter_queues = HashMap::new();
    dead_letter_queues.insert("a".to_owned(), "b".to_owned());
    dead_letter_queues.insert("b".to_owned(), "c".to_owned());
    dead_letter_queues.insert("s".to_owned(), "s".to_owned());
    let mut b = new_broker(BrokerConfig {
        max_retries: 1,
        dead_letter_queues,
        ..BrokerConfig::default()
    });
    b.push("a", vec![text("x")], 0);
    b.pull("a", 1, 10, 0);
    assert_eq!(b.metrics("b", 10).backlog_count, 1);
    b.pull("b", 1, 10, 10);
    assert_eq!(b.metrics("c", 20).backlog_count, 1);
    assert_eq!(b.metrics("a", 20).backlog_count, 0);
    assert_eq!(b.metrics("b", 20).backlog_count, 0);

    b.push("s", vec![text("loop")], 0);
    let (d, _) = b.pull("s", 1, 10, 0);
    let (d2, _) = b.pull("s", 1, 10, 10);
    assert_eq!(d2[0].attempts, 1);
    assert_ne!(d2[0].id, d[0].id);
    assert_eq!(b.dead_lettered("s"), 1);
    assert_eq!(b.metrics("s", 10), metrics(1, 4, 0));
    b.check_invariants();
}

#[test]
fn peek_does_not_lease() {
    let mut b = two_visible_and_delayed("c", 100);
    let p = b.peek("q", 10, 0);
    assert_eq!(p.len(), 2);
    assert_eq!(p[0].attempts, 0);
    assert_eq!(&*p[0].body, b"a");
    assert!(is_token(&p[0].peek_ref));
    let again = b.peek("q", 1, 0);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, p[0].id);
    assert_ne!(again[0].peek_ref, p[0].peek_ref);
    let (d, _) = b.pull("q", 1, VIS, 0);
    assert_eq!(d[0].id, p[0].id);
    assert_eq!(d[0].attempts, 1);
    let p = b.peek("q", 10, 0);
    assert_eq!(p.len(), 1, "leased message hidden from peek");
    assert_eq!(&*p[0].body, b"b");
    let p = b.peek("q", 10, 100);
    assert_eq!(p.len(), 2);
    assert_eq!(b.metrics("q", 100).backlog_count, 3);
    b.check_invariants();
}

#[test]
fn purge_by_ref() {
    let mut b = broker();
    b.push("q", vec![text("a"), text("bb"), text("ccc")], 0);
    let p = b.peek("q", 10, 0);
    let (d, _) = b.pull("q", 1, VIS, 1);
    assert_eq!(d[0].id, p[0].id);
    let refs = vec![
        p[0].peek_ref.clone(),
        p[2].peek_ref.clone(),
        p[2].peek_ref.clone(),
        "bogus".to_owned(),
    ];
    let r = b.purge("q", &refs, 2);
    assert_eq!(r.purged, 2);
    assert_eq!(
        r.warnings.get(&p[2].peek_ref).map(String::as_str),
        Some(REF_GONE)
    );
    assert_eq!(
        r.warnings.get("bogus").map(String::as_str),
        Some(REF_UNKNOWN)
    );
    assert_eq!(r.warnings.len(), 2);
    assert_eq!(b.metrics("q", 2), metrics(1, 2, 0));
    // The purged message's lease went stale.
    let ra = b.ack("q", &leases(&d), &[], 3);
    assert_eq!(ra.ack_count, 0);
    assert_eq!(ra.warnings.len(), 1);
    // Purged messages are not dead-lettered.
    assert_eq!(b.dead_lettered("q"), 0);
    // Refs from one queue mean nothing on another.
    let r = b.purge("other", &[p[1].peek_ref.clone()], 3);
    assert_eq!(r.purged, 0);
    let r = b.purge("q", &[p[1].peek_ref.clone()], 3);
    assert_eq!(r.purged, 1);
    assert_eq!(b.metrics("q", 3), QueueStats::default());
    b.check_invariants();
}

#[test]
fn peek_refs_expire_after_ttl() {
    let mut b = broker();
    b.push("q", vec![text("a"), text("b")], 0);
    let p = b.peek("q", 1, 0);
    let r = b.purge("q", &[p[0].peek_ref.clone()], PEEK_REF_TTL_MS);
    assert_eq!(r.purged, 0);
    assert_eq!(r.warnings.len(), 1);
    let p = b.peek("q", 1, PEEK_REF_TTL_MS);
    let r = b.purge("q", &[p[0].peek_ref.clone()], 2 * PEEK_REF_TTL_MS - 1);
    assert_eq!(r.purged, 1);
    assert!(b.queue("q").refs.len() <= 1);
}

#[test]
fn peek_ref_map_is_bounded() {
    let mut b = broker();
    b.push("q", (0..1_000).map(|i| text(&i.to_string())).collect(), 0);
    let first = b.peek("q", 1, 0);
    for _ in 0..(PEEK_REF_CAP / 1_000 + 5) {
        b.peek("q", 1_000, 1);
    }
    let q = &b.queue("q");
    assert_eq!(q.refs.len(), PEEK_REF_CAP);
    assert!(q.refs.consistent());
    let r = b.purge("q", &[first[0].peek_ref.clone()], 2);
    assert_eq!(r.purged, 0, "oldest ref was evicted");
    // Age eviction on any later touch.
    b.metrics("q", 1 + PEEK_REF_TTL_MS);
    assert!(b.queue("q").refs.is_empty());
    // Draining the queue forgets every ref, and the queue with them.
    b.peek("q", 10, 2 + PEEK_REF_TTL_MS);
    let (d, _) = b.pull("q", usize::MAX, VIS, 3 + PEEK_REF_TTL_MS);
    b.ack("q", &leases(&d), &[], 4 + PEEK_REF_TTL_MS);
    assert!(!b.has_queue("q") && b.sweeps.is_empty());
    b.check_invariants();
}

#[test]
fn metrics_exact_after_every_op_and_zero_after_drain() {
    let mut b = broker_with_dlq(1);
    let n = 5_000u64;
    let msgs = (0..n)
        .map(|i| text(&"x".repeat((i % 7) as usize + 1)))
        .collect();
    let total: u64 = (0..n).map(|i| i % 7 + 1).sum();
    assert_eq!(b.push("q", msgs, 10), metrics(n, total, 10));
    b.push("q", vec![delayed("late", 1_000)], 20);
    let total = total + 4;
    assert_eq!(b.metrics("q", 20), metrics(n + 1, total, 10));
    let (d, m) = b.pull("q", 2_000, 100, 30);
    assert_eq!(m, metrics(n + 1, total, 10));
    let acked: u64 = d[..1_000].iter().map(|d| d.body.len() as u64).sum();
    b.ack("q", &leases(&d)[..1_000], &[], 40);
    assert_eq!(
        b.metrics("q", 40),
        metrics(n + 1 - 1_000, total - acked, 10)
    );
    // The other 1000 expire and move to the DLQ (max_retries 1).
    let moved: u64 = d[1_000..].iter().map(|d| d.body.len() as u64).sum();
    assert_eq!(b.metrics("dlq", 130), metrics(1_000, moved, 10));
    assert_eq!(
        b.metrics("q", 130),
        metrics(n + 1 - 2_000, total - acked - moved, 10)
    );
    b.check_invariants();
    // Drain everything.
    for queue in ["q", "dlq"] {
        let (d, _) = b.pull(queue, usize::MAX, VIS, 2_000);
        let r = b.ack(queue, &leases(&d), &[], 2_001);
        assert_eq!(r.ack_count as usize, d.len());
        assert_eq!(b.metrics(queue, 2_001), QueueStats::default());
    }
    // The source keeps its dead-letter count, and gave its memory back.
    let q = b.queue("q");
    assert!(q.messages.capacity() <= SHRINK_ABOVE);
    assert!(q.leases.capacity() <= SHRINK_ABOVE);
    assert!(q.ready.is_empty() && q.inflight.is_empty() && q.oldest.is_empty());
    assert!(!b.has_queue("dlq"), "nothing readable is left in the DLQ");
    b.check_invariants();
}

#[test]
fn ids_and_leases_unique_over_10k() {
    let mut b = broker();
    let mut ids = HashSet::new();
    let mut lease_ids = HashSet::new();
    b.push("q", (0..10_000).map(|i| text(&i.to_string())).collect(), 0);
    for round in 0..3u64 {
        let (d, _) = b.pull("q", usize::MAX, 10, round * 10);
        assert_eq!(d.len(), 10_000);
        for delivery in &d {
            assert!(is_hex(&delivery.id, 32));
            assert!(is_token(&delivery.lease_id));
            assert!(lease_ids.insert(delivery.lease_id.clone()));
            if round == 0 {
                assert!(ids.insert(delivery.id.clone()));
            } else {
                assert!(ids.contains(&delivery.id));
            }
        }
    }
    b.push("p", (0..10_000).map(|i| text(&i.to_string())).collect(), 0);
    let p = b.peek("p", usize::MAX, 0);
    let refs: HashSet<_> = p.iter().map(|p| p.peek_ref.clone()).collect();
    assert_eq!(refs.len(), 10_000);
    assert!(refs.iter().all(|r| is_token(r)));
    assert!(refs.is_disjoint(&lease_ids));
    let peeked_ids: HashSet<_> = p.iter().map(|p| p.id.clone()).collect();
    assert_eq!(peeked_ids.len(), 10_000);
    assert!(peeked_ids.is_disjoint(&ids));
    assert_eq!(ids.len(), 10_000);
    assert_eq!(lease_ids.len(), 30_000);
}

#[test]
fn extreme_inputs_do_not_panic() {
    let mut b = broker_with_dlq(u32::MAX);
    let max = u64::MAX;
    b.push("", vec![delayed("x", max), text("")], max);
    // Pushed within the retention period of the pulls at `max` (a message
    // pushed at 0 would be gone by then: 4 days of retention).
    b.push("", vec![delayed("y", max)], max - 1);
    let (d, m) = b.pull("", usize::MAX, max, max);
    assert_eq!(d.len(), 3);
    assert_eq!(m, metrics(3, 2, max - 1));
    // Time going backwards: the leases (ending at u64::MAX) are live.
    let r = b.ack(
        "",
        &leases(&d)[..1],
        &[(d[1].lease_id.clone(), max)],
        max - 1,
    );
    assert_eq!((r.ack_count, r.retry_count), (1, 1));
    assert!(b.pull("", usize::MAX, max, max - 1).0.is_empty());
    assert!(b.peek("", usize::MAX, max - 1).is_empty());
    let p = b.peek("", usize::MAX, max);
    assert_eq!(p.len(), 2);
    let refs: Vec<String> = p.iter().map(|p| p.peek_ref.clone()).collect();
    assert_eq!(b.purge("", &refs, max).purged, 2);
    assert_eq!(b.metrics("", max), QueueStats::default());
    b.push("q", vec![text("a")], 0);
    assert_eq!(b.pull("q", usize::MAX, 0, 0).0.len(), 1);
    assert_eq!(b.pull("q", usize::MAX, 0, 0).0.len(), 1);
    // Time going backwards is tolerated.
    assert!(b.pull("q", usize::MAX, 0, 0).0.len() <= 1);
    b.metrics("q", 0);
    b.ack("q", &[], &[], 0);
    b.purge("q", &["".to_owned(), "é".repeat(24)], 0);
    let r = b.ack("q", &["é".repeat(24)], &[("ü".repeat(30), max)], 0);
    assert_eq!(r.warnings.len(), 2);
    b.check_invariants();
}
