//! An emulator on a data directory, for the crash test
//! (`tests/crash/main.rs`), which kills it with SIGKILL and starts it
//! again: `durable_child DIR` prints its base URL on the first line of
//! stdout and serves until killed. Queue `crash` gives up a message after
//! 100 deliveries into the dead-letter queue `crashdlq`, since every crash
//! costs each leased message an attempt.
#![allow(missing_docs)]

use std::io::Write;

use cf_queues_emulator::Emulator;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: durable_child DIR")?;
    let handle = Emulator::new()
        .token("crash-test")
        .max_retries(100)
        .dead_letter_queue("crash", "crashdlq")
        .data_dir(dir)
        .start()
        .await?;
    let mut out = std::io::stdout();
    writeln!(out, "{}", handle.base_url())?;
    out.flush()?;
    handle.wait().await?;
    Ok(())
}
