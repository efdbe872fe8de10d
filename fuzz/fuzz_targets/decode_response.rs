//! Every response decoder, on arbitrary bytes: must never panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|body: &[u8]| {
    cf_queues::fuzzing::decode_everything(body);
});
