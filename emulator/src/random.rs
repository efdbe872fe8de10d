//! Secrets the emulator draws: tokens and the dashboard's keys.

use std::hash::{BuildHasher as _, Hasher as _};

/// 32 random hex digits (128 bits) from the operating system's generator.
pub(crate) fn random_hex() -> String {
    let mut random = [0u8; 16];
    if getrandom::fill(&mut random).is_err() {
        // `os_random` checked the generator at start; keyed SipHash
        // stands in should it fail now.
        let keys = std::collections::hash_map::RandomState::new();
        for (i, chunk) in random.chunks_mut(8).enumerate() {
            let mut hasher = keys.build_hasher();
            hasher.write_usize(i);
            chunk.copy_from_slice(&hasher.finish().to_le_bytes());
        }
    }
    random.iter().map(|b| format!("{b:02x}")).collect()
}
