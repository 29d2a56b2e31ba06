import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // Vite prefers graphql's ESM build, Node (and so every dependency) loads the CommonJS one: two copies of
    // graphql break `instanceof`. Point our code at the file Node uses.
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 3,
    // A worker runs its files one after another in one module graph instead of loading the service afresh for each
    // file (Prisma's engine, the schema, the portal): the whole run went from 9m55s to 7m32s on this 2-core machine,
    // and the workers' CPU time from 11m38s to 7m20s. Every file starts its own server on its own database; the
    // caches modules keep are keyed by database, statement text, CA or ciphertext; and no test mocks a module or
    // changes the process's environment (one that must would need `isolate` back for its file;
    // test/foundation/shared-workers.test.ts fails when one does).
    isolate: false,
    // A time-out here catches a hang; it is not a speed check (speed is measured by ../shared/bench). Under the whole
    // suite's load on a 2-core machine a test that starts processes or a browser has taken over 30 s, so every test
    // gets the same two minutes and none sets a shorter one of its own.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
