//! Peek refs and preview ids: tokens that name a message without leasing
//! it, remembered for a bounded time and in bounded number.
//!
//! Clients can ask for them as often as they like, so each book forgets its
//! oldest tokens beyond [`PEEK_REF_CAP`](crate::state::PEEK_REF_CAP) and any token
//! older than [`PEEK_REF_TTL_MS`](crate::state::PEEK_REF_TTL_MS), and everything
//! once its queue drains; the broker's sweep trims books no one touches.

use std::collections::VecDeque;

use crate::state::messages::tokens::KeyMap;
use crate::state::{PEEK_REF_CAP, PEEK_REF_TTL_MS, SHRINK_ABOVE};

/// Which names [`Broker::show`](crate::state::Broker::show) gives the messages it
/// shows: this registry's two kinds.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Names {
    /// Peek refs, for [`Broker::purge`](crate::state::Broker::purge).
    PeekRefs,
    /// Preview ids, for [`Broker::delete_previewed`](crate::state::Broker::delete_previewed).
    PreviewIds,
}

/// What a token points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Named {
    /// The message.
    pub(crate) seq: u64,
    /// When the token was issued.
    pub(crate) created_ms: u64,
    /// The message's generation when the token was issued; preview ids
    /// are good only while it stays the same (peek refs ignore it).
    pub(crate) generation: u64,
}

impl Named {
    /// Measured as elapsed time so tokens issued near `u64::MAX` still live,
    /// and a clock that steps back never expires them early.
    pub(crate) fn expired(&self, now_ms: u64) -> bool {
        now_ms.saturating_sub(self.created_ms) >= PEEK_REF_TTL_MS
    }
}

/// One kind of token of one queue, with its issue order.
#[derive(Debug, Default)]
pub(crate) struct RefBook {
    map: KeyMap<u128, Named>,
    /// Keys in issue order, for cap and age eviction; always holds exactly
    /// the keys of `map`.
    order: VecDeque<u128>,
}

impl RefBook {
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The keys in use, so that a fresh token never repeats one.
    pub(crate) fn keys(&self) -> &KeyMap<u128, Named> {
        &self.map
    }

    /// The live entry of `key`: expired tokens name nothing, even before a
    /// sweep forgets them.
    pub(crate) fn get(&self, key: u128, now_ms: u64) -> Option<Named> {
        self.map.get(&key).filter(|n| !n.expired(now_ms)).copied()
    }

    pub(crate) fn insert(&mut self, key: u128, named: Named) {
        self.map.insert(key, named);
        self.order.push_back(key);
    }

    /// Forgets tokens beyond the cap or TTL, and all of them when the queue
    /// is `drained` (they could only name deleted messages).
    pub(crate) fn trim(&mut self, now_ms: u64, drained: bool) {
        if drained {
            if !self.map.is_empty() || self.order.capacity() > 0 {
                *self = RefBook::default();
            }
            return;
        }
        while let Some(&key) = self.order.front() {
            let too_old = self.map.get(&key).is_none_or(|n| n.expired(now_ms));
            if !too_old && self.order.len() <= PEEK_REF_CAP {
                break;
            }
            self.order.pop_front();
            self.map.remove(&key);
        }
        if self.map.capacity() > SHRINK_ABOVE && self.map.len() < self.map.capacity() / 4 {
            self.map.shrink_to_fit();
            self.order.shrink_to_fit();
        }
    }

    /// When the oldest token left expires, if any is left.
    pub(crate) fn next_expiry(&self) -> Option<u64> {
        let oldest = self.order.front()?;
        let created = self.map.get(oldest)?.created_ms;
        Some(created.saturating_add(PEEK_REF_TTL_MS))
    }

    /// Whether `order` holds exactly the keys of the map, for the tests'
    /// invariant checks.
    #[cfg(test)]
    pub(crate) fn consistent(&self) -> bool {
        self.order.len() == self.map.len() && self.order.iter().all(|k| self.map.contains_key(k))
    }
}
