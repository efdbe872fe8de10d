//! Tokens: message ids, lease ids and peek refs.
//!
//! Lease ids and peek refs are capabilities: whoever holds one can ack,
//! retry or purge a message. They are 128 bits drawn from the broker's
//! [`RandomSource`] (the operating system's CSPRNG in the emulator), so a
//! client's own tokens say nothing about anyone else's. A counter passed
//! through an invertible mixer, as before, gave the mixer's key back from a
//! single lease id, and with it every other client's.
//!
//! On the wire they look like Cloudflare's: compact JWE tokens with the
//! header `{"alg":"dir","enc":"A256CBC-HS512"}`, 159 characters, as seen on
//! the live API. The 128 bits are the token's initialization vector; its
//! ciphertext and tag are derived from them, so that a token has a single
//! spelling and a client that stores or forwards Cloudflare's tokens (by
//! length, say) handles the emulator's the same way. Nothing in them is
//! encrypted: they only carry the key.
//!
//! Message ids are not capabilities (no operation accepts one), so they are
//! derived from the message's sequence number instead of stored.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

const MESSAGE_TAIL: u64 = 0x3c6e_f372_fe94_f82b;

/// How many random bytes are fetched at once: one call to the source per
/// 256 tokens keeps a 100-message pull from costing 100 system calls.
const POOL_BYTES: usize = 4096;

/// The splitmix64 output function: a bijection on `u64`, so distinct inputs
/// always give distinct outputs, which keeps message ids unique.
pub(crate) fn mix(x: u64) -> u64 {
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

/// The protected header of every token, base64url-encoded:
/// `{"alg":"dir","enc":"A256CBC-HS512"}`, then the empty encrypted key of
/// direct encryption.
const JWE_PREFIX: &str = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2Q0JDLUhTNTEyIn0..";

/// The length of a token: the prefix, a 16-byte IV, a 32-byte ciphertext
/// and a 32-byte tag (A256CBC-HS512's), base64url-encoded and joined by dots.
pub(crate) const TOKEN_LEN: usize = JWE_PREFIX.len() + 22 + 1 + 43 + 1 + 43;

/// Derived bytes after the IV: not secret (the key is), only random-looking.
fn derived(token: u128, out: &mut [u8; 64]) {
    let (high, low) = ((token >> 64) as u64, token as u64);
    let mut state = mix(high ^ MESSAGE_TAIL) ^ low;
    for chunk in out.chunks_mut(8) {
        state = mix(state ^ low);
        chunk.copy_from_slice(&state.to_le_bytes());
    }
}

/// A token as clients see it: a compact JWE of [`TOKEN_LEN`] characters.
pub(crate) fn token_string(token: u128) -> String {
    let mut tail = [0u8; 64];
    derived(token, &mut tail);
    let mut out = String::with_capacity(TOKEN_LEN);
    out.push_str(JWE_PREFIX);
    URL_SAFE_NO_PAD.encode_string(token.to_be_bytes(), &mut out);
    out.push('.');
    URL_SAFE_NO_PAD.encode_string(&tail[..32], &mut out);
    out.push('.');
    URL_SAFE_NO_PAD.encode_string(&tail[32..], &mut out);
    out
}

/// The key of a token [`token_string`] made; anything else (another
/// length, another header, a changed character anywhere) is rejected, so
/// every token has a single spelling.
pub(crate) fn parse_token(token: &str) -> Option<u128> {
    if token.len() != TOKEN_LEN {
        return None;
    }
    let iv = token.strip_prefix(JWE_PREFIX)?.get(..22)?;
    let bytes: [u8; 16] = URL_SAFE_NO_PAD.decode(iv).ok()?.try_into().ok()?;
    let key = u128::from_be_bytes(bytes);
    (token_string(key) == token).then_some(key)
}

/// A cheap hasher for keys we generate ourselves: sequence numbers (spread
/// by the mixer) and random tokens (uniform already). Clients can look keys
/// up but never choose the keys inserted, so SipHash's flooding resistance
/// buys nothing here.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TokenKeyHasher(u64);

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

pub(crate) type KeyBuild = BuildHasherDefault<TokenKeyHasher>;
pub(crate) type KeyMap<K, V> = HashMap<K, V, KeyBuild>;

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

    pub(crate) fn u128(&mut self) -> u128 {
        if self.used + 16 > POOL_BYTES {
            (self.fill)(&mut self.pool[..]);
            self.used = 0;
        }
        let mut word = [0u8; 16];
        word.copy_from_slice(&self.pool[self.used..self.used + 16]);
        self.used += 16;
        u128::from_le_bytes(word)
    }

    pub(crate) fn u64(&mut self) -> u64 {
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
pub(crate) struct Tokens {
    pub(crate) message_key: u64,
    pub(crate) next_seq: u64,
    random: RandomSource,
    /// Whether queue states journal their changes (a data directory).
    pub(crate) tracking: bool,
}

impl Tokens {
    pub(crate) fn new(mut random: RandomSource) -> Self {
        Tokens {
            message_key: random.u64(),
            next_seq: 0,
            random,
            tracking: false,
        }
    }

    /// Broker-wide sequence number: orders messages (FIFO tie-break) and keys
    /// them; never reused, so stale refs can never alias a newer message.
    pub(crate) fn seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq = seq.wrapping_add(1);
        seq
    }

    /// A fresh lease id or peek ref, not yet a key of `taken`. A repeat has
    /// a chance of 2^-128, but checking costs one lookup and makes
    /// uniqueness certain.
    pub(crate) fn fresh<V>(&mut self, taken: &KeyMap<u128, V>) -> u128 {
        loop {
            let token = self.random.u128();
            if !taken.contains_key(&token) {
                return token;
            }
        }
    }

    /// A fresh resource id (a queue's or a consumer's): 32 lowercase hex
    /// digits of 128 random bits, as Cloudflare's ids look.
    pub(crate) fn resource_id(&mut self) -> String {
        let random = self.random.u128();
        let mut out = String::with_capacity(32);
        push_hex(&mut out, (random >> 64) as u64);
        push_hex(&mut out, random as u64);
        out
    }

    /// Derived from the sequence number rather than stored, which saves
    /// memory per queued message.
    pub(crate) fn message_id(&self, seq: u64) -> String {
        let head = mix(seq ^ self.message_key);
        let mut out = String::with_capacity(32);
        push_hex(&mut out, head);
        push_hex(&mut out, mix(head ^ MESSAGE_TAIL));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_compact_jwes_that_parse_back_in_one_spelling() {
        for key in [0, 1, u128::MAX, 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210] {
            let token = token_string(key);
            assert_eq!(token.len(), 159);
            let parts: Vec<&str> = token.split('.').collect();
            assert_eq!(parts.len(), 5);
            let header = URL_SAFE_NO_PAD.decode(parts[0]).expect("header");
            assert_eq!(header, br#"{"alg":"dir","enc":"A256CBC-HS512"}"#);
            assert_eq!(parts[1], "");
            assert_eq!(parse_token(&token), Some(key));
            for (i, c) in token.char_indices().skip(JWE_PREFIX.len()) {
                let other = if c == 'A' { 'B' } else { 'A' };
                let changed = format!("{}{other}{}", &token[..i], &token[i + 1..]);
                assert_eq!(parse_token(&changed), None, "changed at {i}");
            }
        }
        assert_eq!(parse_token(""), None);
        assert_eq!(parse_token(&"a".repeat(159)), None);
        assert_eq!(parse_token("0123456789abcdef0123456789abcdef"), None);
    }
}
