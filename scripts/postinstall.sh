#!/bin/sh
# npm's postinstall: the Prisma client and the portal build.
# Not when `npx tessera` runs the tool (npm_command=exec): npx links this package into its cache and runs its
# install scripts there too, and a build then replaces the portal's files under a service running from this
# folder, whose pages go on asking for the scripts it started with.
set -e
[ "$npm_command" = exec ] && exit 0
prisma generate
npm run build
