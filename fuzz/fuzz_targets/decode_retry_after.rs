//! `retry-after-ms` / `Retry-After` parsing, on arbitrary text: must never panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|text: &str| {
    let _ = cf_queues::fuzzing::decode_retry_after(text);
});
