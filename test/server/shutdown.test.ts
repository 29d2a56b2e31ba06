// Graceful shutdown (docs/architecture.md#configuration-and-processes): a request in flight when stop() begins is
// answered, and its keep-alive connection closes right after the answer, so stop() does not wait for the client to
// let go of it (nor for the 10 s force).
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTessera, type Running } from '../../server/start.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let database: TestDatabase;
let dataDir: string;
let running: Running | undefined;

beforeAll(async () => {
  database = await createTestDatabase();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'tessera-shutdown-'));
});
afterAll(async () => {
  await running?.stop();
  await database?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('stop()', () => {
  it('answers a keep-alive request in flight, then closes its connection at once', async () => {
    // given a service and a keep-alive client whose request is in flight: its body not all sent yet
    running = await startTessera({
      env: {
        DATABASE_URL: database.url,
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        SECRET_KEY: randomBytes(32).toString('hex'),
        ROLE: 'api',
        LOG_LEVEL: 'silent',
      },
      logger: pino({ level: 'silent' }),
    });
    const agent = new http.Agent({ keepAlive: true });
    const body = JSON.stringify({ query: '{ __typename }' });
    const request = http.request(`${running.url}/graphql`, {
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    const answered = new Promise<{ status: number; connection: string | undefined; text: string; at: number }>(
      (resolve, reject) => {
        request.on('error', reject);
        request.on('response', (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode!, connection: res.headers.connection, text, at: Date.now() }),
          );
        });
      },
    );
    request.write(body.slice(0, 5));
    await pause(300);

    // when the service stops while the request is in flight, and the client then finishes sending it
    const stopped = running.stop().then(() => Date.now());
    await pause(300);
    request.end(body.slice(5));

    // then the request is answered, with Connection: close, and stop() resolves soon after the answer
    const reply = await answered;
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.text)).toEqual({ data: { __typename: 'Query' } });
    const stoppedAt = await stopped;
    expect(stoppedAt - reply.at).toBeLessThan(1_500);
    expect(reply.connection).toBe('close');
    agent.destroy();
  });
});
