// How the process runs, whatever launches it (`npm start`, `node server/main.ts`, a service manager): imported first
// by main.ts. Both settings must be there when Node starts, so a process started without them replaces itself
// (`process.execve`: same pid, same arguments and environment) with one that has them. An operator's own choice, on
// the command line or in NODE_OPTIONS, is kept (docs/architecture.md#configuration-and-processes).
// - V8's young generation, capped at 2 x 8 MB: V8 sizes it from the machine's memory, up to 2 x 64 MB on 23 GB, and
//   the start alone filled it and left it resident.
// - Node's compile cache, in node_modules/.cache: a start whose files are cached strips no TypeScript, so it never
//   loads Node's type stripper (amaro, a WebAssembly build of swc that stays resident: 17 MB for one file), and
//   compiles less. The cache is keyed by each file's content; it is inside the checkout, not a shared temporary
//   folder that another user could write. NODE_DISABLE_COMPILE_CACHE=1 turns it off.
import path from 'node:path';

const YOUNG_GENERATION = '--max-semi-space-size=8';
const COMPILE_CACHE = path.resolve(import.meta.dirname, '../node_modules/.cache/node-compile-cache');

const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
const sized = flags.some((flag) => flag.startsWith('--max-semi-space-size'));
const cacheChosen =
  process.env.NODE_COMPILE_CACHE !== undefined || process.env.NODE_DISABLE_COMPILE_CACHE !== undefined;

if ((!sized || !cacheChosen) && typeof process.execve === 'function') {
  process.execve(
    process.execPath,
    [process.execPath, ...(sized ? [] : [YOUNG_GENERATION]), ...process.execArgv, ...process.argv.slice(1)],
    cacheChosen ? process.env : { ...process.env, NODE_COMPILE_CACHE: COMPILE_CACHE },
  );
}
