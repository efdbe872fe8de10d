//! The queue page's charts: samples of a queue's backlog and of what
//! happened to it, taken while some page of that queue is open (its script
//! asks for them), at most one a second, for at most the last 10 minutes.
//! A queue no page asked about for [`IDLE`] is forgotten, and the broker
//! stops counting for it.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::state::view::Counts;

/// How long samples are kept.
pub(crate) const KEPT: Duration = Duration::from_secs(600);
/// The shortest time between two samples.
const EVERY: Duration = Duration::from_secs(1);
/// How long a queue is watched after its page last asked.
pub(crate) const IDLE: Duration = Duration::from_secs(30);

/// What a sample reads off the broker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Reading {
    pub backlog_count: u64,
    pub backlog_bytes: u64,
    pub counts: Counts,
    pub dead_lettered: u64,
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    taken: Instant,
    /// The emulator's clock (Unix ms), for the chart's time axis.
    at_ms: u64,
    reading: Reading,
}

/// One point of a chart: the backlog then, and the rates since the sample
/// before it.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub(crate) struct Point {
    pub at_ms: u64,
    pub backlog_count: u64,
    pub backlog_bytes: u64,
    pub pushed: f64,
    pub pulled: f64,
    pub acked: f64,
    pub retried: f64,
    pub dead_lettered: f64,
}

#[derive(Debug, Default)]
struct Watch {
    asked: Option<Instant>,
    samples: VecDeque<Sample>,
}

/// The watched queues' samples, by queue id.
#[derive(Debug, Default)]
pub(crate) struct Series {
    watches: HashMap<String, Watch>,
}

impl Series {
    /// Whether queue `id` is due a sample at `now`.
    pub(crate) fn due(&self, id: &str, now: Instant) -> bool {
        self.watches
            .get(id)
            .and_then(|w| w.samples.back())
            .is_none_or(|last| now.duration_since(last.taken) >= EVERY)
    }

    /// Notes that a page of queue `id` asked at `now`, with a new sample if
    /// one was taken; gives the points to draw.
    pub(crate) fn asked(
        &mut self,
        id: &str,
        now: Instant,
        sample: Option<(u64, Reading)>,
    ) -> Vec<Point> {
        let watch = self.watches.entry(id.to_owned()).or_default();
        watch.asked = Some(now);
        if let Some((at_ms, reading)) = sample {
            watch.samples.push_back(Sample {
                taken: now,
                at_ms,
                reading,
            });
        }
        while watch
            .samples
            .front()
            .is_some_and(|s| now.duration_since(s.taken) > KEPT)
        {
            watch.samples.pop_front();
        }
        points(&watch.samples)
    }

    /// Forgets the queues no page asked about for [`IDLE`]; gives their ids.
    pub(crate) fn forget_idle(&mut self, now: Instant) -> Vec<String> {
        let idle: Vec<String> = self
            .watches
            .iter()
            .filter(|(_, w)| w.asked.is_none_or(|a| now.duration_since(a) > IDLE))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &idle {
            self.watches.remove(id);
        }
        idle
    }
}

fn points(samples: &VecDeque<Sample>) -> Vec<Point> {
    samples
        .iter()
        .zip(samples.iter().skip(1))
        .map(|(before, after)| {
            let seconds = after
                .taken
                .duration_since(before.taken)
                .as_secs_f64()
                .max(1e-3);
            let rate = |f: fn(&Reading) -> u64| {
                f(&after.reading).saturating_sub(f(&before.reading)) as f64 / seconds
            };
            Point {
                at_ms: after.at_ms,
                backlog_count: after.reading.backlog_count,
                backlog_bytes: after.reading.backlog_bytes,
                pushed: rate(|r| r.counts.pushed),
                pulled: rate(|r| r.counts.pulled),
                acked: rate(|r| r.counts.acked),
                retried: rate(|r| r.counts.retried),
                dead_lettered: rate(|r| r.dead_lettered),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(count: u64, pushed: u64) -> Reading {
        Reading {
            backlog_count: count,
            backlog_bytes: count * 10,
            counts: Counts {
                pushed,
                ..Counts::default()
            },
            dead_lettered: 0,
        }
    }

    #[test]
    fn points_are_rates_between_samples_a_second_apart_at_least() {
        let mut series = Series::default();
        let t0 = Instant::now();
        assert!(series.due("q", t0));
        assert!(series.asked("q", t0, Some((0, reading(0, 0)))).is_empty());
        assert!(!series.due("q", t0 + Duration::from_millis(500)));
        let t1 = t0 + Duration::from_secs(2);
        assert!(series.due("q", t1));
        let points = series.asked("q", t1, Some((2_000, reading(6, 10))));
        assert_eq!(points.len(), 1);
        assert_eq!((points[0].backlog_count, points[0].pushed), (6, 5.0));
    }

    #[test]
    fn samples_older_than_ten_minutes_and_idle_queues_are_forgotten() {
        let mut series = Series::default();
        let t0 = Instant::now();
        series.asked("q", t0, Some((0, reading(0, 0))));
        series.asked("q", t0 + Duration::from_secs(1), Some((1, reading(1, 1))));
        let late = t0 + KEPT + Duration::from_secs(2);
        let points = series.asked("q", late, Some((2, reading(2, 2))));
        assert!(points.is_empty(), "only the newest sample is left");
        assert!(series.forget_idle(late + Duration::from_secs(1)).is_empty());
        assert_eq!(
            series.forget_idle(late + IDLE + Duration::from_secs(1)),
            ["q"]
        );
        assert!(series.due("q", late + IDLE + Duration::from_secs(1)));
    }
}
