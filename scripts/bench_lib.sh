# Sourced by the benchmark scripts for what they share (not run by itself):
#   start_bench_daemon GPUATTR DIR - `gpuattr daemon` listening on DIR/d.sock (reports in
#                                    DIR/reports) when it returns; its pid in daemon_pid.
# And scripts/bench_medians.py, which their Python summaries import, for the figures of Google
# Benchmark runs repeated in rounds.
start_bench_daemon() {
  local gpuattr="$1" dir="$2"
  mkdir -p "$dir/reports"
  "$gpuattr" daemon --quiet --socket "$dir/d.sock" --reports-dir "$dir/reports" &
  daemon_pid=$!
  for _ in $(seq 100); do [ -S "$dir/d.sock" ] && break; sleep 0.05; done
}
