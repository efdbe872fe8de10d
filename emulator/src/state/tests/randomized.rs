//! A long randomized interleaving of every operation, checking the indexes
//! and that every message is accounted for: pushed ones are acked, purged
//! (by ref, by preview id or with the whole queue), dead-lettered, or still
//! there.

use std::collections::{HashMap, HashSet};

use super::*;

/// xorshift64*: enough randomness to interleave operations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Default)]
struct Tally {
    pushed: u64,
    acked: u64,
    purged: u64,
    extended: u64,
    previewed_deleted: u64,
    purged_whole: u64,
}

#[test]
fn randomized_operations_keep_invariants() {
    let mut dead_letter_queues = HashMap::new();
    dead_letter_queues.insert("a".to_owned(), "d".to_owned());
    let mut b = new_broker(BrokerConfig {
        max_retries: 3,
        dead_letter_queues,
        ..BrokerConfig::default()
    });
    let names = ["a", "b", "d"];
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut now = 1_000u64;
    let mut tally: HashMap<&str, Tally> = names.iter().map(|n| (*n, Tally::default())).collect();
    // Lease id -> (queue, expiry); kept even after use, to replay stale ids.
    let mut issued: Vec<(String, &str, u64)> = Vec::new();
    // Message id -> (lease id, expiry) of its latest live delivery.
    let mut live: HashMap<String, (String, u64)> = HashMap::new();
    let mut refs: Vec<(String, &str)> = Vec::new();
    let mut previews: Vec<(String, &str)> = Vec::new();
    let mut seen_ids = HashSet::new();
    let mut used_leases: HashSet<String> = HashSet::new();
    // Lease id -> message id, to follow extensions.
    let mut lease_message: HashMap<String, String> = HashMap::new();
    // Extensions that took an expired lease's message back.
    let mut retaken = 0u32;

    for step in 0..24_000u32 {
        let queue = names[rng.below(3) as usize];
        match rng.below(14) {
            0..=2 => {
                let n = rng.below(20);
                let msgs = (0..n)
                    .map(|i| NewMessage {
                        kind: if i % 2 == 0 {
                            BodyKind::Text
                        } else {
                            BodyKind::Json
                        },
                        body: vec![b'x'; rng.below(50) as usize],
                        delay_ms: if rng.below(4) == 0 { rng.below(500) } else { 0 },
                    })
                    .collect();
                b.push(queue, msgs, now);
                if let Some(t) = tally.get_mut(queue) {
                    t.pushed += n;
                }
            }
            3..=4 => {
                let batch = rng.below(30) as usize;
                let vis = rng.below(400);
                let (d, _) = b.pull(queue, batch, vis, now);
                for delivery in d {
                    assert!(delivery.attempts >= 1);
                    seen_ids.insert(delivery.id.clone());
                    if let Some((old, expiry)) = live.get(&delivery.id) {
                        assert!(
                            *expiry <= now || used_leases.contains(old),
                            "message {} leased twice",
                            delivery.id
                        );
                    }
                    let expiry = now.saturating_add(vis);
                    live.insert(delivery.id.clone(), (delivery.lease_id.clone(), expiry));
                    lease_message.insert(delivery.lease_id.clone(), delivery.id.clone());
                    issued.push((delivery.lease_id, queue, expiry));
                }
            }
            5..=6 => {
                let mut acks = Vec::new();
                let mut retries = Vec::new();
                for _ in 0..rng.below(20) {
                    if issued.is_empty() {
                        break;
                    }
                    let (lease, q, _) = &issued[rng.below(issued.len() as u64) as usize];
                    if *q != queue && rng.below(4) != 0 {
                        continue;
                    }
                    if rng.below(3) == 0 {
                        retries.push((lease.clone(), rng.below(300)));
                    } else {
                        acks.push(lease.clone());
                    }
                }
                let r = b.ack(queue, &acks, &retries, now);
                // A lease repeated in one call succeeds once and warns after.
                let succeeded: HashSet<&String> = acks
                    .iter()
                    .chain(retries.iter().map(|(l, _)| l))
                    .filter(|l| r.warnings.get(*l).is_none_or(|w| w == LEASE_DUPLICATE))
                    .collect();
                let counted = u64::from(r.ack_count) + u64::from(r.retry_count);
                assert_eq!(succeeded.len() as u64, counted);
                used_leases.extend(succeeded.into_iter().cloned());
                if let Some(t) = tally.get_mut(queue) {
                    t.acked += u64::from(r.ack_count);
                }
            }
            7 => {
                let p = b.peek(queue, rng.below(10) as usize, now);
                for item in p {
                    refs.push((item.peek_ref, queue));
                }
            }
            8 => {
                let mut chosen = Vec::new();
                for _ in 0..rng.below(5) {
                    if refs.is_empty() {
                        break;
                    }
                    let (r, q) = &refs[rng.below(refs.len() as u64) as usize];
                    if *q == queue || rng.below(4) == 0 {
                        chosen.push(r.clone());
                    }
                }
                let r = b.purge(queue, &chosen, now);
                if let Some(t) = tally.get_mut(queue) {
                    t.purged += u64::from(r.purged);
                }
            }
            9 => {
                let chosen = pick(&mut rng, &issued, |(l, q, _)| (l, q), queue, 10);
                let vis = 1 + rng.below(400);
                let r = b.extend(queue, &chosen, vis, now);
                let distinct: HashSet<&String> = chosen.iter().collect();
                assert_eq!(
                    u64::from(r.extended) + r.warnings.len() as u64,
                    distinct.len() as u64
                );
                for lease in distinct {
                    if r.warnings.contains_key(lease) {
                        continue;
                    }
                    // Extended: leased to this very lease id, from now.
                    let expiry = now + vis;
                    assert_eq!(b.lease_expiry(queue, lease), Some(expiry));
                    if let Some(id) = lease_message.get(lease) {
                        let previous = live.insert(id.clone(), (lease.clone(), expiry));
                        if previous.is_some_and(|(_, old)| old <= now) {
                            retaken += 1;
                        }
                    }
                }
                if let Some(t) = tally.get_mut(queue) {
                    t.extended += u64::from(r.extended);
                }
            }
            10 => {
                for item in b.preview(queue, rng.below(10) as usize, now) {
                    assert!(item.attempts < 3, "a visible message has attempts left");
                    previews.push((item.lease_id, queue));
                }
            }
            11 => {
                let acks = pick(&mut rng, &previews, |(p, q)| (p, q), queue, 5);
                let retries: Vec<(String, u64)> =
                    pick(&mut rng, &previews, |(p, q)| (p, q), queue, 3)
                        .into_iter()
                        .map(|id| (id, rng.below(300)))
                        .collect();
                let before = b.metrics(queue, now).backlog_count;
                let r = b.delete_previewed(queue, &acks, &retries, now);
                let after = b.metrics(queue, now).backlog_count;
                assert_eq!(before - after, u64::from(r.deleted), "deleted at once");
                if let Some(t) = tally.get_mut(queue) {
                    t.previewed_deleted += u64::from(r.deleted);
                }
            }
            12 if rng.below(40) == 0 => {
                let r = b.purge_all(queue, now);
                assert_eq!(b.metrics(queue, now), QueueStats::default());
                assert_eq!(b.purge_status(queue, now), Some(now));
                if let Some(t) = tally.get_mut(queue) {
                    t.purged_whole += r.purged;
                }
            }
            _ => {
                now += rng.below(200);
            }
        }
        if issued.len() > 5_000 {
            issued.drain(..2_500);
        }
        if refs.len() > 5_000 {
            refs.drain(..2_500);
        }
        if previews.len() > 5_000 {
            previews.drain(..2_500);
        }
        if step % 500 == 0 {
            b.check_invariants();
            check_conservation(&mut b, &tally, now);
        }
    }
    now += 10_000;
    check_conservation(&mut b, &tally, now);
    b.check_invariants();
    // Drain all and confirm everything is accounted for.
    for name in names {
        loop {
            let (d, _) = b.pull(name, 100, 1_000, now);
            if d.is_empty() {
                break;
            }
            let r = b.ack(name, &leases(&d), &[], now);
            if let Some(t) = tally.get_mut(name) {
                t.acked += u64::from(r.ack_count);
            }
        }
        now += 600;
    }
    check_conservation(&mut b, &tally, now);
    // The run must actually have exercised every outcome.
    assert!(names.iter().all(|n| {
        let t = &tally[n];
        t.acked > 0
            && t.purged > 0
            && t.extended > 0
            && t.previewed_deleted > 0
            && t.purged_whole > 0
    }));
    assert!(b.dead_lettered("a") > 0 && b.dead_lettered("b") > 0);
    assert!(
        retaken > 0,
        "no extension took an expired lease's message back"
    );
    for name in names {
        let delayed_left = b.metrics(name, u64::MAX).backlog_count;
        assert_eq!(delayed_left, 0, "{name}");
    }
    b.check_invariants();
}

/// Up to `most` tokens of `pool` (token and queue), mostly of `queue`, a
/// few of others.
fn pick<'p, T: 'p>(
    rng: &mut Rng,
    pool: &'p [T],
    of: impl Fn(&'p T) -> (&'p String, &'p str),
    queue: &str,
    most: u64,
) -> Vec<String> {
    let mut chosen = Vec::new();
    for _ in 0..rng.below(most) {
        if pool.is_empty() {
            break;
        }
        let (token, q) = of(&pool[rng.below(pool.len() as u64) as usize]);
        if q == queue || rng.below(4) == 0 {
            chosen.push(token.clone());
        }
    }
    chosen
}

/// Every message pushed into a queue (by a client, or moved in as a dead
/// letter) is acked, purged, dead-lettered, or still there.
fn check_conservation(b: &mut Broker, tally: &HashMap<&str, Tally>, now: u64) {
    let ma = b.metrics("a", now);
    let mb = b.metrics("b", now);
    let md = b.metrics("d", now);
    for (name, m, moved_in) in [("a", ma, 0), ("b", mb, 0), ("d", md, b.dead_lettered("a"))] {
        let t = &tally[name];
        let gone = t.acked + t.purged + t.previewed_deleted + t.purged_whole;
        assert_eq!(
            t.pushed + moved_in,
            gone + b.dead_lettered(name) + m.backlog_count,
            "{name}"
        );
    }
}
