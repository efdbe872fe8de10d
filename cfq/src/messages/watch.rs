//! `cfq metrics --watch` on a terminal: the queue's backlog (count and
//! bytes) and its oldest message's age, with their change a second and
//! sparklines of the last minutes, redrawn in place until Ctrl-C.
//!
//! The frame is made by pure functions ([`History`], [`frame`]) and drawn
//! with a few ANSI sequences (cursor up, clear line, hide and show the
//! cursor), so it needs no terminal library and its text can be tested.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::time::Duration;

use cf_queues::response::Metrics;
use cf_queues::retry::RetryClass;

use crate::exit::{Code, Failure};
use crate::output::{bytes, now_ms};
use crate::session::Session;
use crate::signals::Interrupts;

/// Samples kept, and drawn: one sparkline character each (2 minutes at
/// the default of one every 2 s).
pub const SAMPLES: usize = 60;

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// One reading of the queue's metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// When it was read, as Unix milliseconds.
    pub at_ms: u64,
    pub count: u64,
    pub bytes: u64,
    /// The oldest message's age in seconds (0 for an empty queue).
    pub oldest_age_s: f64,
}

impl Sample {
    pub fn read(metrics: &Metrics, at_ms: u64) -> Sample {
        let oldest = metrics.oldest_message_timestamp_ms;
        Sample {
            at_ms,
            count: metrics.backlog_count,
            bytes: metrics.backlog_bytes,
            oldest_age_s: if oldest == 0 {
                0.0
            } else {
                at_ms.saturating_sub(oldest) as f64 / 1000.0
            },
        }
    }
}

/// The last [`SAMPLES`] readings.
#[derive(Debug, Default)]
pub struct History {
    samples: VecDeque<Sample>,
}

impl History {
    pub fn push(&mut self, sample: Sample) {
        if self.samples.len() == SAMPLES {
            self.samples.pop_front();
        }
        self.samples.push_back(sample);
    }

    /// The change a second of `value` between the last two readings.
    fn rate(&self, value: impl Fn(&Sample) -> f64) -> Option<f64> {
        let mut last = self.samples.iter().rev();
        let (now, before) = (last.next()?, last.next()?);
        let seconds = now.at_ms.checked_sub(before.at_ms)? as f64 / 1000.0;
        (seconds > 0.0).then(|| (value(now) - value(before)) / seconds)
    }

    fn sparkline(&self, value: impl Fn(&Sample) -> f64) -> String {
        let values: Vec<f64> = self.samples.iter().map(value).collect();
        sparkline(&values)
    }
}

/// One character per value, from `▁` (the lowest of them) to `█` (the
/// highest); all `▁` when they are equal.
pub fn sparkline(values: &[f64]) -> String {
    let (low, high) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    values
        .iter()
        .map(|&v| {
            if high > low {
                let step = ((v - low) / (high - low) * 7.0).round();
                BARS[(step as usize).min(7)]
            } else {
                BARS[0]
            }
        })
        .collect()
}

fn signed(rate: Option<f64>, unit: impl Fn(f64) -> String) -> String {
    match rate {
        None => "-".into(),
        Some(r) if r >= 0.0 => format!("+{}/s", unit(r)),
        Some(r) => format!("-{}/s", unit(-r)),
    }
}

fn count(value: f64) -> String {
    if value >= 100.0 || value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

fn seconds(value: f64) -> String {
    humantime::format_duration(Duration::from_secs(value as u64)).to_string()
}

/// The lines of one frame: a title, the three figures with their change
/// and sparkline, and a status line (the last error, or how to stop).
pub fn frame(queue: &str, every: Duration, history: &History, status: &str) -> Vec<String> {
    let mut lines = vec![format!(
        "{queue}: every {}, the last {} readings",
        humantime::format_duration(every),
        history.samples.len()
    )];
    let Some(last) = history.samples.back() else {
        lines.push("waiting for the first reading".into());
        lines.push(status.to_owned());
        return lines;
    };
    let rows = [
        (
            "backlog",
            format!("{} messages", last.count),
            signed(history.rate(|s| s.count as f64), count),
            history.sparkline(|s| s.count as f64),
        ),
        (
            "bytes",
            bytes(last.bytes),
            signed(history.rate(|s| s.bytes as f64), |b| bytes(b as u64)),
            history.sparkline(|s| s.bytes as f64),
        ),
        (
            "oldest",
            if last.count == 0 {
                "-".into()
            } else {
                seconds(last.oldest_age_s)
            },
            signed(history.rate(|s| s.oldest_age_s), count),
            history.sparkline(|s| s.oldest_age_s),
        ),
    ];
    for (name, value, rate, spark) in rows {
        let mut line = String::new();
        let _ = write!(line, "{name:<8}{value:>16}  {rate:>12}  {spark}");
        lines.push(line);
    }
    lines.push(status.to_owned());
    lines
}

/// The screen's width in columns now (80 when it cannot be read): read at
/// each tick, so that a resized window is drawn to its new width.
fn screen_width() -> usize {
    terminal_size::terminal_size().map_or(80, |(width, _)| usize::from(width.0).max(2))
}

/// One line as drawn: its control characters escaped (an error's text
/// comes from the network), cut to fit one row of `width` columns (one
/// short of it: a line that fills the row leaves some terminals waiting to
/// wrap), so that every line is one screen row.
pub fn fitted(line: &str, width: usize) -> String {
    let line = cf_queues::error::escape_controls(line);
    crate::output::shorten(&line, width.saturating_sub(1).max(1))
}

/// The screen rows `lines` (each `n` characters) take at `width` columns:
/// what to move up over, should the window have narrowed since they were
/// drawn and the terminal wrapped them.
pub fn rows(drawn: &[usize], width: usize) -> usize {
    drawn.iter().map(|&n| n.div_ceil(width.max(1)).max(1)).sum()
}

/// Redraws the frame over the previous one (`drawn`: the lengths of its
/// lines), each line fitted to `width`; the lengths drawn.
fn draw(lines: &[String], drawn: &[usize], width: usize) -> io::Result<Vec<usize>> {
    let mut out = io::stdout().lock();
    let up = rows(drawn, width);
    if up > 0 {
        write!(out, "\x1b[{up}A")?;
    }
    let mut lengths = Vec::with_capacity(lines.len());
    for line in lines {
        let line = fitted(line, width);
        lengths.push(line.chars().count());
        write!(out, "\r\x1b[2K{line}\n")?;
    }
    // Whatever a taller frame before left below this one.
    write!(out, "\x1b[J")?;
    out.flush()?;
    Ok(lengths)
}

/// Shows the cursor again however the view ends.
struct Cursor;

impl Cursor {
    fn hide() -> Cursor {
        let mut out = io::stdout().lock();
        let _ = out.write_all(b"\x1b[?25l").and_then(|()| out.flush());
        Cursor
    }
}

impl Drop for Cursor {
    fn drop(&mut self) {
        let mut out = io::stdout().lock();
        let _ = out.write_all(b"\x1b[?25h").and_then(|()| out.flush());
    }
}

/// Runs the live view until Ctrl-C (exit 0), or an error that would only
/// fail again.
pub async fn live(session: &Session, every: Duration) -> Result<Code, Failure> {
    let mut interrupts = Interrupts::watch()?;
    let _cursor = Cursor::hide();
    let mut history = History::default();
    let mut drawn = Vec::new();
    let mut next = tokio::time::Instant::now();
    loop {
        let started = tokio::time::Instant::now();
        // Ctrl-C is heard while a reading is on its way, however long the
        // server takes (a reading dropped unanswered changes nothing).
        let reading = tokio::select! {
            reading = session.queue.metrics() => reading,
            () = interrupts.reached(1) => return Ok(Code::Ok),
        };
        let status = match reading {
            Ok(metrics) => {
                history.push(Sample::read(&metrics, now_ms()));
                "Ctrl-C to stop".to_owned()
            }
            Err(e) if e.retry_class() != RetryClass::Permanent => {
                format!(
                    "error: {} (watching on; Ctrl-C to stop)",
                    session.fail(&e).message
                )
            }
            Err(e) => return Err(session.fail(&e)),
        };
        let lines = frame(session.queue.id(), every, &history, &status);
        drawn = draw(&lines, &drawn, screen_width()).map_err(Failure::stdout)?;
        // The next reading `every` after this one started, never sooner:
        // a reading that came late, or a process that was stopped, skips
        // the ticks it missed instead of catching them up in a burst (at
        // most one reading an interval, whatever happened).
        next = (next + every).max(started + every);
        tokio::select! {
            () = tokio::time::sleep_until(next) => {}
            () = interrupts.reached(1) => return Ok(Code::Ok),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_s: u64, count: u64, bytes: u64, oldest_age_s: f64) -> Sample {
        Sample {
            at_ms: at_s * 1000,
            count,
            bytes,
            oldest_age_s,
        }
    }

    /// A history of these samples, oldest first.
    fn history_of(samples: impl IntoIterator<Item = Sample>) -> History {
        let mut history = History::default();
        for sample in samples {
            history.push(sample);
        }
        history
    }

    #[test]
    fn a_sparkline_spans_its_lowest_to_its_highest_value() {
        assert_eq!(sparkline(&[0.0, 7.0, 3.5, 1.0]), "▁█▅▂");
        assert_eq!(sparkline(&[5.0, 5.0]), "▁▁");
        assert_eq!(sparkline(&[]), "");
    }

    #[test]
    fn a_frame_shows_the_figures_their_change_and_their_history() {
        let history = history_of([sample(0, 100, 5_000, 10.0), sample(2, 120, 6_000, 12.0)]);
        let lines = frame("orders", Duration::from_secs(2), &history, "Ctrl-C to stop");
        assert_eq!(
            lines,
            [
                "orders: every 2s, the last 2 readings",
                "backlog     120 messages         +10/s  ▁█",
                "bytes             6.0 KB      +500 B/s  ▁█",
                "oldest               12s          +1/s  ▁█",
                "Ctrl-C to stop",
            ]
        );
    }

    #[test]
    fn a_line_is_one_row_escaped_and_a_narrowed_window_is_counted_in_rows() {
        let long = format!("error: {}", "x".repeat(250));
        let cut = fitted(&long, 80);
        assert_eq!(cut.chars().count(), 79, "{cut}");
        assert!(cut.ends_with('…'));
        let hostile = fitted("error: \u{1b}]52;c;aGk=\u{7}\u{1b}[2J", 80);
        assert_eq!(hostile, "error: \\u{1b}]52;c;aGk=\\u{7}\\u{1b}[2J");
        // Drawn 79 wide, then the window narrowed to 40: two rows each.
        assert_eq!(rows(&[79, 10, 79], 80), 3);
        assert_eq!(rows(&[79, 10, 79], 40), 5);
        assert_eq!(rows(&[0], 40), 1, "an empty line is a row");
    }

    #[test]
    fn the_history_keeps_the_last_samples_only() {
        let history = history_of((0..(SAMPLES as u64 + 5)).map(|i| sample(i, i, 0, 0.0)));
        assert_eq!(history.samples.len(), SAMPLES);
        assert_eq!(history.samples.front().map(|s| s.count), Some(5));
        assert_eq!(history.rate(|s| s.count as f64), Some(1.0));
    }

    #[test]
    fn a_queue_emptied_shows_no_age_and_a_falling_backlog() {
        let history = history_of([sample(0, 10, 100, 30.0), sample(1, 0, 0, 0.0)]);
        let lines = frame("q", Duration::from_secs(1), &history, "");
        assert!(lines[1].contains("-10/s"), "{lines:?}");
        assert!(
            lines[3].starts_with("oldest                 -"),
            "{lines:?}"
        );
    }
}
