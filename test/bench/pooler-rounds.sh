#!/usr/bin/env bash
# Tessera straight to PostgreSQL against Tessera through PgBouncer in transaction mode, in short alternating rounds
# (as test/bench/pair-rounds.sh, for machines whose speed drifts): three Tessera processes run at once, pinned to CPU 0
# with one scratch PostgreSQL (../shared/bench/pg-scratch.sh) and Debian's PgBouncer, each on a database of its own;
# the load runs on CPU 1 (../shared/bench/oidc-load.mjs). The figure is the median of the rounds' own ratios to the
# direct process with named prepared statements.
#   direct    DATABASE_URL to PostgreSQL, named prepared statements (the default)
#   unnamed   the same, DATABASE_PREPARED_STATEMENTS=false: what the statements alone cost
#   pgbouncer DATABASE_URL to PgBouncer (pool_mode = transaction, 10 server connections), unnamed statements, and
#             WORKER_DATABASE_URL straight to PostgreSQL for the job queue's LISTEN (docs/architecture.md#behind-a-connection-pooler)
#   test/bench/pooler-rounds.sh                # ROUNDS=7 D=4 C=16 SCENARIOS=flow,exchange,refresh,userinfo
# Needs ../shared/bench with npm ci done there, and /usr/sbin/pgbouncer.
set -euo pipefail
PROJECT=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=${BENCH:-$PROJECT/../shared/bench}
ROUNDS=${ROUNDS:-7}; D=${D:-4}; C=${C:-16}; SCENARIOS=${SCENARIOS:-flow,exchange,refresh,userinfo}
export PG_PORT=${PG_PORT:-5433}
BOUNCER_PORT=${BOUNCER_PORT:-6433}
ROUNDS_KIND=pooler
. "$PROJECT/test/bench/rounds-setup.sh"

# PgBouncer as test/e2e/pgbouncer.test.ts runs it; it drops to `postgres`, which must read its folder.
bouncer=$(mktemp -d); chmod 755 "$bouncer"
pg_user=$(node -p 'decodeURIComponent(new URL(process.argv[1]).username) || "postgres"' "$ADMIN_URL")
echo "\"$pg_user\" \"\"" > "$bouncer/users.txt"
cat > "$bouncer/pgbouncer.ini" <<EOF
[databases]
* = host=127.0.0.1 port=$PG_PORT
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BOUNCER_PORT
unix_socket_dir =
auth_type = trust
auth_file = $bouncer/users.txt
pool_mode = transaction
default_pool_size = 10
reserve_pool_size = 0
max_client_conn = 500
ignore_startup_parameters = extra_float_digits,options
server_reset_query =
EOF
taskset -c 0 /usr/sbin/pgbouncer -u postgres "$bouncer/pgbouncer.ini" > "$OUT/pgbouncer.log" 2>&1 &
PIDS+=($!)

declare -A URL CLIENT_ID CLIENT_SECRET
port=4310
for who in direct unnamed pgbouncer; do
  port=$((port + 1))
  direct_url=$("$PNODE" peer-oidc-provider/pg-admin.mjs create "$ADMIN_URL" "pooler_$who")
  extra=()
  case $who in
    unnamed) extra=(DATABASE_PREPARED_STATEMENTS=false) ;;
    pgbouncer)
      pooled=$(node -p 'const u = new URL(process.argv[1]); u.port = process.argv[2]; u.href' "$direct_url" "$BOUNCER_PORT")
      extra=(DATABASE_PREPARED_STATEMENTS=false "DATABASE_URL=$pooled" "WORKER_DATABASE_URL=$direct_url") ;;
  esac
  URL[$who]=http://127.0.0.1:$port
  start_tessera "$who" "$port" "$direct_url" "${extra[@]}"
  CLIENT_ID[$who]=$STARTED_CLIENT_ID; CLIENT_SECRET[$who]=$STARTED_CLIENT_SECRET
done

# One measurement: ops/s of one scenario against one server, and whether it had errors.
measure() { # who scenario
  env TARGET_URL="${URL[$1]}" CLIENT_ID="${CLIENT_ID[$1]}" CLIENT_SECRET="${CLIENT_SECRET[$1]}" TESSERA_EMAIL=$EMAIL \
    TESSERA_PASSWORD="$PASSWORD" TESSERA_LOGIN=session taskset -c 1 node oidc-load.mjs --target targets/tessera.mjs \
    -c "$C" -d "$D" --warmup 1 -s "$2" --no-sanity |
    awk -v s="$2" '$1 == s { print $2, ($0 ~ / err 0 /) ? "ok" : "ERRORS" }'
}

echo "scenario round direct unnamed pgbouncer" > "$OUT/rounds.txt"
for scenario in ${SCENARIOS//,/ }; do
  for round in $(seq 1 "$ROUNDS"); do
    # Each server first, second and third in turn.
    case $((round % 3)) in
      0) order="direct unnamed pgbouncer" ;; 1) order="unnamed pgbouncer direct" ;; *) order="pgbouncer direct unnamed" ;;
    esac
    declare -A got=()
    for who in $order; do got[$who]=$(measure "$who" "$scenario"); done
    echo "$scenario $round ${got[direct]% *} ${got[unnamed]% *} ${got[pgbouncer]% *}" | tee -a "$OUT/rounds.txt"
    [[ "${got[direct]} ${got[unnamed]} ${got[pgbouncer]}" == *ERRORS* ]] && echo "!! errors in $scenario round $round" | tee -a "$OUT/rounds.txt"
  done
done

node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").slice(1).filter((l) => !l.startsWith("!!")).map((l) => l.split(" "));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
console.log("| scenario | rounds | direct ops/s | unnamed statements | through PgBouncer | PgBouncer / direct, lowest and highest round |");
console.log("|---|---:|---:|---:|---:|---|");
for (const s of [...new Set(rows.map((r) => r[0]))]) {
  const mine = rows.filter((r) => r[0] === s);
  const ratio = (i) => median(mine.map((r) => r[i] / r[2])).toFixed(2) + "x";
  const bouncer = mine.map((r) => r[4] / r[2]);
  console.log(`| ${s} | ${mine.length} | ${median(mine.map((r) => +r[2])).toFixed(0)} | ${median(mine.map((r) => +r[3])).toFixed(0)} (${ratio(3)}) | ${median(mine.map((r) => +r[4])).toFixed(0)} (${ratio(4)}) | ${Math.min(...bouncer).toFixed(2)}x, ${Math.max(...bouncer).toFixed(2)}x |`);
}' "$OUT/rounds.txt" | tee "$OUT/summary.md"
