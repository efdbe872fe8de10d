//! An auto-batching producer on the local emulator: 1,000 single sends from
//! 8 tasks become 10 batch pushes, and each sender gets its own outcome.
//!
//! `cargo run --example producer --features producer`

use cf_queues::Message;
use cf_queues::producer::Producer;
use cf_queues_emulator::Emulator;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let emulator = Emulator::new().start().await?;
    let queue = emulator.client()?.queue("events")?;
    let producer = Producer::builder(queue).build()?;

    let tasks: Vec<_> = (0..8)
        .map(|task| {
            let producer = producer.clone();
            tokio::spawn(async move {
                let sends =
                    (0..125).map(|i| producer.send(Message::text(format!("event {task}-{i}"))));
                futures_util::future::join_all(sends).await
            })
        })
        .collect();
    for task in tasks {
        for outcome in task.await? {
            outcome?;
        }
    }
    // A message over 128 KB is refused on its own; nothing else is held up.
    let refused = producer.send(Message::text("x".repeat(200_000))).await;
    println!(
        "oversized message: {}",
        refused.err().map(|e| e.to_string()).unwrap_or_default()
    );

    let stats = producer.close().await;
    println!(
        "{} messages landed in {} requests ({} refused)",
        stats.landed, stats.batches, stats.rejected
    );
    Ok(())
}
