//! Live counters, read while a consumer or a producer runs: one relaxed
//! atomic per field of a public snapshot type ([`Summary`],
//! [`ProducerStats`]), generated here once for both.
//!
//! [`Summary`]: crate::consumer::Summary
//! [`ProducerStats`]: crate::producer::ProducerStats

use std::sync::atomic::{AtomicU64, Ordering};

/// `live_counters!(Counters => Snapshot { a, b })` declares `Counters`, one
/// `AtomicU64` per field, and `Counters::snapshot() -> Snapshot`. Fields
/// after `;` (`{ a, b; c }`) are the snapshot's that the caller fills in
/// (their `Default` in the counters' snapshot).
macro_rules! live_counters {
    ($(#[$meta:meta])* $name:ident => $snapshot:ident { $($field:ident),* $(,)? $(; $($filled:ident),* $(,)?)? }) => {
        $(#[$meta])*
        #[derive(Debug, Default)]
        pub(crate) struct $name {
            $(pub(crate) $field: std::sync::atomic::AtomicU64,)*
        }

        impl $name {
            /// Every counter as it is now (each read on its own: a
            /// snapshot taken while the counters move need not add up).
            pub(crate) fn snapshot(&self) -> $snapshot {
                $snapshot {
                    $($field: self.$field.load(std::sync::atomic::Ordering::Relaxed),)*
                    $($($filled: Default::default(),)*)?
                }
            }
        }
    };
}
pub(crate) use live_counters;

/// Adds `n` to a counter.
pub(crate) fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

/// Subtracts `n` from a gauge, never below zero.
#[cfg(feature = "consumer")]
pub(crate) fn sub(counter: &AtomicU64, n: u64) {
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        Some(v.saturating_sub(n))
    });
}
