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
cd "$BENCH"
PNODE=peer-oidc-provider/node_modules/.bin/node
TNODE=$PROJECT/node_modules/.bin/node
EMAIL=bench@tessera.test; PASSWORD='bench password 123'
OUT=${OUT:-results/rounds-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"

eval "$(PG_CPU=0 ./pg-scratch.sh start)"
SCRATCH=$PG_DIR; ADMIN_URL=$DATABASE_URL
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  PG_CPU=0 ./pg-scratch.sh stop "$SCRATCH" >/dev/null || true
}
trap cleanup EXIT
ready() { for _ in $(seq 1 100); do curl -sf -o /dev/null "$1" && return 0; sleep 0.2; done; echo "not ready: $1" >&2; exit 1; }

for mode in jwt opaque; do
  port=$([ $mode = jwt ] && echo 4100 || echo 4101)
  url=$("$PNODE" peer-oidc-provider/pg-admin.mjs create "$ADMIN_URL" "rounds_peer_$mode")
  PEER_STORE=postgres AT_FORMAT=$mode PORT=$port DATABASE_URL=$url taskset -c 0 "$PNODE" peer-oidc-provider/server.mjs \
    > "$OUT/server-peer-$mode.log" 2>&1 &
  PIDS+=($!)
  ready "http://127.0.0.1:$port/.well-known/openid-configuration"
done

TURL=http://127.0.0.1:4300
data=$(mktemp -d); chmod 755 "$data"
url=$("$PNODE" peer-oidc-provider/pg-admin.mjs create "$ADMIN_URL" rounds_tessera)
(cd "$PROJECT" && exec env DATABASE_URL="$url" PORT=4300 HOST=127.0.0.1 BASE_URL=$TURL DATA_DIR="$data" \
  BOOTSTRAP_ADMIN_EMAIL=$EMAIL BOOTSTRAP_ADMIN_PASSWORD="$PASSWORD" \
  RATE_LIMIT_API_KEY_PER_MINUTE=100000000 RATE_LIMIT_ORGANIZATION_PER_HOUR=100000000 \
  taskset -c 0 "$TNODE" server/main.ts) > "$OUT/server-tessera.log" 2>&1 &
PIDS+=($!)
ready "$TURL/readyz"
token=$(curl -sf -X POST $TURL/api/v1/auth/login -H 'content-type: application/json' \
  -d "{\"email\":\"$EMAIL\",\"password\":\"$PASSWORD\"}" | node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).token')
client=$(curl -sf -X POST $TURL/api/v1/oauth-clients -H "authorization: Bearer $token" -H 'content-type: application/json' \
  -d '{"name":"bench","redirect_uris":["http://127.0.0.1:4199/cb"],"allowed_scopes":["openid","email","profile","offline_access"],"consent_required":false}')
CLIENT_ID=$(node -p 'JSON.parse(process.argv[1]).client_id' "$client")
CLIENT_SECRET=$(node -p 'JSON.parse(process.argv[1]).client_secret' "$client")

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
