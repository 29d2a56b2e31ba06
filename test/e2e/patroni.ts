// A PostgreSQL cluster as the README's high-availability section lays it out, from Debian's packages: one etcd, two
// PostgreSQL 15 nodes under Patroni with synchronous replication, and HAProxy sending connections to whichever node
// Patroni's REST API calls the primary. Each part runs from its own files and ports under one folder; `kill` takes a
// node down as a crash would (SIGKILL to Patroni and its PostgreSQL).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { waitFor } from '../helpers/wait.ts';
import { freePort } from './process.ts';

const PG_BIN = '/usr/lib/postgresql/15/bin';
const SUPERUSER = { name: 'postgres', password: 'failover-test' };

interface Part {
  name: string;
  child: ChildProcess;
  exited: Promise<void>;
  output: string[];
}

export interface PatroniNode {
  name: string;
  pgPort: number;
  restPort: number;
  dataDir: string;
  part?: Part;
}

export interface Cluster {
  nodes: PatroniNode[];
  /** A URL through HAProxy: always the current primary. */
  url(database: string): string;
  /** The node Patroni calls the primary now (its REST API answers /primary with 200), if any. */
  primary(): Promise<PatroniNode | undefined>;
  /** Takes `node` down as a crash does: SIGKILL to Patroni and to its PostgreSQL's postmaster. */
  kill(node: PatroniNode): Promise<void>;
  /** The last lines every part wrote, for a failure's message. */
  output(): string;
  stop(): Promise<void>;
}

/** The uid and gid of `postgres`, which Patroni and PostgreSQL run as (PostgreSQL refuses root). */
function postgresIds(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

function run(name: string, command: string, args: string[], uid?: number, gid?: number): Part {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], uid, gid });
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    output.splice(0, Math.max(0, output.length - 40));
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return { name, child, output, exited: new Promise((resolve) => child.once('exit', () => resolve())) };
}

const answers = (url: string) =>
  fetch(url, { signal: AbortSignal.timeout(1_000) }).then(
    (r) => r.status,
    () => 0,
  );

export async function startCluster(): Promise<Cluster> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tessera-patroni-'));
  const { uid, gid } = postgresIds();
  await chmod(dir, 0o755);
  await chown(dir, uid, gid);
  const [etcdClient, etcdPeer, haproxyPort] = [await freePort(), await freePort(), await freePort()];
  const nodes: PatroniNode[] = [];
  for (const name of ['pg1', 'pg2'])
    nodes.push({ name, pgPort: await freePort(), restPort: await freePort(), dataDir: path.join(dir, name) });
  const parts: Part[] = [];

  const etcd = run('etcd', '/usr/bin/etcd', [
    '--name=etcd',
    `--data-dir=${path.join(dir, 'etcd')}`,
    `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
    `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
    `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
    `--initial-cluster=etcd=http://127.0.0.1:${etcdPeer}`,
  ]);
  parts.push(etcd);
  await waitFor(async () => ((await answers(`http://127.0.0.1:${etcdClient}/health`)) === 200 ? true : undefined));

  const startNode = async (node: PatroniNode) => {
    const config = path.join(dir, `${node.name}.yml`);
    // A failover within seconds: the leader key lives 10 s and each node looks every second.
    await writeFile(
      config,
      `scope: tessera
name: ${node.name}
restapi:
  listen: 127.0.0.1:${node.restPort}
  connect_address: 127.0.0.1:${node.restPort}
etcd3:
  host: 127.0.0.1:${etcdClient}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: false
      parameters:
        max_connections: 200
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
  pg_hba:
    - local all all trust
    - host replication replicator 127.0.0.1/32 trust
    - host all all 127.0.0.1/32 md5
postgresql:
  listen: 127.0.0.1:${node.pgPort}
  connect_address: 127.0.0.1:${node.pgPort}
  data_dir: ${node.dataDir}
  bin_dir: ${PG_BIN}
  pgpass: ${path.join(dir, `${node.name}.pgpass`)}
  authentication:
    replication: { username: replicator, password: replicator }
    superuser: { username: ${SUPERUSER.name}, password: ${SUPERUSER.password} }
  parameters:
    unix_socket_directories: ${dir}
`,
    );
    await chown(config, uid, gid);
    node.part = run(node.name, '/usr/bin/patroni', [config], uid, gid);
    parts.push(node.part);
  };

  const haproxyConfig = path.join(dir, 'haproxy.cfg');
  await writeFile(
    haproxyConfig,
    `global
  maxconn 1000
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 1s
listen primary
  bind 127.0.0.1:${haproxyPort}
  option httpchk GET /primary
  http-check expect status 200
  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
${nodes.map((n) => `  server ${n.name} 127.0.0.1:${n.pgPort} maxconn 500 check port ${n.restPort}`).join('\n')}
`,
  );

  const cluster: Cluster = {
    nodes,
    url: (database) => `postgresql://${SUPERUSER.name}:${SUPERUSER.password}@127.0.0.1:${haproxyPort}/${database}`,
    async primary() {
      for (const node of nodes) if ((await answers(`http://127.0.0.1:${node.restPort}/primary`)) === 200) return node;
      return undefined;
    },
    async kill(node) {
      const postmaster = Number(readFileSync(path.join(node.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      node.part?.child.kill('SIGKILL');
      process.kill(postmaster, 'SIGKILL');
      await node.part?.exited;
    },
    output: () => parts.map((p) => `--- ${p.name}\n${p.output.join('\n')}`).join('\n'),
    async stop() {
      for (const part of [...parts].reverse()) {
        part.child.kill('SIGTERM');
        await Promise.race([part.exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
        part.child.kill('SIGKILL');
      }
      // A PostgreSQL whose Patroni was killed is left running: stop it with its own tool.
      for (const node of nodes) {
        try {
          execFileSync(`${PG_BIN}/pg_ctl`, ['-D', node.dataDir, 'stop', '-m', 'immediate'], {
            uid,
            gid,
            stdio: 'ignore',
          });
        } catch {
          // not running
        }
      }
      await rm(dir, { recursive: true, force: true });
    },
  };

  try {
    // The first node bootstraps the cluster and leads; the second joins as its synchronous standby.
    await startNode(nodes[0]!);
    await waitFor(
      async () => ((await answers(`http://127.0.0.1:${nodes[0]!.restPort}/primary`)) === 200 ? true : undefined),
      60_000,
    );
    await startNode(nodes[1]!);
    await waitFor(
      async () => ((await answers(`http://127.0.0.1:${nodes[1]!.restPort}/sync`)) === 200 ? true : undefined),
      60_000,
    );
    parts.push(run('haproxy', '/usr/sbin/haproxy', ['-db', '-f', haproxyConfig]));
    // HAProxy counts a server up until its first checks fail: wait until six connections in a row reach the primary.
    const standby = async () => {
      const probe = new pg.Client({ connectionString: cluster.url('postgres') });
      probe.on('error', () => {});
      try {
        await probe.connect();
        const { rows } = await probe.query<{ standby: boolean }>('select pg_is_in_recovery() as standby');
        return rows[0]?.standby ?? true;
      } catch {
        return true;
      } finally {
        await probe.end().catch(() => {});
      }
    };
    await waitFor(async () => {
      for (let i = 0; i < 6; i++) if (await standby()) return undefined;
      return true;
    }, 20_000);
  } catch (error) {
    const message = `the cluster did not start (${(error as Error).message}):\n${cluster.output()}`;
    await cluster.stop();
    throw new Error(message, { cause: error });
  }
  return cluster;
}
