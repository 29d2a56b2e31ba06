#!/usr/bin/env bash
# Tessera and the peer (oidc-provider, ../shared/bench) side by side in short alternating rounds, for machines
# whose speed drifts from minute to minute: run-pair.sh measures each server for minutes on end, one after the
# other, so a slow minute lands on one of them; here all three servers run at once (pinned to CPU 0 with one
# scratch PostgreSQL, idle while another is measured) and each round measures the peer and Tessera a few seconds
# apart, first one then the other in turn. The figure is the median of the rounds' own ratios.
#   test/bench/pair-rounds.sh                  # ROUNDS=9 D=4 C=16 SCENARIOS=flow,exchange,refresh,userinfo
# Needs ../shared/bench with npm ci done there and in its peer-oidc-provider (the README's Performance section);
# docs/performance.md has what the rounds measured.
set -euo pipefail
PROJECT=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=${BENCH:-$PROJECT/../shared/bench}
ROUNDS=${ROUNDS:-9}; D=${D:-4}; C=${C:-16}; SCENARIOS=${SCENARIOS:-flow,exchange,refresh,userinfo}
export PG_PORT=${PG_PORT:-5433}
ROUNDS_KIND=rounds
. "$PROJECT/test/bench/rounds-setup.sh"

for mode in jwt opaque; do
  port=$([ $mode = jwt ] && echo 4100 || echo 4101)
  url=$("$PNODE" peer-oidc-provider/pg-admin.mjs create "$ADMIN_URL" "rounds_peer_$mode")
  PEER_STORE=postgres AT_FORMAT=$mode PORT=$port DATABASE_URL=$url taskset -c 0 "$PNODE" peer-oidc-provider/server.mjs \
    > "$OUT/server-peer-$mode.log" 2>&1 &
  PIDS+=($!)
  ready "http://127.0.0.1:$port/.well-known/openid-configuration"
done

TURL=http://127.0.0.1:4300
url=$("$PNODE" peer-oidc-provider/pg-admin.mjs create "$ADMIN_URL" rounds_tessera)
start_tessera tessera 4300 "$url"
CLIENT_ID=$STARTED_CLIENT_ID; CLIENT_SECRET=$STARTED_CLIENT_SECRET

# One measurement: ops/s of one scenario against one server.
measure() { # who scenario
  local who=$1 scenario=$2
  if [ "$who" = tessera ]; then
    env TARGET_URL=$TURL CLIENT_ID="$CLIENT_ID" CLIENT_SECRET="$CLIENT_SECRET" TESSERA_EMAIL=$EMAIL TESSERA_PASSWORD="$PASSWORD" \
      TESSERA_LOGIN=session taskset -c 1 node oidc-load.mjs --target targets/tessera.mjs -c "$C" -d "$D" --warmup 1 -s "$scenario" --no-sanity
  else
    local mode; mode=$([ "$scenario" = userinfo ] && echo opaque || echo jwt)
    env TARGET_URL=http://127.0.0.1:$([ $mode = jwt ] && echo 4100 || echo 4101) AT_FORMAT=$mode \
      taskset -c 1 node oidc-load.mjs --target targets/peer-oidc-provider.mjs -c "$C" -d "$D" --warmup 1 -s "$scenario" --no-sanity
  fi | awk -v s="$scenario" '$1 == s { print $2, ($0 ~ / err 0 /) ? "ok" : "ERRORS" }'
}

echo "scenario round peer tessera" > "$OUT/rounds.txt"
for scenario in ${SCENARIOS//,/ }; do
  for round in $(seq 1 "$ROUNDS"); do
    order="peer tessera"; [ $((round % 2)) = 0 ] && order="tessera peer"
    declare -A got=()
    for who in $order; do got[$who]=$(measure "$who" "$scenario"); done
    echo "$scenario $round ${got[peer]% *} ${got[tessera]% *}" | tee -a "$OUT/rounds.txt"
    [[ "${got[peer]} ${got[tessera]}" == *ERRORS* ]] && echo "!! errors in $scenario round $round" | tee -a "$OUT/rounds.txt"
  done
done

node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").slice(1).filter((l) => !l.startsWith("!!")).map((l) => l.split(" "));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
console.log("| scenario | rounds | peer median ops/s | Tessera median ops/s | median of the rounds\x27 ratios | lowest, highest |");
console.log("|---|---:|---:|---:|---:|---|");
for (const s of [...new Set(rows.map((r) => r[0]))]) {
  const mine = rows.filter((r) => r[0] === s), ratios = mine.map((r) => r[3] / r[2]);
  console.log(`| ${s} | ${mine.length} | ${median(mine.map((r) => +r[2])).toFixed(1)} | ${median(mine.map((r) => +r[3])).toFixed(1)} | ${median(ratios).toFixed(2)}x | ${Math.min(...ratios).toFixed(2)}x, ${Math.max(...ratios).toFixed(2)}x |`);
}' "$OUT/rounds.txt" | tee "$OUT/summary.md"
