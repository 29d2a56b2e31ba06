#!/bin/sh
# npm run typecheck (and the start of npm test): the service's TypeScript and the portal's Svelte checked side by
# side, since each keeps about one core busy; fails when either fails.
tsc -p tsconfig.json &
service=$!
(cd portal && svelte-kit sync && svelte-check --tsconfig ./tsconfig.json --threshold error)
portal=$?
wait "$service" && exit "$portal"
