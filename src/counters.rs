//! Live counters, read while a consumer or a producer runs: one relaxed
//! atomic per field of a public snapshot type ([`Summary`],
//! [`ProducerStats`]), generated here once for both.
//!
//! The same counters feed the `metrics` feature: a field may name the
//! metric it is recorded as, and then every change to it goes to that
//! metric too (the handle is taken when the counters are made, once per
//! consumer or producer, so a record is an increment on a handle, never a
//! lookup). Without the feature, or for a field that names none, a counter
//! is its atomic alone.
//!
//! [`Summary`]: crate::consumer::Summary
//! [`ProducerStats`]: crate::producer::ProducerStats

use std::sync::atomic::{AtomicU64, Ordering};

/// `live_counters!(Counters => Snapshot { tallies { a, b: counter("name",
/// "label" = "value"), c: gauge("name") } filled { d } figures { e:
/// histogram("name", "label" = "value"), f: gauge("name") } })` declares
/// `Counters`, one [`Tally`] per tally (recorded as the metric it names,
/// labelled with the queue), one [`Figure`] per figure (a metric without a
/// snapshot's field), `Counters::new(queue_id)` and
/// `Counters::snapshot() -> Snapshot`. The `filled` fields are the
/// snapshot's that the caller fills in (their `Default` in the counters'
/// snapshot).
macro_rules! live_counters {
    (
        $(#[$meta:meta])* $name:ident => $snapshot:ident {
            tallies {
                $($field:ident $(: $kind:ident($metric:literal $(, $lk:literal = $lv:literal)*))?),* $(,)?
            }
            $(filled { $($filled:ident),* $(,)? })?
            $(figures {
                $($figure:ident: $fkind:ident($fname:literal $(, $fk:literal = $fv:literal)*)),* $(,)?
            })?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Default)]
        pub(crate) struct $name {
            $(pub(crate) $field: $crate::counters::Tally,)*
            $($(pub(crate) $figure: $crate::counters::Figure,)*)?
        }

        impl $name {
            /// The counters of a component working on queue `queue_id`
            /// (the metrics' `messaging.destination.name`), labelled
            /// `instance` on its gauges.
            pub(crate) fn new(queue_id: &str, instance: &str) -> $name {
                $name {
                    $($field: $crate::counters::Tally::new(
                        queue_id,
                        instance,
                        $crate::counters::live_counters!(@spec $($kind($metric $(, $lk = $lv)*))?),
                    ),)*
                    $($($figure: $crate::counters::Figure::new(
                        queue_id,
                        instance,
                        $crate::counters::FigureKind::$fkind,
                        $fname,
                        &[$(($fk, $fv)),*],
                    ),)*)?
                }
            }

            /// Every counter as it is now (each read on its own: a
            /// snapshot taken while the counters move need not add up).
            pub(crate) fn snapshot(&self) -> $snapshot {
                $snapshot {
                    $($field: self.$field.get(),)*
                    $($($filled: Default::default(),)*)?
                }
            }
        }
    };
    (@spec) => { None };
    (@spec $kind:ident($metric:literal $(, $lk:literal = $lv:literal)*)) => {
        Some($crate::counters::Spec {
            kind: $crate::counters::Kind::$kind,
            name: $metric,
            labels: &[$(($lk, $lv)),*],
        })
    };
}
pub(crate) use live_counters;

/// What a [`Tally`] is recorded as.
#[derive(Debug, Clone, Copy)]
#[allow(non_camel_case_types)] // The macro's words: `counter("…")`, `gauge("…")`.
pub(crate) enum Kind {
    /// Only ever added to: a count since the start.
    counter,
    /// A level that goes up and down (or is set).
    gauge,
}

/// The metric a [`Tally`] is recorded as: its kind, name and the labels
/// besides the queue's.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) struct Spec {
    pub(crate) kind: Kind,
    pub(crate) name: &'static str,
    pub(crate) labels: &'static [(&'static str, &'static str)],
}

/// One live counter: an atomic the snapshots read, and under the `metrics`
/// feature the metric it is recorded as.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    value: AtomicU64,
    #[cfg(feature = "metrics")]
    metric: Metric,
}

impl Tally {
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn new(queue_id: &str, instance: &str, spec: Option<Spec>) -> Tally {
        Tally {
            value: AtomicU64::new(0),
            #[cfg(feature = "metrics")]
            metric: Metric::register(queue_id, instance, spec),
        }
    }

    /// Its value now.
    pub(crate) fn get(&self) -> u64 {
        self.value.load(Ordering::Relaxed)
    }

    /// Adds `n`.
    pub(crate) fn add(&self, n: u64) {
        self.value.fetch_add(n, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        self.metric.add(n);
    }

    /// Subtracts `n`, never below zero.
    pub(crate) fn sub(&self, n: u64) {
        let before = self
            .value
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(n))
            })
            .unwrap_or_default();
        #[cfg(feature = "metrics")]
        self.metric.sub(before.min(n));
        #[cfg(not(feature = "metrics"))]
        let _ = before;
    }

    /// Sets it to `v` (a level, not a count).
    #[cfg(feature = "consumer")]
    pub(crate) fn set(&self, v: u64) {
        self.value.store(v, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        self.metric.set(v);
    }

    /// Raises it to `v` if `v` is higher.
    #[cfg(feature = "consumer")]
    pub(crate) fn raise_to(&self, v: u64) {
        self.value.fetch_max(v, Ordering::Relaxed);
    }
}

/// Adds `n` to a counter.
pub(crate) fn add(counter: &Tally, n: u64) {
    counter.add(n);
}

/// Subtracts `n` from a gauge, never below zero.
#[cfg(feature = "consumer")]
pub(crate) fn sub(counter: &Tally, n: u64) {
    counter.sub(n);
}

/// What a [`Figure`] is recorded as.
#[derive(Debug, Clone, Copy)]
#[allow(non_camel_case_types)] // The macro's words: `histogram("…")`, `gauge("…")`.
#[cfg_attr(not(all(feature = "metrics", feature = "consumer")), allow(dead_code))]
pub(crate) enum FigureKind {
    /// A distribution (durations in seconds, sizes).
    histogram,
    /// A level, set to each new value.
    gauge,
}

/// A metric without a snapshot's field (a duration, a size, a lag),
/// recorded under the `metrics` feature: nothing, and no clock read,
/// without it. (With it, durations read the clock even when no recorder
/// is installed: the facade cannot tell a handle that records nowhere.)
#[derive(Debug, Default)]
pub(crate) struct Figure {
    #[cfg(feature = "metrics")]
    handle: Option<FigureHandle>,
}

impl Figure {
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn new(
        queue_id: &str,
        instance: &str,
        kind: FigureKind,
        name: &'static str,
        labels: &'static [(&'static str, &'static str)],
    ) -> Figure {
        Figure {
            #[cfg(feature = "metrics")]
            handle: Some(FigureHandle::register(
                queue_id, instance, kind, name, labels,
            )),
        }
    }

    /// Whether it is recorded: the value need not be worked out otherwise.
    #[cfg(feature = "consumer")]
    pub(crate) fn recorded(&self) -> bool {
        #[cfg(feature = "metrics")]
        {
            self.handle.is_some()
        }
        #[cfg(not(feature = "metrics"))]
        false
    }

    /// The start of a duration to record with [`Figure::since`]: `None`
    /// (no clock read) when it is not recorded.
    #[cfg(feature = "consumer")]
    pub(crate) fn start(&self) -> Option<std::time::Instant> {
        self.recorded().then(std::time::Instant::now)
    }

    /// Records the seconds since `start`.
    #[cfg(feature = "consumer")]
    pub(crate) fn since(&self, start: Option<std::time::Instant>) {
        if let Some(start) = start {
            self.record(start.elapsed().as_secs_f64());
        }
    }

    /// Records `value`.
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn record(&self, value: f64) {
        #[cfg(feature = "metrics")]
        if let Some(handle) = &self.handle {
            handle.record(value);
        }
    }
}

/// The metric handles behind [`Tally`] and [`Figure`], taken from the
/// recorder installed when the counters are made.
#[cfg(feature = "metrics")]
mod handles {
    use std::fmt;

    use ::metrics::{Counter, Gauge};

    use super::{FigureKind, Kind, Spec};

    /// A live counter's metric handle.
    #[derive(Default)]
    pub(crate) enum Metric {
        #[default]
        None,
        Counter(Counter),
        Gauge(Gauge),
    }

    impl fmt::Debug for Metric {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(match self {
                Metric::None => "None",
                Metric::Counter(_) => "Counter",
                Metric::Gauge(_) => "Gauge",
            })
        }
    }

    impl Metric {
        /// Takes the handle `spec` names, from the recorder installed now.
        pub(crate) fn register(queue_id: &str, instance: &str, spec: Option<Spec>) -> Metric {
            let Some(spec) = spec else {
                return Metric::None;
            };
            let instance = matches!(spec.kind, Kind::gauge).then_some(instance);
            let key = crate::metrics::key(queue_id, instance, spec.name, spec.labels);
            ::metrics::with_recorder(|recorder| match spec.kind {
                Kind::counter => {
                    Metric::Counter(recorder.register_counter(&key, &crate::metrics::METADATA))
                }
                Kind::gauge => {
                    Metric::Gauge(recorder.register_gauge(&key, &crate::metrics::METADATA))
                }
            })
        }

        pub(crate) fn add(&self, n: u64) {
            match self {
                Metric::None => {}
                Metric::Counter(counter) => counter.increment(n),
                Metric::Gauge(gauge) => gauge.increment(n as f64),
            }
        }

        pub(crate) fn sub(&self, n: u64) {
            if let Metric::Gauge(gauge) = self {
                gauge.decrement(n as f64);
            }
        }

        #[cfg(feature = "consumer")]
        pub(crate) fn set(&self, v: u64) {
            if let Metric::Gauge(gauge) = self {
                gauge.set(v as f64);
            }
        }
    }

    /// A [`Figure`](crate::counters::Figure)'s handle.
    pub(crate) enum FigureHandle {
        Histogram(::metrics::Histogram),
        Gauge(Gauge),
    }

    impl fmt::Debug for FigureHandle {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(match self {
                FigureHandle::Histogram(_) => "Histogram",
                FigureHandle::Gauge(_) => "Gauge",
            })
        }
    }

    impl FigureHandle {
        /// Takes the handle from the recorder installed now.
        pub(crate) fn register(
            queue_id: &str,
            instance: &str,
            kind: FigureKind,
            name: &'static str,
            labels: &'static [(&'static str, &'static str)],
        ) -> FigureHandle {
            let instance = matches!(kind, FigureKind::gauge).then_some(instance);
            let key = crate::metrics::key(queue_id, instance, name, labels);
            ::metrics::with_recorder(|recorder| match kind {
                FigureKind::histogram => FigureHandle::Histogram(
                    recorder.register_histogram(&key, &crate::metrics::METADATA),
                ),
                FigureKind::gauge => {
                    FigureHandle::Gauge(recorder.register_gauge(&key, &crate::metrics::METADATA))
                }
            })
        }

        pub(crate) fn record(&self, value: f64) {
            match self {
                FigureHandle::Histogram(histogram) => histogram.record(value),
                FigureHandle::Gauge(gauge) => gauge.set(value),
            }
        }
    }
}
#[cfg(feature = "metrics")]
pub(crate) use handles::{FigureHandle, Metric};
