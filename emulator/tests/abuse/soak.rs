//! 4 producers and 4 consumers over one emulated queue: 20,000 messages,
//! random handler failures, ignored messages whose leases expire, and poison
//! messages that end in the dead-letter queue. Nothing may be lost, and no
//! message may be acknowledged twice.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cf_queues::batch::Batch;
use cf_queues::{Acks, Message, PullOptions};
use cf_queues_emulator::{Emulator, ManualClock};
use cf_queues_testkit::rng::Rng;

const PRODUCERS: u64 = 4;
const CONSUMERS: u64 = 4;
const PER_PRODUCER: u64 = 5_000;

fn is_poison(id: &str) -> bool {
    id.ends_with("37")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn producers_and_consumers_lose_nothing_and_ack_once() {
    let clock = ManualClock::new(1_700_000_000_000);
    let emulator = Arc::new(
        Emulator::new()
            .clock(clock.clone())
            .max_retries(4)
            .dead_letter_queue("soak", "soakdlq")
            .start()
            .await
            .expect("emulator starts"),
    );
    let client = emulator.client().expect("client");
    let queue = client.queue("soak").expect("id");

    // Time moves on its own, so leases of ignored messages expire.
    let done = Arc::new(AtomicBool::new(false));
    let ticker = {
        let (clock, done) = (clock.clone(), Arc::clone(&done));
        tokio::spawn(async move {
            while !done.load(Ordering::Relaxed) {
                clock.advance(Duration::from_millis(500));
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };

    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let queue = queue.clone();
            tokio::spawn(async move {
                let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15 ^ (p + 1));
                let mut next = 0;
                while next < PER_PRODUCER {
                    let size = (rng.below(100) + 1).min(PER_PRODUCER - next);
                    let batch = Batch::new(
                        (next..next + size).map(|i| Message::text(format!("p{p}-{i:05}"))),
                    );
                    queue.push_batch(batch).await.expect("push succeeds");
                    next += size;
                }
            })
        })
        .collect();

    let producing = Arc::new(AtomicBool::new(true));
    let acked: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|c| {
            let (queue, emulator) = (queue.clone(), Arc::clone(&emulator));
            let (producing, acked) = (Arc::clone(&producing), Arc::clone(&acked));
            tokio::spawn(async move {
                let mut rng = Rng::new(0xD1B5_4A32_D192_ED03 ^ (c + 1));
                loop {
                    let options = PullOptions::new()
                        .batch_size(rng.below(100) as u32 + 1)
                        .visibility_timeout(Duration::from_secs(30));
                    let batch = queue.pull(options).await.expect("pull succeeds");
                    if batch.messages.is_empty() {
                        if !producing.load(Ordering::Relaxed)
                            && emulator.metrics("soak").backlog_count == 0
                        {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        continue;
                    }
                    let mut acks = Acks::new();
                    let mut sent = HashMap::new();
                    for message in &batch.messages {
                        let id = message.body().text().expect("text body").to_owned();
                        match rng.below(100) {
                            _ if is_poison(&id) => acks = acks.retry(message),
                            0..=7 => acks = acks.retry(message),
                            8..=11 => {} // the handler hangs: the lease expires
                            _ => {
                                sent.insert(message.lease_id.as_str().to_owned(), id);
                                acks = acks.ack(message);
                            }
                        }
                    }
                    let outcome = queue.ack(acks).await.expect("ack succeeds");
                    let warned: HashSet<_> = outcome
                        .warnings
                        .iter()
                        .filter_map(|w| w.subject.clone())
                        .collect();
                    let mut acked = acked.lock().expect("not poisoned");
                    let mut counted = 0;
                    for (lease, id) in sent {
                        if !warned.contains(&lease) {
                            *acked.entry(id).or_default() += 1;
                            counted += 1;
                        }
                    }
                    assert!(
                        Some(counted) <= outcome.acked,
                        "more acks recorded than the server counted"
                    );
                }
            })
        })
        .collect();

    for producer in producers {
        producer.await.expect("producer task");
    }
    producing.store(false, Ordering::Relaxed);
    for consumer in consumers {
        consumer.await.expect("consumer task");
    }

    // Stop the clock, so no lease can expire while the dead-letter queue drains.
    done.store(true, Ordering::Relaxed);
    ticker.await.expect("ticker");

    // Drain the dead-letter queue.
    let dlq = client.queue("soakdlq").expect("id");
    let mut dead = Vec::new();
    loop {
        let batch = dlq
            .pull(PullOptions::new().batch_size(100))
            .await
            .expect("pull dlq");
        if batch.messages.is_empty() {
            break;
        }
        let acks = batch
            .messages
            .iter()
            .fold(Acks::new(), |acks, m| acks.ack(m));
        for m in &batch.messages {
            dead.push(m.body().text().expect("text").to_owned());
        }
        dlq.ack(acks).await.expect("ack dlq");
    }

    let acked = acked.lock().expect("not poisoned");
    let twice: Vec<_> = acked.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "acknowledged more than once: {twice:?}");
    let dead_set: HashSet<_> = dead.iter().cloned().collect();
    assert_eq!(
        dead_set.len(),
        dead.len(),
        "a message was dead-lettered twice"
    );
    assert!(
        dead_set.iter().all(|id| !acked.contains_key(id)),
        "a message was both acked and dead-lettered"
    );
    let total = acked.len() + dead_set.len();
    assert_eq!(total as u64, PRODUCERS * PER_PRODUCER, "messages lost");
    let poison = (0..PRODUCERS)
        .flat_map(|p| (0..PER_PRODUCER).map(move |i| format!("p{p}-{i:05}")))
        .filter(|id| is_poison(id))
        .count();
    assert!(
        dead_set.len() >= poison,
        "every poison message ends in the dead-letter queue"
    );
    assert_eq!(emulator.dead_lettered("soak"), dead_set.len() as u64);
    for name in ["soak", "soakdlq"] {
        let m = emulator.metrics(name);
        assert_eq!(
            (
                m.backlog_count,
                m.backlog_bytes,
                m.oldest_message_timestamp_ms
            ),
            (0, 0, 0),
            "{name}"
        );
    }
}
