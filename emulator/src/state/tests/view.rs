//! The dashboard's read-only views, and the counts of watched queues.

use super::*;
use crate::state::view::{Counts, SortBy, Standing};

#[test]
fn the_account_page_filters_sorts_and_builds_only_its_rows() {
    let mut b = broker();
    let mut ids = Vec::new();
    for i in 0..250 {
        let record = b
            .create_queue(ACCOUNT, &format!("q{i:03}"), SettingsChange::default(), 0)
            .expect("created");
        ids.push(record.id);
    }
    let at = |i: usize| At {
        account: ACCOUNT,
        queue: &ids[i],
    };
    b.push(at(150), vec![text("a"), text("b")], 0);
    b.push(at(20), vec![delayed("c", 60_000)], 0);
    let (rows, total) = b.queue_page(ACCOUNT, 1_000, "Q1", SortBy::Available, true, 0, 100);
    assert_eq!(total, 100, "q100 to q199, case ignored");
    assert_eq!(rows.len(), 100);
    assert_eq!(
        (
            rows[0].name.as_str(),
            rows[0].available,
            rows[0].delayed,
            rows[0].backlog_bytes
        ),
        ("q150", 2, 0, 2)
    );
    let (rows, _) = b.queue_page(ACCOUNT, 1_000, "", SortBy::Delayed, true, 0, 1);
    assert_eq!(
        (rows[0].name.as_str(), rows[0].delayed, rows[0].available),
        ("q020", 1, 0)
    );
    let (rows, total) = b.queue_page(ACCOUNT, 1_000, "", SortBy::Name, false, 200, 100);
    assert_eq!(
        (total, rows.len(), rows[0].name.as_str()),
        (250, 50, "q200")
    );
    let (rows, total) = b.queue_page(ACCOUNT, 1_000, "nothing", SortBy::Name, false, 0, 100);
    assert_eq!((total, rows.len()), (0, 0));
    // The index of names follows a queue created and one deleted.
    b.create_queue(ACCOUNT, "nothing-else", SettingsChange::default(), 0)
        .expect("created");
    b.delete_queue(at(0)).expect("deleted");
    let (rows, total) = b.queue_page(ACCOUNT, 1_000, "nothing", SortBy::Name, false, 0, 100);
    assert_eq!((total, rows[0].name.as_str()), (1, "nothing-else"));
    let (_, total) = b.queue_page(ACCOUNT, 1_000, "q000", SortBy::Name, false, 0, 100);
    assert_eq!(total, 0, "deleted");
}

#[test]
fn messages_are_listed_without_leasing_and_watched_counts_add_up() {
    let mut b = broker();
    b.push("q", vec![text("a"), delayed("b", 5_000)], 0);
    let (leased, _) = b.pull("q", 1, 10_000, 0);
    let (count, rows) = b.message_rows("q".into(), 1_000, 0, 10);
    assert_eq!(count, 2);
    let standings: Vec<Standing> = rows.iter().map(|r| r.standing).collect();
    assert_eq!(
        standings,
        [Standing::Leased(10_000), Standing::Delayed(5_000)]
    );
    assert_eq!((rows[0].attempts, rows[1].attempts), (1, 0));
    assert_eq!(&*rows[0].body, b"a");
    // Listing changed nothing: the lease and the attempts stand.
    let (_, again) = b.message_rows("q".into(), 1_000, 0, 10);
    assert_eq!(again[0].attempts, 1);
    // Past its lease, a message reads as available.
    let (_, later) = b.message_rows("q".into(), 20_000, 0, 10);
    assert_eq!(later[0].standing, Standing::Available);

    assert_eq!(b.watch("q".into()), (Counts::default(), 0));
    b.push("q", vec![text("c")], 2_000);
    b.ack("q", &[leased[0].lease_id.clone()], &[], 2_000);
    let (counts, _) = b.watch("q".into());
    assert_eq!((counts.pushed, counts.acked, counts.pulled), (1, 1, 0));
    b.unwatch("q".into());
    b.push("q", vec![text("d")], 3_000);
    let (counts, _) = b.watch("q".into());
    assert_eq!(counts.pushed, 0, "nothing is counted while no one watches");
}

#[test]
fn by_hand_messages_are_deleted_retried_and_moved_once() {
    let mut b = broker();
    b.push("dlq", vec![text("a"), text("b"), text("c")], 0);
    let (_, rows) = b.message_rows("dlq".into(), 0, 0, 10);
    let seqs: Vec<u64> = rows.iter().map(|r| r.seq).collect();
    // A lease taken, then ended by hand: visible after its delay, no attempt used.
    let (leased, _) = b.pull("dlq", 1, 60_000, 0);
    assert_eq!(b.retry_by_hand("dlq".into(), &seqs[..1], 5_000, 1_000), 1);
    let (_, rows) = b.message_rows("dlq".into(), 1_000, 0, 10);
    assert_eq!(rows[0].standing, Standing::Delayed(6_000));
    let report = b.ack("dlq", &[leased[0].lease_id.clone()], &[], 1_000);
    assert_eq!(
        report.ack_count, 1,
        "a late ack still deletes it, as Cloudflare's do"
    );
    assert_eq!(b.delete_by_hand("dlq".into(), &[seqs[1], 999], 1_000), 1);
    // What is left moves whole: none lost, none doubled, each new and visible.
    assert_eq!(b.move_by_hand(ACCOUNT, "dlq", "work", None, 2_000), 1);
    assert_eq!(b.move_by_hand(ACCOUNT, "dlq", "work", None, 2_000), 0);
    let (count, rows) = b.message_rows("work".into(), 2_000, 0, 10);
    assert_eq!(count, 1);
    assert_eq!((&*rows[0].body, rows[0].attempts), (&b"c"[..], 0));
    assert_eq!(rows[0].standing, Standing::Available);
    assert_eq!(b.message_rows("dlq".into(), 2_000, 0, 10).0, 0);
}
