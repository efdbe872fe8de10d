//! Which state lives how long: queues while they hold something, accounts
//! apart, leases while their message exists, refs until they expire, and
//! tokens that owe nothing to one another.

use super::*;

#[test]
fn queues_exist_only_while_they_hold_something() {
    let mut b = broker();
    assert_eq!(b.metrics("a", 0), QueueStats::default());
    b.peek("b", 10, 0);
    b.pull("c", 10, VIS, 0);
    b.ack("d", &["x".to_owned()], &[], 0);
    b.purge("e", &["x".to_owned()], 0);
    b.push("f", vec![], 0);
    for name in ["a", "b", "c", "d", "e", "f"] {
        assert!(!b.has_queue(name), "{name}");
    }
    assert!(b.accounts.is_empty());
    assert_eq!(b.dead_lettered("zzz"), 0);

    // A message keeps its queue; a peek ref, a lease or a dead-letter count
    // cannot outlive the messages, except the count, which stays readable.
    b.push("q", vec![text("a"), text("b")], 0);
    let p = b.peek("q", 1, 0);
    let (d, _) = b.pull("q", 1, VIS, 0);
    assert!(b.has_queue("q"));
    assert_eq!(b.purge("q", &[p[0].peek_ref.clone()], 1).purged, 1);
    assert!(b.has_queue("q"), "one message left");
    b.pull("q", 1, 10, 1);
    let r = b.ack("q", &leases(&d), &[], 2);
    assert_eq!(r.ack_count, 0, "the leased message was purged");
    assert!(b.has_queue("q"), "the second message is in flight");
    for now in [11, 21, 31] {
        b.pull("q", 1, 10, now);
    }
    assert_eq!(b.metrics("q", 41), QueueStats::default());
    assert_eq!(b.dead_lettered("q"), 1);
    assert!(b.has_queue("q"), "its dead-letter count is still readable");
    b.check_invariants();
}

#[test]
fn accounts_do_not_share_queues() {
    let mut b = broker();
    let mine = At {
        account: "a1",
        queue: "q",
    };
    let theirs = At {
        account: "a2",
        queue: "q",
    };
    b.push(mine, vec![text("mine")], 0);
    assert_eq!(b.metrics(theirs, 0), QueueStats::default());
    assert!(b.pull(theirs, 10, VIS, 0).0.is_empty());
    assert!(b.peek(theirs, 10, 0).is_empty());
    let (d, _) = b.pull(mine, 10, VIS, 0);
    assert_eq!(bodies(&d), ["mine"]);
    let r = b.ack(theirs, &leases(&d), &[], 1);
    assert_eq!(
        (r.ack_count, r.warnings.len()),
        (0, 1),
        "a lease is no key to another account"
    );
    assert_eq!(b.ack(mine, &leases(&d), &[], 1).ack_count, 1);
    assert!(b.accounts.is_empty());
}

#[test]
fn late_ack_of_an_expired_lease_deletes_the_redelivered_message() {
    let mut b = broker();
    b.push("q", vec![text("a"), text("b")], 0);
    let (d, _) = b.pull("q", 1, 100, 0);
    assert_eq!(bodies(&d), ["a"]);
    let old_lease = d[0].lease_id.clone();
    // Still leased just before expiry.
    let (d2, _) = b.pull("q", 10, 100, 99);
    assert_eq!(bodies(&d2), ["b"]);
    // At expiry the message is visible again, ordered by its expiry time.
    let (d3, m) = b.pull("q", 10, 100, 100);
    assert_eq!(bodies(&d3), ["a"]);
    assert_eq!(d3[0].attempts, 2);
    assert_eq!(d3[0].id, d[0].id);
    assert_ne!(d3[0].lease_id, old_lease);
    assert_eq!(m, metrics(2, 2, 0));
    // The first consumer's late ack is accepted, though another holds it now.
    let r = b.ack("q", std::slice::from_ref(&old_lease), &[], 101);
    assert_eq!((r.ack_count, r.warnings.len()), (1, 0));
    assert_eq!(b.metrics("q", 101), metrics(1, 1, 0));
    // The second consumer's ack finds nothing to delete: a warning.
    let r = b.ack("q", &leases(&d3), &[], 101);
    assert_eq!(r.ack_count, 0);
    assert_eq!(
        r.warnings.get(&d3[0].lease_id).map(String::as_str),
        Some(LEASE_UNKNOWN)
    );
    b.check_invariants();
}

#[test]
fn late_retry_applies_only_while_no_one_else_holds_the_message() {
    let (mut b, first) = leased_one(100);
    let (second, _) = b.pull("q", 1, 100, 100);
    assert_eq!(second[0].attempts, 2);
    // Leased to the second consumer: the first one's retry is refused.
    let r = b.ack("q", &[], &[(first[0].lease_id.clone(), 0)], 150);
    assert_eq!(r.retry_count, 0);
    assert_eq!(
        r.warnings.get(&first[0].lease_id).map(String::as_str),
        Some(LEASED_ELSEWHERE)
    );
    assert!(b.pull("q", 1, 100, 150).0.is_empty(), "still held");
    // Once the second lease has expired too, the late retry applies.
    let r = b.ack("q", &[], &[(first[0].lease_id.clone(), 1_000)], 200);
    assert_eq!((r.retry_count, r.warnings.len()), (1, 0));
    assert!(
        b.pull("q", 1, 100, 1_199).0.is_empty(),
        "delayed by the retry"
    );
    let (third, _) = b.pull("q", 1, 100, 1_200);
    assert_eq!(third[0].attempts, 3);
    // Every lease ever issued for it acks it; afterwards none does.
    let r = b.ack("q", &leases(&second), &[], 1_201);
    assert_eq!(r.ack_count, 1);
    let r = b.ack(
        "q",
        &[first[0].lease_id.clone(), third[0].lease_id.clone()],
        &[],
        1_202,
    );
    assert_eq!((r.ack_count, r.warnings.len()), (0, 2));
    assert!(
        !b.has_queue("q"),
        "deleting the message freed its lease ids"
    );
}

#[test]
fn a_message_retried_by_two_of_its_leases_counts_once() {
    let (mut b, first) = leased_one(100);
    let (second, _) = b.pull("q", 1, 100, 100);
    // The live lease retries it; its stale first lease, in the same call,
    // finds it free again but must not retry (and count) it a second time.
    let r = b.ack(
        "q",
        &[],
        &[
            (second[0].lease_id.clone(), 0),
            (first[0].lease_id.clone(), 500),
        ],
        150,
    );
    assert_eq!(r.retry_count, 1);
    assert_eq!(
        r.warnings.get(&first[0].lease_id).map(String::as_str),
        Some(MESSAGE_ALREADY_RETRIED)
    );
    let (third, _) = b.pull("q", 1, 100, 150);
    assert_eq!(
        third.len(),
        1,
        "visible at once: the stale lease's delay was not applied"
    );
    b.check_invariants();
}

#[test]
fn expired_refs_are_swept_from_queues_no_one_touches() {
    let mut b = broker();
    b.push("idle", vec![text("a"), text("b")], 0);
    b.peek("idle", 2, 0);
    b.peek("idle", 2, 10);
    assert_eq!(b.queue("idle").refs.len(), 4);
    // Operations on another queue, or another account, do the sweeping.
    let elsewhere = At {
        account: "other",
        queue: "busy",
    };
    b.metrics(elsewhere, PEEK_REF_TTL_MS - 1);
    assert_eq!(b.queue("idle").refs.len(), 4);
    b.metrics(elsewhere, PEEK_REF_TTL_MS);
    assert_eq!(
        b.queue("idle").refs.len(),
        2,
        "the first peek's refs expired"
    );
    b.check_invariants();
    b.metrics(elsewhere, PEEK_REF_TTL_MS + 10);
    assert!(b.queue("idle").refs.is_empty());
    assert!(b.sweeps.is_empty());
    assert_eq!(b.metrics("idle", PEEK_REF_TTL_MS + 10).backlog_count, 2);
    b.check_invariants();
}

#[test]
fn lease_ids_and_refs_are_the_random_sources_bytes() {
    let run = |seed| {
        let mut b = Broker::new(BrokerConfig::default(), RandomSource::seeded(seed));
        b.push("q", vec![text("a"), text("b")], 0);
        let p = b.peek("q", 1, 0);
        let (d, _) = b.pull("q", 2, VIS, 0);
        (d[0].id.clone(), leases(&d), p[0].peek_ref.clone())
    };
    assert_eq!(run(1), run(1));
    let (id1, l1, r1) = run(1);
    let (id2, l2, r2) = run(2);
    assert_ne!(id1, id2);
    assert_ne!(l1, l2);
    assert_ne!(r1, r2);
    // Consecutive tokens share nothing: a counter through a fixed
    // transformation would keep most bits of the difference constant.
    let mut b = broker();
    b.push("q", (0..1_000).map(|i| text(&i.to_string())).collect(), 0);
    let (d, _) = b.pull("q", 1_000, VIS, 0);
    let values: Vec<u128> = d
        .iter()
        .filter_map(|d| tokens::parse_token(&d.lease_id))
        .collect();
    assert_eq!(values.len(), 1_000);
    for bit in 0..128 {
        let ones = values.iter().filter(|v| (*v >> bit) & 1 == 1).count();
        assert!(
            (400..=600).contains(&ones),
            "bit {bit} set {ones} times in 1000"
        );
    }
}

#[test]
fn idle_queues_that_sprang_into_being_are_forgotten_past_the_bound() {
    let mut b = broker();
    b.open_for_messages("kept", 0).expect("springs");
    b.push("kept", vec![text("m")], 0);
    b.open_for_messages("changed", 0).expect("springs");
    b.update_queue("changed", None, SettingsChange::default(), false, 0)
        .expect("a management call");
    for i in 0..crate::state::management::resources::MAX_PRISTINE_LAX {
        b.open_for_messages(format!("idle{i}").as_str(), 0)
            .expect("springs");
    }
    // Past the bound: the idle, never-changed ones are forgotten at once.
    assert!(b.get_queue("idle0").is_err(), "forgotten");
    assert!(b.get_queue("kept").is_ok(), "it holds a message");
    assert!(
        b.get_queue("changed").is_ok(),
        "a management call changed it"
    );
    let newest = format!(
        "idle{}",
        crate::state::management::resources::MAX_PRISTINE_LAX - 1
    );
    assert!(b.get_queue(newest.as_str()).is_ok(), "the one just sprung");
    assert!(b.registry.pristine <= 2);
    // A forgotten id springs back anew; a deleted one never does.
    b.open_for_messages("idle0", 1).expect("springs again");
    assert_eq!(b.get_queue("idle0").map(|q| q.created_ms), Ok(1));
    b.delete_queue("idle0").expect("deleted");
    assert_eq!(
        b.open_for_messages("idle0", 2),
        Err(AccountError::QueueNotFound)
    );
}

#[test]
fn requests_to_ever_new_accounts_leave_a_registry_of_bounded_size() {
    use crate::state::management::resources::MAX_PRISTINE_LAX;
    for tracking in [false, true] {
        let mut b = broker();
        if tracking {
            b.track_changes();
        }
        for i in 0..100_000u64 {
            let account = format!("{i:032x}");
            // What a messages request and a management read of an unknown
            // account do: the queue springs into being, the pull finds
            // nothing, the list finds the queue.
            let at = At {
                account: &account,
                queue: "q",
            };
            b.open_for_messages(at, i).expect("springs");
            let (pulled, _) = b.pull(at, 10, 30_000, i);
            assert!(pulled.is_empty());
            b.list_queues(&account, None, 1, 20);
            if tracking {
                // The journal of one request is the request's, not a walk.
                let journal = b.take_journal();
                assert!(journal.changes.len() <= MAX_PRISTINE_LAX + 1, "{i}");
            }
            assert!(
                b.registry.accounts.len() <= MAX_PRISTINE_LAX + 1,
                "{i}: {} accounts",
                b.registry.accounts.len()
            );
        }
        assert!(b.accounts.is_empty(), "no queue state: nothing is held");
        assert!(b.registry.dirty.is_empty(), "nothing left to journal");
        assert!(b.registry.pristine <= MAX_PRISTINE_LAX + 1);
    }
}
