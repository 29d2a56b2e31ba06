#!/usr/bin/env bash
# `npm run bench:scale` at a small and a large scale in turn, ROUNDS times each (small, large, small, large, ...), for
# machines whose speed drifts between runs: the figure of each case is the median, over the rounds, of the cost at
# the large scale over the cost at the small one measured just before it (cost = 1 / operations a second).
#   BENCH_DATABASE_URL=... test/bench/scale-rounds.sh      # SMALL=10000 LARGE=10000000 ROUNDS=3
# The other SCALE_* settings (proportions, requests, concurrency) pass through to each run; each scale's database is
# seeded by its first run and kept (test/bench/scale.ts).
set -euo pipefail
PROJECT=$(cd "$(dirname "$0")/../.." && pwd)
SMALL=${SMALL:-10000}; LARGE=${LARGE:-10000000}; ROUNDS=${ROUNDS:-3}
OUT=${OUT:-$PROJECT/test/.tmp/scale-rounds-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
cd "$PROJECT"
for round in $(seq 1 "$ROUNDS"); do
  for scale in "$SMALL" "$LARGE"; do
    echo "== round $round, SCALE=$scale"
    SCALE=$scale SCALE_RESULTS="$OUT/$scale-$round.json" npm run --silent bench:scale | tee "$OUT/$scale-$round.txt"
  done
done
node -e '
const [out, small, large, rounds] = process.argv.slice(1);
const read = (scale, round) => JSON.parse(require("fs").readFileSync(`${out}/${scale}-${round}.json`, "utf8"));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const runs = Array.from({ length: +rounds }, (_, i) => [read(small, i + 1), read(large, i + 1)]);
console.log(`| case | ops/s at ${small} (median) | ops/s at ${large} (median) | cost ratio, median of ${rounds} rounds | per round |`);
console.log("|---|---:|---:|---:|---|");
// A case named by a size ("a group of 10000 members") is the same case at either scale.
const key = (name) => name.replace(/\d+/g, "N");
for (const { name } of runs[0][1].results) {
  const at = (run) => run.results.find((r) => key(r.name) === key(name))?.perSecond;
  const pairs = runs.map(([s, l]) => [at(s), at(l)]).filter(([s, l]) => s && l);
  const ratios = pairs.map(([s, l]) => s / l);
  console.log(`| ${name} | ${median(pairs.map((p) => p[0])).toFixed(0)} | ${median(pairs.map((p) => p[1])).toFixed(0)} | ${median(ratios).toFixed(2)}x | ${ratios.map((r) => r.toFixed(2)).join(", ")} |`);
}
const peaks = runs.map(([s, l]) => `${s.exportPeakMiB.toFixed(1)} / ${l.exportPeakMiB.toFixed(1)} MiB (${s.exportRows} / ${l.exportRows} rows)`);
console.log(`\nCSV export, resident memory added while it streamed (small / large): ${peaks.join("; ")}`);
' "$OUT" "$SMALL" "$LARGE" "$ROUNDS" | tee "$OUT/summary.md"
