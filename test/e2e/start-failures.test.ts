// A start that cannot succeed ends at once with a non-zero exit and ONE line on stderr that says what to change:
// no stack trace, no database left running. Each case is provoked for real against `node server/main.ts`.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../schema/db.ts';
import { KeyStore } from '../../schema/keys/signing-keys.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { freePort, NODE, runToEnd, type Ended } from './process.ts';

const MAIN = ['server/main.ts'];
/** The key of the shared database: a start that gets past its signing keys stores them under it. */
const SECRET_KEY = randomBytes(32).toString('hex');
let database: TestDatabase;
const cleanups: (() => Promise<unknown>)[] = [];

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tessera-fail-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A TCP server on a free port that `reply` answers (Redis, say, waits for a newline PostgreSQL never sends). */
async function impostor(reply: (socket: net.Socket) => void): Promise<number> {
  const server = net.createServer((socket) => socket.on('data', () => reply(socket)).on('error', () => {}));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as net.AddressInfo).port;
}

function start(env: NodeJS.ProcessEnv, wrap: string[] = []): Promise<Ended> {
  return runToEnd([...wrap, NODE, ...MAIN], { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env });
}

function expectOneLine(ended: Ended, code: number, pattern: RegExp): void {
  expect(ended.code, ended.stderr).toBe(code);
  expect(ended.stderr.trim().split('\n')).toEqual([expect.stringMatching(pattern)]);
  expect(`${ended.stdout}${ended.stderr}`).not.toMatch(/^\s+at /m);
}

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await Promise.all(cleanups.map((fn) => fn()));
  await database?.drop();
});

describe('a SECRET_KEY that cannot work', () => {
  it('refuses a malformed key', async () => {
    const ended = await start({ DATABASE_URL: database.url, DATA_DIR: await tempDir(), SECRET_KEY: 'not-a-key' });
    expectOneLine(ended, 2, /^tessera: SECRET_KEY must be 32 random bytes/);
  });

  it('refuses a well-formed key that does not decrypt the signing keys stored in the database', async () => {
    const own = await createTestDatabase();
    cleanups.push(() => own.drop());
    const db = createDb(own.url);
    await new KeyStore(db, randomBytes(32)).init();
    await db.$disconnect();

    const ended = await start({
      DATABASE_URL: own.url,
      DATA_DIR: await tempDir(),
      SECRET_KEY: randomBytes(32).toString('hex'),
    });
    expectOneLine(
      ended,
      2,
      /^tessera: SECRET_KEY does not decrypt the signing key .* stored in the database: start with the SECRET_KEY/,
    );
  });
});

describe('a DATABASE_URL that is not a PostgreSQL', () => {
  it('names a closed port', async () => {
    const port = await freePort();
    const ended = await start({
      DATABASE_URL: `postgresql://tessera@127.0.0.1:${port}/tessera`,
      DATA_DIR: await tempDir(),
    });
    expectOneLine(
      ended,
      1,
      new RegExp(
        `^tessera: cannot use the database at 127\\.0\\.0\\.1:${port}: nothing listens there; check DATABASE_URL$`,
      ),
    );
  });

  it('gives up on a server that never answers, as Redis does', async () => {
    const port = await impostor(() => {});
    const ended = await start({
      DATABASE_URL: `postgresql://tessera@127.0.0.1:${port}/tessera`,
      DATA_DIR: await tempDir(),
    });
    expectOneLine(
      ended,
      1,
      new RegExp(`^tessera: cannot use the database at 127\\.0\\.0\\.1:${port}: no PostgreSQL answered within 10 s`),
    );
  }, 40_000);

  it('refuses a server that answers something else', async () => {
    const port = await impostor((socket) => socket.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    const ended = await start({
      DATABASE_URL: `postgresql://tessera@127.0.0.1:${port}/tessera`,
      DATA_DIR: await tempDir(),
    });
    expectOneLine(
      ended,
      1,
      /^tessera: cannot use the database at .*: what answered is not PostgreSQL; check DATABASE_URL$/,
    );
  });

  it('names a database that does not exist', async () => {
    const url = new URL(database.url);
    url.pathname = '/no_such_database';
    const ended = await start({ DATABASE_URL: url.toString(), DATA_DIR: await tempDir() });
    expectOneLine(
      ended,
      1,
      /^tessera: cannot use the database at .*: database "no_such_database" does not exist; check DATABASE_URL$/,
    );
  });
});

describe('a port in use', () => {
  it('says which port, in one line', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => blocker.close(resolve)));
    const port = (blocker.address() as net.AddressInfo).port;
    const ended = await start({
      DATABASE_URL: database.url,
      DATA_DIR: await tempDir(),
      SECRET_KEY,
      PORT: String(port),
    });
    expectOneLine(
      ended,
      1,
      new RegExp(`^tessera: port ${port} is in use: stop what listens there, or set PORT to a free port$`),
    );
  });
});

// A read-only DATA_DIR is made for real: a read-only bind mount in a mount namespace of the child's own, inside a user
// namespace of its own, so that no root is needed to make it (as root, root is mapped to itself).
describe('a read-only DATA_DIR', () => {
  const readOnly = (dir: string) => [
    'unshare',
    '--map-root-user',
    '--mount',
    'sh',
    '-c',
    'mount --bind -o ro "$0" "$0" && exec "$@"',
    dir,
  ];

  it('without SECRET_KEY: says the key file cannot be created', async () => {
    const dir = await tempDir();
    const ended = await start({ DATABASE_URL: database.url, DATA_DIR: dir }, readOnly(dir));
    expectOneLine(
      ended,
      2,
      new RegExp(`^tessera: cannot create ${dir}/secret\\.key \\(EROFS\\): make DATA_DIR writable, or set SECRET_KEY$`),
    );
  });

  it('for the embedded PostgreSQL: says DATA_DIR is not writable', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'secret.key'), randomBytes(32).toString('hex'));
    const ended = await start({ DATA_DIR: dir }, readOnly(dir));
    expectOneLine(
      ended,
      1,
      new RegExp(
        `^tessera: DATA_DIR ${dir} is not writable \\(EROFS\\): .*use a writable DATA_DIR, or set DATABASE_URL$`,
      ),
    );
  });

  it('is not needed with DATABASE_URL and SECRET_KEY: the start goes on to listen', async () => {
    const dir = await tempDir();
    // Started on a port in use, so that it ends by itself once past every use of DATA_DIR.
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => blocker.close(resolve)));
    const port = (blocker.address() as net.AddressInfo).port;
    const ended = await start(
      { DATABASE_URL: database.url, DATA_DIR: dir, SECRET_KEY, PORT: String(port) },
      readOnly(dir),
    );
    expectOneLine(ended, 1, /is in use/);
  });
});
