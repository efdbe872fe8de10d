//! Extend, preview, deleting previewed messages, and purging a whole queue.

use super::*;

fn previewed_ids(previewed: &[Delivery]) -> Vec<String> {
    leases(previewed)
}

#[test]
fn extension_counts_from_now_and_keeps_the_lease_id_and_attempts() {
    let (mut b, d) = leased_one(10_000);
    // Extended twice past the original timeout, 10 s from each extension.
    for now in [8_000, 16_000] {
        let r = b.extend("q", &leases(&d), 10_000, now);
        assert_eq!((r.extended, r.warnings.len()), (1, 0), "at {now}");
    }
    assert!(b.pull("q", 10, VIS, 25_999).0.is_empty(), "still leased");
    assert!(b.peek("q", 10, 25_999).is_empty());
    assert_eq!(b.metrics("q", 25_999), metrics(1, 1, 0));
    // The lease id held from the pull still acknowledges.
    let r = b.ack("q", &leases(&d), &[], 25_999);
    assert_eq!((r.ack_count, r.warnings.len()), (1, 0));
    assert!(!b.has_queue("q"));

    // Shorter than what was left: the new expiry is now + timeout.
    b.push("q", vec![text("b")], 0);
    let (d, _) = b.pull("q", 1, 10_000, 0);
    assert_eq!(b.extend("q", &leases(&d), 1_000, 2_000).extended, 1);
    let (again, _) = b.pull("q", 1, VIS, 3_000);
    assert_eq!(bodies(&again), ["b"]);
    assert_eq!(again[0].attempts, 2, "an extension uses no attempt");
    b.check_invariants();
}

#[test]
fn extension_warns_for_leases_whose_message_moved_on() {
    let (mut b, first) = leased_one(100);
    b.push("q", vec![text("b")], 150);
    let (second, _) = b.pull("q", 1, 100_000, 200);
    assert_eq!(bodies(&second), ["a"], "delivered again after expiry");
    let (other, _) = b.pull("q", 1, VIS, 200);
    let r = b.extend("q", &leases(&first), 1_000, 300);
    assert_eq!(r.extended, 0);
    assert_eq!(r.warnings[&first[0].lease_id], DELIVERED_AGAIN);
    // The current holder is untouched and extends normally.
    let mut twice = leases(&second);
    twice.extend(leases(&second));
    let r = b.extend("q", &twice, 1_000, 300);
    assert_eq!(r.extended, 1);
    assert_eq!(r.warnings[&second[0].lease_id], EXTEND_DUPLICATE);
    // Deleted, unknown, malformed, or of another queue: unknown.
    b.ack("q", &leases(&other), &[], 301);
    b.push("elsewhere", vec![text("x")], 301);
    let (foreign, _) = b.pull("elsewhere", 1, VIS, 301);
    let mut junk = leases(&other);
    junk.extend(["".to_owned(), "zz".to_owned(), "0".repeat(32)]);
    junk.extend(leases(&foreign));
    let r = b.extend("q", &junk, 1_000, 302);
    assert_eq!(r.extended, 0);
    assert_eq!(r.warnings.len(), junk.len());
    assert!(r.warnings.values().all(|w| w == LEASE_UNKNOWN));
    b.check_invariants();
}

#[test]
fn an_expired_lease_not_delivered_again_takes_its_message_back() {
    let (mut b, d) = leased_one(100);
    assert_eq!(b.peek("q", 10, 150).len(), 1, "visible after expiry");
    let r = b.extend("q", &leases(&d), 1_000, 150);
    assert_eq!((r.extended, r.warnings.len()), (1, 0));
    assert!(b.peek("q", 10, 150).is_empty(), "leased again");
    assert!(b.pull("q", 10, VIS, 1_149).0.is_empty());
    let (again, _) = b.pull("q", 10, VIS, 1_150);
    assert_eq!(again[0].attempts, 2);
    b.check_invariants();

    // Not after a retry gave it back, nor once it ran out of attempts.
    let mut b = broker_retrying(1);
    b.push("q", vec![text("a")], 0);
    let (d, _) = b.pull("q", 1, VIS, 0);
    let mut b2 = broker();
    b2.push("q", vec![text("c")], 0);
    let (d2, _) = b2.pull("q", 1, VIS, 0);
    b2.ack("q", &[], &[(d2[0].lease_id.clone(), 500)], 1);
    let r = b2.extend("q", &leases(&d2), 10_000, 2);
    assert_eq!(r.warnings[&d2[0].lease_id], RELEASED_BY_RETRY);
    assert!(b2.pull("q", 1, VIS, 499).0.is_empty(), "still delayed");
    assert_eq!(b2.pull("q", 1, VIS, 501).0.len(), 1);
    let r = b.extend("q", &leases(&d), 10_000, VIS);
    assert_eq!(
        r.warnings[&d[0].lease_id], LEASE_UNKNOWN,
        "dropped at expiry"
    );
    assert_eq!(b.dead_lettered("q"), 1);
    b.check_invariants();
    b2.check_invariants();
}

#[test]
fn preview_leases_nothing() {
    let mut b = two_visible_and_delayed("later", 1_000);
    let p = b.preview("q", 10, 1);
    assert_eq!(bodies(&p), ["a", "b"], "delayed messages are not shown");
    assert!(p.iter().all(|m| m.attempts == 0 && is_token(&m.lease_id)));
    assert_eq!(bodies(&b.preview("q", 1, 1)), ["a"], "batch size");
    let (d, _) = b.pull("q", 10, VIS, 2);
    assert_eq!(bodies(&d), ["a", "b"]);
    assert!(d.iter().all(|m| m.attempts == 1));
    let ids: HashSet<_> = d.iter().map(|m| &m.id).collect();
    assert!(p.iter().all(|m| ids.contains(&m.id)), "same message ids");
    assert!(
        b.preview("q", 10, 2).is_empty(),
        "leased messages are not shown"
    );
    assert_eq!(b.metrics("q", 2), metrics(3, 7, 0));
    b.check_invariants();
}

#[test]
fn deleting_previewed_messages_is_at_once_and_counts_as_nothing_else() {
    let mut b = broker_with_dlq(3);
    b.push("q", vec![text("aa"), text("b"), text("c")], 5);
    let p = b.preview("q", 10, 6);
    let r = b.delete_previewed("q", &previewed_ids(&p[..2]), &[], 7);
    assert_eq!((r.deleted, r.delayed, r.warnings.len()), (2, 0, 0));
    assert_eq!(b.metrics("q", 7), metrics(1, 1, 5));
    assert_eq!(b.dead_lettered("q"), 0);
    assert!(!b.has_queue("dlq"));
    // Again: the messages are gone.
    let r = b.delete_previewed("q", &previewed_ids(&p[..1]), &[], 8);
    assert_eq!(r.warnings[&p[0].lease_id], REF_GONE);
    // Preview ids and lease ids are not interchangeable; unknown ids warn.
    let (d, _) = b.pull("q", 1, VIS, 9);
    let mut wrong = leases(&d);
    wrong.extend(["".to_owned(), "0".repeat(32)]);
    let r = b.delete_previewed("q", &wrong, &[], 9);
    assert_eq!(r.deleted, 0);
    assert!(r.warnings.values().all(|w| w == PREVIEW_UNKNOWN));
    let fresh = b.preview("q", 1, 9);
    assert!(fresh.is_empty());
    b.ack("q", &[], &[(d[0].lease_id.clone(), 0)], 10);
    let fresh = b.preview("q", 1, 10);
    let r = b.ack("q", &previewed_ids(&fresh), &[], 10);
    assert_eq!((r.ack_count, r.warnings.len()), (0, 1));
    assert_eq!(b.extend("q", &previewed_ids(&fresh), 1_000, 10).extended, 0);
    assert_eq!(b.purge("q", &previewed_ids(&fresh), 10).purged, 0);
    b.check_invariants();
}

#[test]
fn preview_ids_go_stale_when_their_message_changes() {
    let mut b = broker();
    b.push("q", vec![text("a"), text("b"), text("c"), text("d")], 0);
    let p = b.preview("q", 10, 0);
    // Delivered (then back after expiry), retried, purged by ref.
    let (d, _) = b.pull("q", 2, 100, 1);
    b.ack("q", &[], &[(d[1].lease_id.clone(), 0)], 2);
    let peeked = b.peek("q", 10, 2);
    let c = peeked
        .iter()
        .find(|m| &*m.body == b"c")
        .map(|m| m.peek_ref.clone());
    b.purge("q", &c.into_iter().collect::<Vec<_>>(), 3);
    let r = b.delete_previewed("q", &previewed_ids(&p), &[], 200);
    assert_eq!(r.deleted, 1, "only d is as it was previewed");
    assert_eq!(r.warnings[&p[0].lease_id], PREVIEW_STALE);
    assert_eq!(r.warnings[&p[1].lease_id], PREVIEW_STALE);
    assert_eq!(r.warnings[&p[2].lease_id], REF_GONE);
    assert_eq!(b.metrics("q", 200).backlog_count, 2);

    // A retry delays without using an attempt; its id is then stale, and
    // a deletion listed with it applies first.
    let p = b.preview("q", 10, 200);
    assert_eq!(bodies(&p), ["b", "a"], "b came back first");
    let retries = vec![(p[0].lease_id.clone(), 1_000), (p[1].lease_id.clone(), 0)];
    let r = b.delete_previewed("q", &previewed_ids(&p[1..]), &retries, 201);
    assert_eq!((r.deleted, r.delayed), (1, 1));
    assert_eq!(r.warnings[&p[1].lease_id], REF_GONE);
    assert!(b.pull("q", 10, VIS, 1_200).0.is_empty(), "delayed");
    let r = b.delete_previewed("q", &[], &retries[..1], 1_200);
    assert_eq!(r.warnings[&p[0].lease_id], PREVIEW_STALE);
    let (d, _) = b.pull("q", 10, VIS, 1_201);
    assert_eq!((bodies(&d), d[0].attempts), (vec!["b".to_owned()], 2));

    // Preview ids expire with the peek refs' TTL.
    b.push("t", vec![text("x")], 0);
    let p = b.preview("t", 1, 0);
    let r = b.delete_previewed("t", &previewed_ids(&p), &[], PEEK_REF_TTL_MS);
    assert_eq!(r.warnings[&p[0].lease_id], PREVIEW_UNKNOWN);
    b.check_invariants();
}

#[test]
fn preview_ids_are_bounded_and_swept() {
    let mut b = broker();
    b.push("idle", vec![text("x")], 0);
    b.preview("idle", 1, 0);
    assert_eq!(b.queue("idle").previews.len(), 1);
    b.check_invariants();
    // Another queue's operation sweeps the idle queue's expired ids.
    b.metrics("other", PEEK_REF_TTL_MS);
    assert!(b.queue("idle").previews.is_empty());
    assert!(b.sweeps.is_empty());
    // A drained queue forgets its ids, and is dropped.
    b.preview("idle", 1, PEEK_REF_TTL_MS);
    let (d, _) = b.pull("idle", 1, VIS, PEEK_REF_TTL_MS);
    b.ack("idle", &leases(&d), &[], PEEK_REF_TTL_MS);
    assert!(!b.has_queue("idle") && b.sweeps.is_empty());
    // The cap holds for preview ids as for refs.
    b.push("q", (0..1_000).map(|i| text(&i.to_string())).collect(), 0);
    for _ in 0..(PEEK_REF_CAP / 1_000 + 2) {
        b.preview("q", 1_000, 1);
    }
    assert_eq!(b.queue("q").previews.len(), PEEK_REF_CAP);
    b.check_invariants();
}

#[test]
fn purging_the_whole_queue_deletes_everything_and_keeps_its_status() {
    let mut b = broker();
    assert_eq!(b.purge_status("q", 0), None);
    assert!(!b.has_queue("q"), "asking creates nothing");
    b.push("q", vec![text("visible"), text("leased")], 10);
    b.push("q", vec![delayed("delayed", 60_000)], 20);
    let (d, _) = b.pull("q", 1, VIS, 30);
    let peeked = b.peek("q", 10, 30);
    let p = b.preview("q", 10, 30);
    let purged = b.purge_all("q", 40);
    assert_eq!(
        purged,
        PurgedQueue {
            purged: 3,
            created_ms: 10,
            started_ms: 40
        }
    );
    assert_eq!(b.metrics("q", 40), QueueStats::default());
    assert!(
        b.pull("q", 10, VIS, 100_000).0.is_empty(),
        "delayed one too"
    );
    let r = b.ack("q", &leases(&d), &[], 41);
    assert_eq!(
        (r.ack_count, r.warnings[&d[0].lease_id].as_str()),
        (0, LEASE_UNKNOWN)
    );
    assert_eq!(b.extend("q", &leases(&d), 1_000, 41).extended, 0);
    let refs: Vec<String> = peeked.iter().map(|m| m.peek_ref.clone()).collect();
    assert_eq!(b.purge("q", &refs, 41).purged, 0);
    let r = b.delete_previewed("q", &previewed_ids(&p), &[], 41);
    assert_eq!(r.warnings.len(), p.len());
    // The status keeps the queue, and says when the last purge started.
    assert!(b.has_queue("q"));
    assert_eq!(b.purge_status("q", 50), Some(40));
    b.push("q", vec![text("after")], 60);
    assert_eq!(b.metrics("q", 60).backlog_count, 1, "new pushes land");
    let again = b.purge_all("q", 70);
    assert_eq!((again.purged, again.created_ms), (1, 10));
    assert_eq!(b.purge_status("q", 80), Some(70));
    // A purge of a queue never used records its status too.
    assert_eq!(b.purge_all("fresh", 90).purged, 0);
    assert_eq!(b.purge_status("fresh", 90), Some(90));
    b.check_invariants();
}

#[test]
fn purge_statuses_are_forgotten_after_their_ttl() {
    let mut b = broker();
    // Purges of ids nobody uses again must not pile up for ever.
    for i in 0..50 {
        b.purge_all(format!("gone{i}").as_str(), 1_000);
    }
    b.push("kept", vec![text("m")], 1_000);
    b.purge_all("kept", 1_000);
    b.push("kept", vec![text("after")], 1_001);
    assert_eq!(
        b.purge_status("gone7", 1_000 + PURGE_STATUS_TTL_MS - 1),
        Some(1_000)
    );
    // Any operation after the TTL sweeps them, without touching them.
    b.metrics("other", 1_000 + PURGE_STATUS_TTL_MS);
    assert!((0..50).all(|i| !b.has_queue(format!("gone{i}").as_str())));
    assert_eq!(b.purge_status("gone7", 1_000 + PURGE_STATUS_TTL_MS), None);
    assert!(b.has_queue("kept"), "it still holds a message");
    assert_eq!(b.purge_status("kept", 1_000 + PURGE_STATUS_TTL_MS), None);
    assert_eq!(
        b.metrics("kept", 1_000 + PURGE_STATUS_TTL_MS).backlog_count,
        1
    );
    b.check_invariants();
}

#[test]
fn purging_a_dead_letter_queue_includes_what_expired_into_it() {
    let mut b = one_attempt_into_dlq(100);
    // Expired at 100 with its one attempt used: moved to the DLQ, and the
    // purge at 200 sees it before deleting.
    assert_eq!(b.purge_all("dlq", 200).purged, 1);
    assert_eq!(b.metrics("dlq", 200), QueueStats::default());
    assert_eq!(b.dead_lettered("q"), 1, "the source's count stays");
    b.check_invariants();
}
