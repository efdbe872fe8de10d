//! One operation's response path, picked by the first byte, on an arbitrary
//! status and body: must never panic. Narrower than `decode_response`, which
//! runs every operation on each input, so coverage feedback credits one
//! operation's decoder at a time and each input costs one decode.
#![no_main]

use cf_queues::operation::Operation;

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    let [pick, high, low, body @ ..] = input else {
        return;
    };
    let operation = Operation::ALL[usize::from(*pick) % Operation::ALL.len()];
    let status = u16::from_be_bytes([*high, *low]) % 600;
    cf_queues::fuzzing::decode_as(operation, status, body);
});
