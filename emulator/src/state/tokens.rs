//! Tokens: message ids, lease ids and peek refs.
//!
//! Lease ids and peek refs are capabilities: whoever holds one can ack,
//! retry or purge a message. They are 128 bits drawn from the broker's
//! [`RandomSource`] (the operating system's CSPRNG in the emulator), so a
//! client's own tokens say nothing about anyone else's. A counter passed
//! through an invertible mixer, as before, gave the mixer's key back from a
//! single lease id, and with it every other client's.
//!
//! Message ids are not capabilities (no operation accepts one), so they are
//! derived from the message's sequence number instead of stored.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

const MESSAGE_TAIL: u64 = 0x3c6e_f372_fe94_f82b;

/// How many random bytes are fetched at once: one call to the source per
/// 256 tokens keeps a 100-message pull from costing 100 system calls.
const POOL_BYTES: usize = 4096;

/// The splitmix64 output function: a bijection on `u64`, so distinct inputs
/// always give distinct outputs, which keeps message ids unique.
pub(super) fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn push_hex(out: &mut String, word: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for shift in (0..16).rev() {
        let nibble = ((word >> (shift * 4)) & 0xf) as usize;
        out.push(char::from(DIGITS[nibble & 0xf]));
    }
}

/// A token as clients see it: 32 lowercase hex digits.
pub(super) fn token_string(token: u128) -> String {
    let mut out = String::with_capacity(32);
    push_hex(&mut out, (token >> 64) as u64);
    push_hex(&mut out, token as u64);
    out
}

/// Parses exactly 32 lowercase hex digits; anything else (upper case, signs,
/// other lengths) is rejected so every token has a single spelling.
pub(super) fn parse_token(token: &str) -> Option<u128> {
    let bytes = token.as_bytes();
    if bytes.len() != 32 {
        return None;
    }
    bytes.iter().try_fold(0u128, |acc, &b| {
        let nibble = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => return None,
        };
        Some((acc << 4) | u128::from(nibble))
    })
}

/// A cheap hasher for keys we generate ourselves: sequence numbers (spread
/// by the mixer) and random tokens (uniform already). Clients can look keys
/// up but never choose the keys inserted, so SipHash's flooding resistance
/// buys nothing here.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct TokenKeyHasher(u64);

impl Hasher for TokenKeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix(self.0 ^ u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = mix(self.0 ^ n);
    }

    fn write_u128(&mut self, n: u128) {
        self.0 ^= (n as u64) ^ ((n >> 64) as u64);
    }
}

pub(super) type KeyBuild = BuildHasherDefault<TokenKeyHasher>;
pub(super) type KeyMap<K, V> = HashMap<K, V, KeyBuild>;

/// Fills a buffer with random bytes.
type Fill = Box<dyn FnMut(&mut [u8]) + Send>;

/// Where the broker's random bytes come from. The broker itself does no
/// I/O: the emulator hands it the operating system's CSPRNG, and tests a
/// seeded stream so that runs repeat.
pub(crate) struct RandomSource {
    fill: Fill,
    pool: Box<[u8; POOL_BYTES]>,
    used: usize,
}

impl RandomSource {
    /// Bytes from `fill`, which must fill the whole buffer it is given.
    pub(crate) fn new(fill: impl FnMut(&mut [u8]) + Send + 'static) -> RandomSource {
        RandomSource {
            fill: Box::new(fill),
            pool: Box::new([0; POOL_BYTES]),
            used: POOL_BYTES,
        }
    }

    /// A reproducible stream for tests: splitmix64 over `seed`. Predictable
    /// by design, so never used by the emulator itself.
    #[cfg(test)]
    pub(crate) fn seeded(seed: u64) -> RandomSource {
        let mut state = seed;
        RandomSource::new(move |buf: &mut [u8]| {
            for chunk in buf.chunks_mut(8) {
                state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let word = mix(state).to_le_bytes();
                chunk.copy_from_slice(&word[..chunk.len()]);
            }
        })
    }

    pub(super) fn u128(&mut self) -> u128 {
        if self.used + 16 > POOL_BYTES {
            (self.fill)(&mut self.pool[..]);
            self.used = 0;
        }
        let mut word = [0u8; 16];
        word.copy_from_slice(&self.pool[self.used..self.used + 16]);
        self.used += 16;
        u128::from_le_bytes(word)
    }

    pub(super) fn u64(&mut self) -> u64 {
        self.u128() as u64
    }
}

impl fmt::Debug for RandomSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RandomSource").finish_non_exhaustive()
    }
}

/// Issues every token.
#[derive(Debug)]
pub(super) struct Tokens {
    message_key: u64,
    next_seq: u64,
    random: RandomSource,
}

impl Tokens {
    pub(super) fn new(mut random: RandomSource) -> Self {
        Tokens {
            message_key: random.u64(),
            next_seq: 0,
            random,
        }
    }

    /// Broker-wide sequence number: orders messages (FIFO tie-break) and keys
    /// them; never reused, so stale refs can never alias a newer message.
    pub(super) fn seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq = seq.wrapping_add(1);
        seq
    }

    /// A fresh lease id or peek ref, not yet a key of `taken`. A repeat has
    /// a chance of 2^-128, but checking costs one lookup and makes
    /// uniqueness certain.
    pub(super) fn fresh<V>(&mut self, taken: &KeyMap<u128, V>) -> u128 {
        loop {
            let token = self.random.u128();
            if !taken.contains_key(&token) {
                return token;
            }
        }
    }

    /// Derived from the sequence number rather than stored, which saves
    /// memory per queued message.
    pub(super) fn message_id(&self, seq: u64) -> String {
        let head = mix(seq ^ self.message_key);
        let mut out = String::with_capacity(32);
        push_hex(&mut out, head);
        push_hex(&mut out, mix(head ^ MESSAGE_TAIL));
        out
    }
}
