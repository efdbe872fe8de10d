#!/usr/bin/env bash
# The consumer's instruction count: its instructions per message
# against the bare pull + ack loop's, and against the consumer of a parent
# commit, each the median of three runs under callgrind.
#
# The workload is the consumer_at_a_distance bench's callgrind mode
# (CFQ_BENCH_CALLGRIND=1): a fixed number of messages at no distance and
# without limits, on a current_thread runtime; the emulator serves from a
# child process that valgrind does not follow, so only the client's
# instructions are counted.
#
# The parent commit is built in a worktree of its own with a target
# directory of its own, so that neither build disturbs the other. A parent
# with the bench under its former name (consumer_distance) builds that one;
# a parent without it gets this commit's copy, and the test kit it uses
# (its callgrind path must then compile against the parent's consumer).
#
# Usage:
#   scripts/callgrind-consumer.sh [N | REV]   # the parent is HEAD~N (default 1), or REV
#
# Lines of the bench marked `callgrind: not in older consumers` are removed
# from the parent's copy when its consumer lacks `max_pulls_in_flight`.
#
# Environment: CFQ_BENCH_MESSAGES (default 3000) messages per run, RUNS
# (default 3) runs of each, WORK (default target/callgrind) for the parent's
# worktree, its target directory and the callgrind output.
# Needs valgrind, python3 and jq.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BACK=${1:-1}
RUNS=${RUNS:-3}
export CFQ_BENCH_MESSAGES=${CFQ_BENCH_MESSAGES:-3000}
WORK=${WORK:-$ROOT/target/callgrind}
if [[ "$BACK" =~ ^[0-9]+$ ]]; then
    PARENT=$(git rev-parse "HEAD~$BACK")
else
    PARENT=$(git rev-parse "$BACK")
fi
mkdir -p "$WORK"

# The bench executable of the tree in $1, built into the target directory $2:
# the bench under its name in that tree.
build() {
    local bench=consumer_at_a_distance
    if ! grep -q "name = \"$bench\"" "$1/Cargo.toml"; then bench=consumer_distance; fi
    (cd "$1" && CARGO_TARGET_DIR="$2" cargo bench --bench "$bench" \
        --features consumer --no-run --message-format=json) |
        jq -r --arg bench "$bench" 'select(.reason == "compiler-artifact" and .target.name == $bench and .executable != null) | .executable' |
        tail -n 1
}

PARENT_TREE=$WORK/parent-$PARENT
if [ ! -d "$PARENT_TREE" ]; then
    git worktree add --detach "$PARENT_TREE" "$PARENT" >/dev/null
fi
if [ ! -d "$PARENT_TREE/benches/consumer_at_a_distance" ] &&
    [ ! -d "$PARENT_TREE/benches/consumer_distance" ]; then
    cp -r "$ROOT/benches/consumer_at_a_distance" "$PARENT_TREE/benches/"
    if ! grep -q 'fn max_pulls_in_flight' "$PARENT_TREE/src/consumer/builder.rs"; then
        sed -i '/callgrind: not in older consumers/d' "$PARENT_TREE"/benches/consumer_at_a_distance/*.rs
    fi
    if [ ! -d "$PARENT_TREE/testkit" ]; then
        cp -r "$ROOT/testkit" "$PARENT_TREE/"
        sed -i 's/^members = \[/members = ["testkit", /' "$PARENT_TREE/Cargo.toml"
        sed -i 's/^\[dev-dependencies\]$/[dev-dependencies]\ncf-queues-testkit = { path = "testkit" }/' "$PARENT_TREE/Cargo.toml"
    fi
    printf '\n[[bench]]\nname = "consumer_at_a_distance"\npath = "benches/consumer_at_a_distance/main.rs"\nharness = false\nrequired-features = ["consumer"]\n' \
        >>"$PARENT_TREE/Cargo.toml"
fi

echo "building HEAD ($(git rev-parse --short HEAD)) and the parent ${PARENT:0:7}..." >&2
CURRENT_BIN=$(build "$ROOT" "${CARGO_TARGET_DIR:-$ROOT/target}")
PARENT_BIN=$(build "$PARENT_TREE" "$WORK/parent-target")

# Instructions of one run of side $2 of executable $1, output file $3.
instructions() {
    CFQ_BENCH_CALLGRIND=1 CFQ_BENCH_ONLY="$2" \
        valgrind --tool=callgrind --callgrind-out-file="$3" "$1" >"$3.log" 2>&1
    awk '/^(summary|totals):/ { print $2; exit }' "$3"
}

declare -A COUNTS
for run in $(seq 1 "$RUNS"); do
    for side in consumer bare parent; do
        bin=$CURRENT_BIN
        what=$side
        if [ "$side" = parent ]; then
            bin=$PARENT_BIN
            what=consumer
        fi
        n=$(instructions "$bin" "$what" "$WORK/$side.$run.out")
        echo "run $run: $side $n instructions" >&2
        COUNTS[$side]="${COUNTS[$side]:-} $n"
    done
done

python3 - "$CFQ_BENCH_MESSAGES" "${COUNTS[consumer]}" "${COUNTS[bare]}" "${COUNTS[parent]}" <<'EOF'
import statistics, sys
messages = int(sys.argv[1])
consumer, bare, parent = ([int(n) / messages for n in arg.split()] for arg in sys.argv[2:5])
c, b, p = statistics.median(consumer), statistics.median(bare), statistics.median(parent)
print(f"instructions per message, median of {len(consumer)} runs of {messages:,} messages:")
print(f"  consumer {c:,.0f}   bare pull + ack loop {b:,.0f}   parent's consumer {p:,.0f}")
print(f"  consumer/bare {c / b:.3f} (goal <= 1.35)   consumer/parent {c / p:.3f} (goal <= 1.10)")
EOF
