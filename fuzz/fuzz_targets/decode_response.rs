//! Every response path (every operation of `Operation::ALL`), on an
//! arbitrary status and body: must never panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    let (status, body) = match input {
        [high, low, body @ ..] => (u16::from_be_bytes([*high, *low]) % 600, body),
        _ => (200, input),
    };
    cf_queues::fuzzing::decode_response(status, body);
});
