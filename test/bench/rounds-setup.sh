# Sourced by test/bench/pair-rounds.sh and test/bench/pooler-rounds.sh (PROJECT and BENCH set, ROUNDS_KIND naming the
# results folder): moves to ../shared/bench, starts its scratch PostgreSQL on CPU 0 (ADMIN_URL), stops every process
# in PIDS and that PostgreSQL on exit, and gives `ready URL` and `start_tessera`.
cd "$BENCH"
PNODE=peer-oidc-provider/node_modules/.bin/node
TNODE=$PROJECT/node_modules/.bin/node
EMAIL=bench@tessera.test; PASSWORD='bench password 123'
OUT=${OUT:-results/$ROUNDS_KIND-$(date -u +%Y%m%d-%H%M%S)}
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

# start_tessera NAME PORT DATABASE_URL [VAR=value ...]: Tessera on CPU 0 as the pair runs it, its log in $OUT, then
# its bench client: sets STARTED_CLIENT_ID and STARTED_CLIENT_SECRET.
start_tessera() {
  local name=$1 port=$2 url=$3; shift 3
  local base=http://127.0.0.1:$port data
  data=$(mktemp -d); chmod 755 "$data"
  (cd "$PROJECT" && exec env DATABASE_URL="$url" "$@" PORT="$port" HOST=127.0.0.1 BASE_URL="$base" DATA_DIR="$data" \
    BOOTSTRAP_ADMIN_EMAIL=$EMAIL BOOTSTRAP_ADMIN_PASSWORD="$PASSWORD" \
    RATE_LIMIT_API_KEY_PER_MINUTE=100000000 RATE_LIMIT_ORGANIZATION_PER_HOUR=100000000 \
    taskset -c 0 "$TNODE" server/main.ts) > "$OUT/server-$name.log" 2>&1 &
  PIDS+=($!)
  ready "$base/readyz"
  local token client
  token=$(curl -sf -X POST "$base/api/v1/auth/login" -H 'content-type: application/json' \
    -d "{\"email\":\"$EMAIL\",\"password\":\"$PASSWORD\"}" | node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).token')
  client=$(curl -sf -X POST "$base/api/v1/oauth-clients" -H "authorization: Bearer $token" -H 'content-type: application/json' \
    -d '{"name":"bench","redirect_uris":["http://127.0.0.1:4199/cb"],"allowed_scopes":["openid","email","profile","offline_access"],"consent_required":false}')
  STARTED_CLIENT_ID=$(node -p 'JSON.parse(process.argv[1]).client_id' "$client")
  STARTED_CLIENT_SECRET=$(node -p 'JSON.parse(process.argv[1]).client_secret' "$client")
}
