//! A consumer and a producer on the local emulator, their figures served
//! for Prometheus to scrape.
//!
//! `cargo run --example prometheus --features consumer,producer,metrics`, then
//! `curl http://127.0.0.1:9000/metrics` (or set `METRICS_LISTEN` to another
//! address). Stops on Ctrl-C.
//!
//! The recorder is installed first: a consumer or producer built before it
//! would record nowhere (see `cf_queues::metrics`).

use std::net::SocketAddr;
use std::time::Duration;

use cf_queues::Message;
use cf_queues::consumer::{Consumer, Verdict};
use cf_queues::producer::Producer;
use cf_queues_emulator::Emulator;
use metrics_exporter_prometheus::PrometheusBuilder;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listen: SocketAddr = std::env::var("METRICS_LISTEN")
        .unwrap_or_else(|_| "127.0.0.1:9000".to_owned())
        .parse()?;
    // 1. The recorder, and its scrape page (a task on this runtime).
    PrometheusBuilder::new()
        .with_http_listener(listen)
        .install()?;

    // 2. Then the client, the producer and the consumer.
    let emulator = Emulator::new().start().await?;
    let queue = emulator.client()?.queue("orders")?;
    let producer = Producer::builder(queue.clone()).build()?;
    let consumer = Consumer::builder(queue).build()?;
    let stop = consumer.shutdown_token();

    tokio::spawn(async move {
        let mut id = 0u64;
        loop {
            let message = Message::json(&serde_json::json!({ "id": id }));
            if let Ok(message) = message {
                // A send waits for its batch; the next one need not.
                let producer = producer.clone();
                tokio::spawn(async move { producer.send(message).await });
            }
            id += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
    println!("scrape http://{listen}/metrics (Ctrl-C to stop)");

    let summary = consumer
        .run(|message| async move {
            // A handler that takes a few milliseconds, and fails now and then.
            tokio::time::sleep(Duration::from_millis(3)).await;
            if message.attempts == 1 && message.id.ends_with('7') {
                return Err("not ready yet");
            }
            Ok(Verdict::Ack)
        })
        .await?;
    println!("acked {}, retried {}", summary.acked, summary.retried);
    Ok(())
}
