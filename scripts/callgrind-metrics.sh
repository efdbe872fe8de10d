#!/usr/bin/env bash
# What the `metrics` feature costs the consumer, in instructions per message
# (callgrind): the consumer_at_a_distance bench's callgrind workload built
# without the feature, with it and no recorder, and with it and the
# Prometheus exporter's recorder installed (the example's), each the median
# of three runs. Goals: at most 1.02x and 1.10x the consumer without it.
#
# The two builds differ only in features, so they share one target
# directory (cargo keeps them apart by their feature hashes). Only what runs
# inside the runtime's `block_on` is counted (the workload: the client, the
# consumer and its tasks), on all three sides alike: the exporter's one-time
# set-up, before it, would otherwise be spread over the messages.
#
# Usage: scripts/callgrind-metrics.sh
# Environment: CFQ_BENCH_MESSAGES (default 3000), RUNS (default 3), WORK
# (default target/callgrind) for the callgrind output. Needs valgrind,
# python3 and jq.
set -euo pipefail

cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
export CFQ_BENCH_MESSAGES=${CFQ_BENCH_MESSAGES:-3000}
WORK=${WORK:-$(pwd)/target/callgrind}
mkdir -p "$WORK"

# The bench executable built with features $1.
build() {
    cargo bench --bench consumer_at_a_distance --features "$1" --no-run --message-format=json |
        jq -r 'select(.reason == "compiler-artifact" and .target.name == "consumer_at_a_distance" and .executable != null) | .executable' |
        tail -n 1
}

echo "building without and with the metrics feature..." >&2
OFF_BIN=$(build consumer)
ON_BIN=$(build consumer,metrics)

# Instructions of one run of side $2 of executable $1, output file $3.
instructions() {
    CFQ_BENCH_CALLGRIND=1 CFQ_BENCH_ONLY="$2" \
        valgrind --tool=callgrind --toggle-collect='*Runtime::block_on*' \
        --callgrind-out-file="$3" "$1" >"$3.log" 2>&1
    awk '/^(summary|totals):/ { print $2; exit }' "$3"
}

declare -A COUNTS
for run in $(seq 1 "$RUNS"); do
    for side in off on prometheus; do
        case $side in
            off) bin=$OFF_BIN what=consumer ;;
            on) bin=$ON_BIN what=consumer ;;
            prometheus) bin=$ON_BIN what=prometheus ;;
        esac
        n=$(instructions "$bin" "$what" "$WORK/metrics-$side.$run.out")
        echo "run $run: $side $n instructions" >&2
        COUNTS[$side]="${COUNTS[$side]:-} $n"
    done
done

python3 - "$CFQ_BENCH_MESSAGES" "${COUNTS[off]}" "${COUNTS[on]}" "${COUNTS[prometheus]}" <<'PY'
import statistics, sys
messages = int(sys.argv[1])
off, on, prom = (statistics.median(int(n) / messages for n in arg.split()) for arg in sys.argv[2:5])
print(f"instructions per message, median of the runs of {messages:,} messages:")
print(f"  feature off {off:,.0f}   on, no recorder {on:,.0f}   on, Prometheus recorder {prom:,.0f}")
print(f"  on/off {on / off:.3f} (goal <= 1.02)   prometheus/off {prom / off:.3f} (goal <= 1.10)")
PY
