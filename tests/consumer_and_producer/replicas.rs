//! Replicas of a consumer sharing the queue's allowance, each with a client
//! of its own as separate processes would have, against the emulator with
//! a 100 ms round trip and Cloudflare's per-queue limit, on tokio's paused
//! clock. Scaled down tenfold so that a minute of it runs in seconds: the
//! queue serves 500 messages a second (with 500 of burst), each replica
//! may take 490 and pulls 10 at a time; the shares adapt in proportion to
//! the allowance, so the dynamics are those of 5,000 and 100.

use std::time::Duration;

use cf_queues::consumer::CancellationToken;
use cf_queues::consumer::{Consumer, ConsumerMonitor, Summary};
use cf_queues::retry::RetryPolicy;
use cf_queues::{Acks, PullOptions, Queue};
use cf_queues_emulator::{EmulatorHandle, Fault, Latency, Operation, RateLimitModel, WorkerBody};
use cf_queues_testkit::emulators::{emulator_on_tokio_clock, push_meanwhile};
use cf_queues_testkit::wait::eventually;
use tokio::task::JoinHandle;

const QUEUE: &str = "shared";
/// The queue's limit in this scale: messages pulled (and leases settled) a second.
const LIMIT: u32 = 500;
const ALLOWANCE: u32 = 490;
const BATCH: u32 = 10;
const SECOND: Duration = Duration::from_secs(1);
/// How far paused time moves while a test waits for something.
const STEP: Duration = Duration::from_millis(10);

/// An emulator on the paused clock, 100 ms away, with Cloudflare's limits
/// but for a per-queue limit of [`LIMIT`], and `messages` on [`QUEUE`].
async fn limited_queue(messages: usize) -> EmulatorHandle {
    let emulator = emulator_on_tokio_clock(1_700_000_000_000, |e| {
        e.rate_limits(RateLimitModel::cloudflare().per_queue(LIMIT, LIMIT))
    })
    .await;
    for i in 0..messages {
        emulator.push_from_worker(QUEUE, WorkerBody::Bytes(i.to_be_bytes().to_vec()));
    }
    emulator.set_latency(Some(Latency::round_trip(Duration::from_millis(100))));
    emulator
}

/// A queue handle on a client of its own: another process.
fn own_queue(emulator: &EmulatorHandle) -> Queue {
    emulator
        .client()
        .expect("client")
        .queue(QUEUE)
        .expect("queue id")
}

/// Two replicas started together on a queue of 40,000 messages.
async fn two_replicas() -> (EmulatorHandle, Replica, Replica) {
    let emulator = limited_queue(40_000).await;
    let (a, b) = (Replica::start(&emulator), Replica::start(&emulator));
    (emulator, a, b)
}

/// One replica: its consumer running, its monitor, and how to stop it.
struct Replica {
    monitor: ConsumerMonitor,
    stop: CancellationToken,
    run: JoinHandle<Summary>,
}

impl Replica {
    fn start(emulator: &EmulatorHandle) -> Replica {
        Replica::with_allowance(emulator, ALLOWANCE)
    }

    fn with_allowance(emulator: &EmulatorHandle, allowance: u32) -> Replica {
        let consumer = Consumer::builder(own_queue(emulator))
            .queue_allowance(allowance)
            .queue_limit(LIMIT)
            .batch_size(BATCH)
            .ack_batch_size(BATCH as usize)
            .build()
            .expect("valid settings");
        let monitor = consumer.monitor();
        let stop = consumer.shutdown_token();
        let run =
            tokio::spawn(
                async move { consumer.run(crate::ack_now).await.expect("no fatal error") },
            );
        Replica { monitor, stop, run }
    }

    fn now(&self) -> Summary {
        self.monitor.snapshot()
    }

    async fn stop(self) -> Summary {
        self.stop.cancel();
        self.run.await.expect("replica task")
    }
}

/// What a set of replicas did between two looks.
#[derive(Debug)]
struct Window {
    /// Messages received, per replica.
    received: Vec<u64>,
    /// Calls refused for the queue's allowance, all replicas together.
    refused: u64,
    /// Requests the emulator received (every client's).
    requests: u64,
    seconds: f64,
}

impl Window {
    fn combined_rate(&self) -> f64 {
        self.received.iter().sum::<u64>() as f64 / self.seconds
    }

    fn rate(&self, replica: usize) -> f64 {
        self.received[replica] as f64 / self.seconds
    }

    fn refused_share(&self) -> f64 {
        self.refused as f64 / self.requests.max(1) as f64
    }
}

/// Runs `seconds` of the replicas given and says what they did.
async fn window(emulator: &EmulatorHandle, replicas: &[&Replica], seconds: u64) -> Window {
    let before: Vec<Summary> = replicas.iter().map(|r| r.now()).collect();
    let requests = emulator.requests_received();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let after: Vec<Summary> = replicas.iter().map(|r| r.now()).collect();
    Window {
        received: before
            .iter()
            .zip(&after)
            .map(|(b, a)| a.received - b.received)
            .collect(),
        refused: before
            .iter()
            .zip(&after)
            .map(|(b, a)| a.refused_by_queue - b.refused_by_queue)
            .sum(),
        requests: emulator.requests_received() - requests,
        seconds: seconds as f64,
    }
}

#[tokio::test(start_paused = true)]
async fn replicas_that_start_and_stop_at_different_times_share_the_allowance() {
    let (emulator, a, b) = two_replicas().await;
    // Two replicas: they read the backlog falling at their combined pace
    // and settle under the limit together, without a refusal.
    tokio::time::sleep(5 * SECOND).await;
    let two = window(&emulator, &[&a, &b], 10).await;
    assert!(two.combined_rate() >= 450.0, "{two:?}");
    assert!(two.refused_share() <= 0.01, "{two:?}");
    assert_even(&two, 0.25);
    // A third starts: it takes its share within ten seconds, with few
    // refusals on the way.
    let c = Replica::start(&emulator);
    let joining = window(&emulator, &[&a, &b, &c], 10).await;
    assert!(joining.combined_rate() >= 425.0, "{joining:?}");
    assert!(joining.refused_share() <= 0.03, "{joining:?}");
    let three = window(&emulator, &[&a, &b, &c], 10).await;
    assert!(three.combined_rate() >= 450.0, "{three:?}");
    assert!(three.refused_share() <= 0.01, "{three:?}");
    // The newcomer has its share; for a minute or two it takes more (its
    // price's memory starts empty), and the others keep most of theirs.
    let equal = three.combined_rate() / 3.0;
    assert!(
        (0.8 * equal..=1.6 * equal).contains(&three.rate(2)),
        "{three:?}"
    );
    assert!(three.rate(0).min(three.rate(1)) >= 0.7 * equal, "{three:?}");
    // The first stops: the other two take up its share within seconds.
    let first = a.stop().await;
    assert!(first.pace <= u64::from(ALLOWANCE), "{first:?}");
    tokio::time::sleep(5 * SECOND).await;
    let after = window(&emulator, &[&b, &c], 10).await;
    assert!(after.combined_rate() >= 450.0, "{after:?}");
    assert!(after.refused_share() <= 0.01, "{after:?}");
    assert_even(&after, 0.4);
    for replica in [b, c] {
        let s = replica.stop().await;
        assert_eq!(s.refused_by_token, 0, "{s:?}");
        assert_eq!(s.unflushed + s.leases_lost, 0, "nothing lost: {s:?}");
    }
}

/// Every replica of `window` within `off` of an equal share.
fn assert_even(window: &Window, off: f64) {
    let equal = window.combined_rate() / window.received.len() as f64;
    for replica in 0..window.received.len() {
        let rate = window.rate(replica);
        assert!(
            (rate - equal).abs() <= off * equal,
            "replica {replica} at {rate:.0} a second, {equal:.0} an equal share: {window:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn replicas_given_their_share_by_hand_are_never_refused() {
    let emulator = limited_queue(40_000).await;
    let replicas: Vec<Replica> = (0..4)
        .map(|_| Replica::with_allowance(&emulator, ALLOWANCE / 4))
        .collect();
    tokio::time::sleep(2 * SECOND).await;
    let steady = window(&emulator, &replicas.iter().collect::<Vec<_>>(), 20).await;
    assert!(
        steady.combined_rate() >= 0.95 * f64::from(ALLOWANCE / 4 * 4),
        "{steady:?}"
    );
    for replica in replicas {
        let s = replica.stop().await;
        assert_eq!(s.refused_by_queue + s.refused_by_token, 0, "{s:?}");
        assert_eq!(s.unflushed + s.leases_lost, 0, "nothing lost: {s:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn replicas_with_messages_pushed_meanwhile_go_by_their_refusals() {
    let (emulator, a, b) = two_replicas().await;
    // A fifth of the limit pushed meanwhile, as a Worker would: the backlog
    // falls by less than the replicas take, so its fall is not their pace.
    let (_, pushed) = tokio::join!(
        push_meanwhile(&emulator, QUEUE, LIMIT / 5, 30 * SECOND),
        async {
            tokio::time::sleep(10 * SECOND).await;
            window(&emulator, &[&a, &b], 20).await
        }
    );
    assert!(pushed.combined_rate() >= 450.0, "{pushed:?}");
    assert!(pushed.refused_share() <= 0.03, "{pushed:?}");
    for replica in [a, b] {
        let s = replica.stop().await;
        assert!(s.refused_by_queue > 0, "the limit was met: {s:?}");
        assert_eq!(s.unflushed + s.leases_lost, 0, "nothing lost: {s:?}");
    }
}

/// Pulls as fast as eight loops can, with no pacing and no retries: a
/// replica of another make, or a script.
fn rogue(emulator: &EmulatorHandle, stop: &CancellationToken) -> Vec<JoinHandle<()>> {
    let queue = own_queue(emulator).with_retry(RetryPolicy::none());
    (0..8)
        .map(|_| {
            let (queue, stop) = (queue.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.is_cancelled() {
                    let Ok(batch) = queue.pull(PullOptions::new().batch_size(BATCH)).await else {
                        continue;
                    };
                    let acks = batch
                        .messages
                        .iter()
                        .fold(Acks::new(), |acks, m| acks.ack(m.lease_id.clone()));
                    let _ = queue.ack(acks).await;
                }
            })
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn replicas_recover_after_one_that_does_not_pace_stops() {
    let (emulator, a, b) = two_replicas().await;
    tokio::time::sleep(10 * SECOND).await;
    let stop = CancellationToken::new();
    let loops = rogue(&emulator, &stop);
    let during = window(&emulator, &[&a, &b], 10).await;
    // The rogue takes what it can; the replicas step down to little, and
    // their own refusals stay a small part of what they send.
    let paces = (a.now().pace, b.now().pace);
    assert!(
        paces.0 < u64::from(ALLOWANCE) / 2 && paces.1 < u64::from(ALLOWANCE) / 2,
        "{paces:?} {during:?}"
    );
    stop.cancel();
    for task in loops {
        task.await.expect("rogue loop");
    }
    // Within ten seconds of its end, the replicas are back at the limit.
    tokio::time::sleep(10 * SECOND).await;
    let after = window(&emulator, &[&a, &b], 10).await;
    assert!(after.combined_rate() >= 450.0, "{after:?}");
    assert!(after.refused_share() <= 0.02, "{after:?}");
    for replica in [a, b] {
        let s = replica.stop().await;
        assert_eq!(s.unflushed + s.leases_lost, 0, "nothing lost: {s:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_over_a_second_holds_the_replica_until_it_passes() {
    let emulator = limited_queue(0).await;
    // An empty queue: the replica polls (an empty pull every 100 ms or so,
    // backing off); the first pull is refused, asking for 3 s.
    emulator.inject(
        Fault::status(429)
            .cloudflare_error(10250, "QueueOverloaded")
            .retry_after(3 * SECOND)
            .only(Operation::Pull),
    );
    let replica = Replica::start(&emulator);
    eventually("the refusal", STEP, 5 * SECOND, || {
        replica.now().refused_by_queue == 1
    })
    .await;
    let requests = emulator.requests_received();
    let refused_at = tokio::time::Instant::now();
    tokio::time::sleep(2_900 * Duration::from_millis(1)).await;
    assert_eq!(
        emulator.requests_received(),
        requests,
        "no call within the Retry-After"
    );
    eventually("a pull after it", STEP, 5 * SECOND, || {
        replica.now().pulls > 0
    })
    .await;
    assert!(refused_at.elapsed() >= 3 * SECOND - Duration::from_millis(100));
    let s = replica.stop().await;
    assert_eq!(
        (s.refused_by_queue, s.rate_limited_pulls, s.refused_by_token),
        (1, 1, 0),
        "one attempt refused, not retried by the client: {s:?}"
    );
}
