// A job whose fetch committed but whose answer was lost (worker/in-doubt-jobs.ts), as in a failover: the real worker
// process (node server/main.ts, ROLE=worker) reaches PostgreSQL through a TCP proxy, which cuts the connection that
// carries the fetched job back, so the job is locked by the worker and the worker does not know it. Within seconds it
// is unlocked and run, not left to its four-hour lock.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { EventEmitter } from 'node:events';
import type { WorkerEvents } from 'graphile-worker';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { InDoubtJobs } from '../../worker/in-doubt-jobs.ts';
import { deploymentEnv, serviceNode, signalNode, startNode, type ServiceNode } from '../e2e/process.ts';

const MARKER = `lost-answer-${randomBytes(6).toString('hex')}`;

/** Forwards to `target`; the first connection whose server-to-client bytes carry MARKER is cut instead, both ways. */
async function startCuttingProxy(target: URL) {
  const cut: string[] = [];
  const server = net.createServer((clientSide) => {
    const serverSide = net.connect(Number(target.port), target.hostname);
    let tail = '';
    serverSide.on('data', (chunk) => {
      const seen = tail + chunk.toString('latin1');
      if (!cut.length && seen.includes(MARKER)) {
        cut.push(seen);
        clientSide.destroy();
        serverSide.destroy();
        return;
      }
      tail = seen.slice(-MARKER.length);
      clientSide.write(chunk);
    });
    clientSide.pipe(serverSide);
    for (const s of [clientSide, serverSide])
      s.on('error', () => {
        clientSide.destroy();
        serverSide.destroy();
      });
    serverSide.on('close', () => clientSide.destroy());
    clientSide.on('close', () => serverSide.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return { port, cut, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

let database: TestDatabase;
let proxy: Awaited<ReturnType<typeof startCuttingProxy>>;
let dataDir: string;
let admin: pg.Client;
const worker: ServiceNode = serviceNode('worker', 'worker');

beforeAll(async () => {
  database = await createTestDatabase();
  proxy = await startCuttingProxy(new URL(database.url));
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'tessera-lost-fetch-'));
  admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
});
afterAll(async () => {
  if (worker.child) await signalNode(worker, 'SIGTERM');
  await admin?.end();
  await proxy?.close();
  await database?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

it('runs a job whose fetch lost its answer within seconds, not after its four-hour lock', async () => {
  const through = new URL(database.url);
  through.host = `127.0.0.1:${proxy.port}`;
  startNode(worker, {
    ...deploymentEnv({
      databaseUrl: through.toString(),
      secretKey: randomBytes(32).toString('hex'),
      baseUrl: 'http://id.tessera.test',
      dataDir,
      caFile: '',
    }),
  });
  // A scheduled task, which reads nothing of its payload: the marker only lets the proxy know the fetch's answer.
  const {
    rows: [job],
  } = await admin.query<{ id: string }>(
    `select (graphile_worker.add_job('expire_subscriptions', json_build_object('marker', $1::text))).id`,
    [MARKER],
  );
  await waitFor(() => (proxy.cut.length ? true : undefined), 60_000).catch((error: Error) => {
    throw new Error(`${error.message}: no fetch of the job\n${worker.output.join('\n')}`);
  });
  // The fetch committed: the job is locked by the worker, which never received it.
  const locked = await admin.query('select locked_by from graphile_worker.jobs where id = $1', [job!.id]);
  expect(locked.rows[0]?.locked_by).toMatch(/^pool-/);

  await waitFor(async () => {
    const { rows } = await admin.query('select 1 from graphile_worker.jobs where id = $1', [job!.id]);
    return rows.length ? undefined : true;
  }, 30_000).catch(async (error: Error) => {
    const { rows } = await admin.query(
      'select attempts, locked_at, locked_by from graphile_worker.jobs where id = $1',
      [job!.id],
    );
    throw new Error(`${error.message}: ${JSON.stringify(rows)}\n${worker.output.join('\n')}`);
  });
  expect(proxy.cut).toHaveLength(1);
  // pino writes asynchronously: the line may come a moment after the job is done.
  const said = await waitFor(() => worker.output.find((line) => line.includes('"jobs":1')), 5_000);
  expect(JSON.parse(said)).toMatchObject({ level: 40, msg: 'unlocked the jobs whose fetch lost its answer' });
}, 120_000);

it('spares the jobs its workers run and the locks of other processes', async () => {
  const add = async (lockedBy: string) => {
    const {
      rows: [job],
    } = await admin.query<{ id: string }>(
      `select (graphile_worker.add_job('expire_subscriptions', run_at := now() + interval '1 hour')).id::text`,
    );
    await admin.query(
      `update graphile_worker._private_jobs set locked_by = $1, locked_at = now() - interval '1 minute' where id = $2`,
      [lockedBy, job!.id],
    );
    return job!.id;
  };
  const [lost, running, another] = [await add('pool-here'), await add('pool-here'), await add('pool-elsewhere')];
  const events = new EventEmitter() as WorkerEvents;
  const pgPool = new pg.Pool({ connectionString: database.url, max: 1 });
  const inDoubt = new InDoubtJobs(events, pgPool, () => ['pool-here'], pino({ level: 'silent' }));
  events.emit('job:start', { job: { id: running } } as never);
  events.emit('worker:getJob:error', {} as never);
  const lockedBy = async () => {
    const { rows } = await admin.query<{ id: string; locked_by: string | null }>(
      'select id::text, locked_by from graphile_worker.jobs where id = any($1::bigint[]) order by id',
      [[lost, running, another]],
    );
    return Object.fromEntries(rows.map((r) => [r.id, r.locked_by]));
  };
  await waitFor(async () => ((await lockedBy())[lost] === null ? true : undefined), 15_000);
  expect(await lockedBy()).toEqual({ [lost]: null, [running]: 'pool-here', [another]: 'pool-elsewhere' });
  inDoubt.stop();
  await pgPool.end();
}, 30_000);
