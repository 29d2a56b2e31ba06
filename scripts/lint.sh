#!/bin/sh
# npm run lint (and the start of npm test): Prettier's check, then ESLint over the tree and svelte-check over the
# portal side by side, since each keeps about one core busy; fails when any fails. The service's own type-check is
# `npm run typecheck` (tsc), which npm test runs next.
prettier --check --log-level warn . || exit 1
# ESLint reads a page's data through the types svelte-kit sync writes: without them it sees `any`.
(cd portal && svelte-kit sync) || exit 1
eslint . &
tree=$!
(cd portal && svelte-check --tsconfig ./tsconfig.json --threshold error)
portal=$?
wait "$tree" && exit "$portal"
