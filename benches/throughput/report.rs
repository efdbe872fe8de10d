//! The table printed at the end of the run, one section per measurement.

use crate::cycle::{REPEATS, Throughput};
use crate::distance::{Distance, ROUND_TRIP};
use crate::memory::{BACKLOG_BODY_BYTES, Figures, GLIBC_TUNABLES, Memory};
use cf_queues_testkit::bench::{BATCH, MB, percent, thousands};

/// The goal for the end-to-end figure on a 2-core machine.
const GOAL_MSG_PER_S: f64 = 50_000.0;
/// Width of the label column.
const WIDTH: usize = 38;
const DEFAULT_MEMORY_LABEL: &str = if cfg!(target_env = "gnu") {
    "memory, default glibc malloc"
} else {
    "memory, default allocator"
};
const TUNED_MEMORY_LABEL: &str = "memory, glibc tunables (arena_max=1…)";

pub(crate) struct Report<'a> {
    pub cores: usize,
    pub messages: usize,
    pub rounds: usize,
    pub throughput: &'a Throughput,
    pub distance: &'a Distance,
    pub memory: &'a Figures,
}

pub(crate) fn print(r: &Report<'_>) {
    throughput(r);
    distance(r.distance);
    memory(r.memory);
}

fn distance(d: &Distance) {
    let rtt = ROUND_TRIP.as_secs_f64();
    // One pull and one ack per batch, one call at a time.
    let bound = BATCH as f64 / (2.0 * rtt);
    println!();
    println!(
        "pull + ack loop at a {} ms round trip, one call at a time ({} messages per drain; medians of {REPEATS})",
        ROUND_TRIP.as_millis(),
        thousands(d.messages as f64)
    );
    println!(
        "{:<WIDTH$}: {:>7} msg/s   ratio client/base = {:.2}",
        "via cf_queues client",
        thousands(d.client),
        d.client / d.raw
    );
    println!(
        "{:<WIDTH$}: {:>7} msg/s   {:.0}% of 100 messages per 2 round trips ({} msg/s); Cloudflare allows 5,000",
        "via bare reqwest (base)",
        thousands(d.raw),
        percent_f(d.raw, bound),
        thousands(bound)
    );
}

fn percent_f(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

fn throughput(r: &Report<'_>) {
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let client = &r.throughput.client;
    let raw = &r.throughput.raw;
    let [push, pull, ack] = client.phases.percentages();
    let [cpush, cpull, cack] = client.phases.micros_per_request();
    let [rpush, rpull, rack] = raw.phases.micros_per_request();
    let ratio = client.rate() / raw.rate();
    println!();
    println!(
        "cf-queues emulator throughput ({profile}, loopback, {} cores)",
        r.cores
    );
    println!(
        "{:<WIDTH$}: {} messages = {} rounds of push {BATCH} / pull {BATCH} / ack {BATCH}; medians of {REPEATS}",
        "per run",
        thousands(r.messages as f64),
        r.rounds
    );
    println!(
        "{:<WIDTH$}: {:>7} msg/s   [push {push:.0}% / pull {pull:.0}% / ack {ack:.0}% of time]",
        "end to end via cf_queues client",
        thousands(client.rate())
    );
    println!(
        "{:<WIDTH$}: {:>7} msg/s   ratio client/base = {ratio:.2}",
        "same cycle via bare reqwest (base)",
        thousands(raw.rate())
    );
    println!(
        "{:<WIDTH$}: push {cpush:.0} vs {rpush:.0} | pull {cpull:.0} vs {rpull:.0} | ack {cack:.0} vs {rack:.0}",
        "µs per request, client vs base"
    );
    // Client variants scale against the single client; the base variant
    // against the single base, and the 4-worker client against it.
    let base_4 = r
        .throughput
        .variants
        .iter()
        .find(|(name, _)| name.ends_with("bare reqwest"))
        .map(|(_, run)| run.rate());
    for (name, run) in &r.throughput.variants {
        let rate = run.rate();
        let extra = if name.ends_with("bare reqwest") {
            format!("x{:.2} of 1 base worker", rate / raw.rate())
        } else if let (true, Some(base)) = (name.starts_with("4 workers, own"), base_4) {
            format!(
                "x{:.2} of 1 worker; ratio client/base = {:.2}",
                rate / client.rate(),
                rate / base
            )
        } else {
            format!("x{:.2} of 1 worker", rate / client.rate())
        };
        println!("{name:<WIDTH$}: {:>7} msg/s   {extra}", thousands(rate));
    }
    let verdict = if client.rate() >= GOAL_MSG_PER_S {
        "met"
    } else {
        "NOT met"
    };
    println!(
        "{:<WIDTH$}: {verdict} ({} msg/s end to end; base reaches {:.2}x the goal)",
        format!("goal {} msg/s", thousands(GOAL_MSG_PER_S)),
        thousands(client.rate()),
        raw.rate() / GOAL_MSG_PER_S
    );
}

fn memory(figures: &Figures) {
    match figures {
        Figures::Skipped(why) => println!("memory: skipped, cannot read this process's RSS: {why}"),
        Figures::Measured {
            default: memory,
            tuned,
        } => {
            let first = &memory.cycles[0];
            println!(
                "{:<WIDTH$}: {} messages, {BACKLOG_BODY_BYTES} B bodies ({:.1} MB of bodies), filled and drained twice; RSS of the whole process, client included",
                "memory backlog",
                thousands(memory.messages as f64),
                first.backlog_bytes as f64 / MB
            );
            memory_rows(DEFAULT_MEMORY_LABEL, memory);
            match tuned {
                Err(e) => println!("{TUNED_MEMORY_LABEL:<WIDTH$}: not measured ({e})"),
                Ok(tuned) => {
                    memory_rows(TUNED_MEMORY_LABEL, tuned);
                    println!(
                        "  (child process of this bench, GLIBC_TUNABLES={GLIBC_TUNABLES}: \
                         glibc returns the heap top and blocks >= 128 KiB once free; free chunks below live ones still count in RSS)"
                    );
                }
            }
        }
    }
}

/// One memory row of the table, then a line per fill / drain cycle.
fn memory_rows(label: &str, memory: &Memory) {
    let [first, second] = &memory.cycles;
    let per_message = first.growth() as f64 / memory.messages.max(1) as f64;
    let peak_change = second.filled as f64 - first.filled as f64;
    println!(
        "{label:<WIDTH$}: +{per_message:.0} B RSS per backlog message; returned after drain {:.1} of {:.1} MB ({:.0}%); \
         2nd cycle peak {:+.1} MB vs 1st ({}), ends {:+.1} MB vs start",
        first.returned() as f64 / MB,
        first.growth() as f64 / MB,
        percent(first.returned(), first.growth()),
        peak_change / MB,
        if peak_change <= 0.1 * first.growth() as f64 {
            "memory reused"
        } else {
            "higher peak"
        },
        (second.drained as f64 - first.before as f64) / MB
    );
    for (i, c) in memory.cycles.iter().enumerate() {
        println!(
            "  cycle {}: RSS {:.1} MB -> full {:.1} MB (+{:.1} MB, fill {:.1} s) -> drained {:.1} MB (drain {:.1} s): returned {:.1} MB ({:.0}%)",
            i + 1,
            c.before as f64 / MB,
            c.filled as f64 / MB,
            c.growth() as f64 / MB,
            c.fill_time.as_secs_f64(),
            c.drained as f64 / MB,
            c.drain_time.as_secs_f64(),
            c.returned() as f64 / MB,
            percent(c.returned(), c.growth())
        );
    }
}
