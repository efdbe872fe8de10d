# Sourced by the conformance tasks: `cfq emulator` in the background, read
# by the rules of version 1 of its start-up lines (its stdout: lines read one
# at a time, surrounding whitespace stripped; `press Ctrl-C to stop` is the
# ready line and the last of them; an `export NAME=VALUE` value is the rest
# of its line; unknown lines are skipped; `start-up lines: version N` with
# another N is refused; no version line is version 1). Stderr is for people.

# start_emulator LOG TOKEN: starts `$cfq_bin emulator --listen 127.0.0.1:0
# --token TOKEN` (its stdout in LOG, its stderr beside it), waits up to 10 s
# for its ready line, and sets base_url and account; an EXIT trap stops it.
start_emulator() {
    local log=$1 token=$2
    local errors=${log%.log}.stderr.log line version="" ready=""
    "$cfq_bin" emulator --listen 127.0.0.1:0 --token "$token" >"$log" 2>"$errors" &
    emulator_pid=$!
    trap 'kill "$emulator_pid" 2>/dev/null || true' EXIT
    base_url=""
    account=""
    for _ in $(seq 100); do
        # A line still being written has no newline yet: `read` leaves it for the next pass.
        while IFS= read -r line; do
            line=${line#"${line%%[![:space:]]*}"}
            line=${line%"${line##*[![:space:]]}"}
            case $line in
                "press Ctrl-C to stop") ready=1 && break ;;
                "start-up lines: version "*) version=${line#"start-up lines: version "} ;;
                "export CLOUDFLARE_BASE_URL="*) base_url=${base_url:-${line#*=}} ;;
                "export CLOUDFLARE_ACCOUNT_ID="*) account=${account:-${line#*=}} ;;
            esac
        done <"$log"
        if [ -n "$version" ] && [ "$version" != 1 ]; then
            echo "cfq emulator prints start-up lines of version $version; this task reads version 1" >&2
            exit 1
        fi
        [ -z "$ready" ] || break
        kill -0 "$emulator_pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$ready" ] || [ -z "$base_url" ] || [ -z "$account" ]; then
        echo "cfq emulator did not start:"
        cat "$log" "$errors"
        exit 1
    fi
}
