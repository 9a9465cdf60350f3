#!/usr/bin/env bash
# Load test of `powertrain serve` (docs/benchmarks.md): starts the server on a fresh database,
# registers a dp 2 × pp 4 × tp 2 job with the example profile, then polls GET /schedule with wrk
# (Debian's wrk) from CONNECTIONS keep-alive connections for DURATION, sampling the server's RSS
# every RSS_EVERY_S seconds. Prints wrk's report, the load average and the RSS table.
#   bench/serve_load.sh [BUILD_DIR=build] [DURATION=30s] [CONNECTIONS=1024] [SERVER_THREADS=2]
set -euo pipefail
build=${1:-build}
duration=${2:-30s}
connections=${3:-1024}
threads=${4:-2}
rss_every=${RSS_EVERY_S:-10}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
ulimit -n 65536 2>/dev/null || true
"$build/powertrain" serve --db "$work/plans.db" --listen 127.0.0.1:0 --threads "$threads" \
  --no-access-log --max-pending 8192 >"$work/out" 2>"$work/err" &
server=$!
for _ in $(seq 100); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$work/out")
job=$(curl -sf "$url/register_job" -H 'Content-Type: application/json' \
  -d '{"job_id":"","pp_degree":4,"dp_degree":2,"tp_degree":2,"world_size":16}' | tr -d '"')
enc=${job//+/%2B}
for r in $(seq 0 15); do
  curl -sf "$url/register_rank/$enc" -H 'Content-Type: application/json' -d \
    "{\"rank\":$r,\"dp_rank\":$((r / 8)),\"pp_rank\":$(((r / 2) % 4)),\"tp_rank\":$((r % 2)),\"available_frequencies\":[1410]}" >/dev/null
done
curl -sf "$url/profile/$enc?microbatches=8&p_blocking_w=120" -H 'Content-Type: text/csv' \
  --data-binary @"$here/examples/example_profile.csv" >/dev/null
for _ in $(seq 600); do
  curl -sf "$url/frontier/$enc" | grep -q '"status":"ready"' && break
  sleep 0.1
done
echo "job $job: $(curl -sf "$url/schedule/$enc?rank=0" | head -c 120)..."
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
(
  echo "t_s rss_kib"
  start=$(date +%s)
  while kill -0 "$server" 2>/dev/null; do
    echo "$(($(date +%s) - start)) $(awk '/VmRSS/ {print $2}' /proc/$server/status)"
    sleep "$rss_every"
  done
) >"$work/rss" &
sampler=$!
cpu_ticks() { awk '{print $14 + $15}' "/proc/$server/stat"; }
requests() { curl -sf "$url/metrics" | awk -F'} ' '/requests_total\{route="\/schedule/ {n += $2} END {print n + 0}'; }
ticks0=$(cpu_ticks)
req0=$(requests)
JOB=$enc wrk -t2 -c"$connections" -d"$duration" --latency -s "$here/bench/serve_schedule.lua" "$url"
ticks1=$(cpu_ticks)
req1=$(requests)
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
# Server CPU per request (user + system, measured): independent of how much CPU other processes
# left the server, unlike requests/s on a shared machine.
awk -v t="$((ticks1 - ticks0))" -v hz="$(getconf CLK_TCK)" -v n="$((req1 - req0))" 'BEGIN {
  printf "server CPU: %.1f s for %d /schedule requests = %.1f us per request (measured)\n",
    t / hz, n, (n > 0 ? 1e6 * t / hz / n : 0) }'
curl -sf "$url/metrics" | grep -E 'requests_total\{route="/schedule|in_flight' || true
kill "$sampler" 2>/dev/null || true
echo "server RSS (KiB), sampled every ${rss_every} s:"
cat "$work/rss"
