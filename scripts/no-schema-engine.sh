#!/bin/sh
# Prisma's native schema engine is a download this offline machine cannot make. Tessera never needs it:
# migrations are committed SQL applied by prisma/migrate.ts, and new ones are written with
# `npm run db:diff` (the wasm schema engine). See README, "Changing the data model".
echo "tessera: the Prisma schema engine is not used here; apply migrations with 'npm run db:migrate'." >&2
exit 1
