// Preloaded into a service process by test/e2e/idle-footprint.test.ts (NODE_OPTIONS=--import): records every module
// file the process loads, ES modules and CommonJS alike, and on SIGUSR2 writes their paths to LOADED_MODULES_FILE.
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';

const loaded = new Set<string>();
registerHooks({
  load(url, context, nextLoad) {
    if (url.startsWith('file:')) loaded.add(fileURLToPath(url));
    return nextLoad(url, context);
  },
});

const file = process.env.LOADED_MODULES_FILE;
if (file) process.on('SIGUSR2', () => writeFileSync(file, JSON.stringify([...loaded])));
