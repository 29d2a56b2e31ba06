#!/bin/sh
# npm's postinstall: the `tessera` command, the Prisma client and the portal build.
# The command is a link in node_modules/.bin, where `npx tessera` finds it and runs it as it is. It is not the
# package's "bin": npx installs a project that declares one into its own cache first, checking `engines` on the
# way, which printed ten lines of EBADENGINE on a machine whose own Node is older than 24 (the README, Command-line
# tool).
set -e
mkdir -p node_modules/.bin
ln -sf ../../scripts/tessera-bin.cjs node_modules/.bin/tessera
prisma generate
npm run build
