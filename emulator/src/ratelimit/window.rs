//! A credential's sliding window of counted requests, and the block that
//! follows a request over it.

use std::collections::VecDeque;

use super::bucket::whole_seconds;

/// The per-credential limit: `requests` per sliding `window_ms`, and a
/// block of `block_ms` for every call of the credential once exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WindowRate {
    pub requests: u32,
    pub window_ms: u64,
    pub block_ms: u64,
}

/// What the `Ratelimit` header says: the requests left in the window and
/// the whole seconds until the oldest counted one leaves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Remaining {
    pub remaining: u32,
    pub reset_seconds: u64,
}

/// One credential's counted requests (oldest first; at most `requests` of
/// them) and its block, if one runs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Window {
    counted: VecDeque<u64>,
    blocked_until_ms: Option<u64>,
}

impl Window {
    /// Admits a call of this credential at `now_ms`, counting it if
    /// `counts`; `Err` with the `Retry-After` seconds when it is refused.
    /// A refused call is not counted and does not move the block.
    pub(crate) fn admit(&mut self, rate: WindowRate, counts: bool, now_ms: u64) -> Result<(), u64> {
        self.forget_old(rate, now_ms);
        if let Some(until) = self.blocked_until_ms {
            return Err(whole_seconds(until.saturating_sub(now_ms)));
        }
        if !counts {
            return Ok(());
        }
        if self.counted.len() >= usize::try_from(rate.requests).unwrap_or(usize::MAX) {
            let until = now_ms.saturating_add(rate.block_ms);
            // With a block shorter than the window (only if configured so),
            // the caller must still wait for room in the window.
            let room_at = self.room_at_ms(rate).unwrap_or(now_ms);
            if rate.block_ms > 0 {
                self.blocked_until_ms = Some(until);
            }
            return Err(whole_seconds(until.max(room_at).saturating_sub(now_ms)));
        }
        self.counted.push_back(now_ms);
        Ok(())
    }

    /// The figures for the `Ratelimit` header at `now_ms`. While a block
    /// runs, nothing remains, until the block ends.
    pub(crate) fn remaining(&mut self, rate: WindowRate, now_ms: u64) -> Remaining {
        self.forget_old(rate, now_ms);
        if let Some(until) = self.blocked_until_ms {
            return Remaining {
                remaining: 0,
                reset_seconds: until.saturating_sub(now_ms).div_ceil(1000),
            };
        }
        let used = u32::try_from(self.counted.len()).unwrap_or(u32::MAX);
        Remaining {
            remaining: rate.requests.saturating_sub(used),
            reset_seconds: self
                .room_at_ms(rate)
                .map_or(0, |at| at.saturating_sub(now_ms).div_ceil(1000)),
        }
    }

    /// Whether the window counts nothing and no block runs, so that
    /// forgetting it changes nothing.
    pub(crate) fn is_idle(&mut self, rate: WindowRate, now_ms: u64) -> bool {
        self.forget_old(rate, now_ms);
        self.counted.is_empty() && self.blocked_until_ms.is_none()
    }

    /// When the oldest counted request leaves the window.
    fn room_at_ms(&self, rate: WindowRate) -> Option<u64> {
        self.counted
            .front()
            .map(|oldest| oldest.saturating_add(rate.window_ms))
    }

    fn forget_old(&mut self, rate: WindowRate, now_ms: u64) {
        while self
            .counted
            .front()
            .is_some_and(|&at| at.saturating_add(rate.window_ms) <= now_ms)
        {
            self.counted.pop_front();
        }
        if self.blocked_until_ms.is_some_and(|until| until <= now_ms) {
            self.blocked_until_ms = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: WindowRate = WindowRate {
        requests: 3,
        window_ms: 300_000,
        block_ms: 300_000,
    };

    #[test]
    fn the_window_slides_and_the_header_counts_down() {
        let mut w = Window::default();
        assert_eq!(
            w.remaining(RATE, 0),
            Remaining {
                remaining: 3,
                reset_seconds: 0
            }
        );
        assert_eq!(w.admit(RATE, true, 1_000), Ok(()));
        assert_eq!(w.admit(RATE, true, 100_500), Ok(()));
        let left = w.remaining(RATE, 100_500);
        assert_eq!((left.remaining, left.reset_seconds), (1, 201));
        // Uncounted calls pass and change nothing.
        assert_eq!(w.admit(RATE, false, 100_500), Ok(()));
        assert_eq!(w.remaining(RATE, 100_500).remaining, 1);
        // The first leaves the window at 301 s exactly.
        assert_eq!(w.remaining(RATE, 300_999).remaining, 1);
        let left = w.remaining(RATE, 301_000);
        assert_eq!((left.remaining, left.reset_seconds), (2, 100));
    }

    #[test]
    fn the_request_over_the_window_starts_a_block_that_covers_every_call() {
        let mut w = Window::default();
        for at in [0, 1, 2] {
            assert_eq!(w.admit(RATE, true, at), Ok(()));
        }
        assert_eq!(w.admit(RATE, true, 10_000), Err(300));
        let left = w.remaining(RATE, 10_000);
        assert_eq!((left.remaining, left.reset_seconds), (0, 300));
        // Uncounted calls are blocked too; refusals move nothing.
        assert_eq!(w.admit(RATE, false, 10_000), Err(300));
        assert_eq!(w.admit(RATE, true, 309_001), Err(1));
        assert_eq!(w.admit(RATE, false, 309_999), Err(1));
        // Over at 310 s; the window emptied at 300 s.
        assert_eq!(w.admit(RATE, true, 310_000), Ok(()));
        assert_eq!(w.remaining(RATE, 310_000).remaining, 2);
        assert!(!w.is_idle(RATE, 310_000));
        assert!(w.is_idle(RATE, 610_000));
    }

    #[test]
    fn without_a_block_the_refusal_waits_for_room() {
        let rate = WindowRate {
            block_ms: 0,
            ..RATE
        };
        let mut w = Window::default();
        for at in [0, 1, 2] {
            assert_eq!(w.admit(rate, true, at), Ok(()));
        }
        assert_eq!(w.admit(rate, true, 200_000), Err(100));
        assert_eq!(w.admit(rate, false, 200_000), Ok(()));
        assert_eq!(w.admit(rate, true, 300_000), Ok(()));
    }
}
