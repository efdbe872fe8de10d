//! The journal against the state it describes: a randomized run on a
//! tracking broker, each journal applied to a model of the store; the
//! model must hold exactly the broker's messages, with their attempts,
//! and load back into a broker with the same backlog.

use std::collections::BTreeMap;

use super::super::journal::{decode, encode};
use super::*;

/// Key -> (header, body), as the store's two tables hold them.
type Rows = BTreeMap<(String, String, u64), (Vec<u8>, Vec<u8>)>;

fn apply(rows: &mut Rows, journal: Journal) {
    for change in journal.changes {
        match change {
            Change::Message {
                account,
                queue,
                seq,
                record,
            } => {
                let key = (account, queue, seq);
                let Some(row) = record else {
                    rows.remove(&key);
                    continue;
                };
                let body = match row.body {
                    Some(body) => body.to_vec(),
                    None => rows.get(&key).map(|r| r.1.clone()).unwrap_or_default(),
                };
                rows.insert(key, (row.header, body));
            }
            Change::Clear { account, queue } => {
                rows.retain(|(a, q, _), _| *a != account || *q != queue);
            }
            _ => {}
        }
    }
}

/// (account, queue, seq) -> (body, attempts) of a broker's messages.
fn live(broker: &Broker) -> BTreeMap<(String, String, u64), (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    for (account, queues) in broker.accounts.iter() {
        for (queue, q) in queues {
            for (seq, stored) in q.messages.iter() {
                let (back, _) = decode(&encode(stored), &stored.body).expect("row decodes");
                out.insert(
                    (account.clone(), queue.clone(), *seq),
                    (back.body.to_vec(), back.attempts),
                );
            }
        }
    }
    out
}

fn model(rows: &Rows) -> BTreeMap<(String, String, u64), (Vec<u8>, u32)> {
    rows.iter()
        .map(|(key, (header, body))| {
            let (stored, _) = decode(header, body).expect("row decodes");
            (key.clone(), (stored.body.to_vec(), stored.attempts))
        })
        .collect()
}

#[test]
fn every_change_of_a_random_run_reaches_the_journal_and_loads_back() {
    let mut broker = broker_with_dlq(2);
    broker.track_changes();
    let mut rows = Rows::new();
    let mut random = RandomSource::seeded(11);
    let mut now = 1_000_000u64;
    let mut held: Vec<String> = Vec::new();
    for step in 0..3_000u32 {
        let roll = random.u64() % 100;
        let queue = if random.u64().is_multiple_of(4) {
            "dlq"
        } else {
            "q"
        };
        match roll {
            0..=29 => {
                let n = 1 + random.u64() % 4;
                let messages = (0..n)
                    .map(|i| delayed(&format!("{step}-{i}"), i * 500))
                    .collect();
                broker.push(queue, messages, now);
            }
            30..=54 => {
                let (got, _) = broker.pull(queue, 1 + (random.u64() % 5) as usize, 2_000, now);
                held.extend(leases(&got));
            }
            55..=69 if !held.is_empty() => {
                let lease = held.swap_remove((random.u64() as usize) % held.len());
                broker.ack(queue, &[lease], &[], now);
            }
            70..=79 if !held.is_empty() => {
                let lease = held.swap_remove((random.u64() as usize) % held.len());
                broker.ack(queue, &[], &[(lease, 300)], now);
            }
            80 => {
                broker.purge_all(queue, now);
            }
            81..=84 => {
                let peeked = broker.peek(queue, 3, now);
                let refs: Vec<String> = peeked.into_iter().map(|p| p.peek_ref).collect();
                broker.purge(queue, &refs, now);
            }
            _ => now += random.u64() % 3_000,
        }
        apply(&mut rows, broker.take_journal());
        assert_eq!(model(&rows), live(&broker), "step {step}");
    }
    let mut loaded = broker_with_dlq(2);
    for ((account, queue, seq), (header, body)) in &rows {
        loaded
            .restore_message(account, queue, *seq, (header, body), now)
            .expect("row loads");
    }
    loaded.finish_restore();
    for queue in ["q", "dlq"] {
        let (a, b) = (broker.metrics(queue, now), loaded.metrics(queue, now));
        assert_eq!(a.backlog_count, b.backlog_count, "{queue}");
        assert_eq!(a.backlog_bytes, b.backlog_bytes, "{queue}");
    }
}
