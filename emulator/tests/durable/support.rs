//! What the durability tests share: an emulator on a data directory and
//! the directory's size (raw HTTP calls are the kit's `raw_http::Raw`).

use std::path::Path;

use cf_queues_emulator::{Emulator, EmulatorHandle};
use cf_queues_testkit::emulators;
use cf_queues_testkit::raw_http::Raw;
use tempfile::TempDir;

/// Starts an emulator on `dir`, configured further by `configure`.
pub async fn start_on(dir: &Path, configure: impl FnOnce(Emulator) -> Emulator) -> EmulatorHandle {
    emulators::emulator_with(|emulator| configure(emulator.data_dir(dir))).await
}

/// A fresh data directory, an emulator on it configured by `configure`,
/// and a raw client of that emulator.
pub async fn on_a_fresh_dir(
    configure: impl FnOnce(Emulator) -> Emulator,
) -> (TempDir, EmulatorHandle, Raw) {
    let dir = tempfile::tempdir().expect("temp dir");
    let handle = start_on(dir.path(), configure).await;
    let raw = Raw::new(&handle);
    (dir, handle, raw)
}

/// Why an emulator on `dir`, configured by `configure`, does not start:
/// its error's message (empty if it started after all).
pub async fn refusal_on(dir: &Path, configure: impl FnOnce(Emulator) -> Emulator) -> String {
    let started = configure(Emulator::new().data_dir(dir)).start().await;
    started.err().map(|e| e.to_string()).unwrap_or_default()
}

/// Bytes of every file in `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}
