// After a crash (every process of the service killed at once: an OOM kill, a power cut), the embedded PostgreSQL
// leaves its lock file behind, and for a while processes that still hold it: the dead postmaster stays a zombie until
// it is reaped, and its backends live on until they notice it is gone. PostgreSQL refuses to start while either
// lasts. So before starting, we wait for them, stop an orphaned server that still serves this data directory, and
// remove the lock only once no process of it is alive. A server whose Tessera is alive is never touched: that is
// another Tessera on this DATA_DIR, refused with one line. Linux only (/proc); elsewhere PostgreSQL's own check
// stands.
import { readdir, readFile, readlink, rm } from 'node:fs/promises';
import path from 'node:path';
import { StartupError } from './startup-error.ts';

interface Proc {
  pid: number;
  ppid: number;
  /** R, S, D, Z (zombie: dead, waiting to be reaped)... */
  state: string;
}

/** /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses, so read after the last ")". */
async function procOf(pid: number): Promise<Proc | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (!stat) return undefined;
  const [state = '', ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { pid, ppid: Number(ppid), state };
}

const cmdline = (pid: number) =>
  readFile(`/proc/${pid}/cmdline`, 'utf8').then(
    (s) => s.split('\0'),
    () => [] as string[],
  );

/** Every live process whose working directory is `dir`: PostgreSQL's postmaster and backends run in their data directory. */
async function processesIn(dir: string): Promise<number[]> {
  const pids = (await readdir('/proc').catch(() => [] as string[])).filter((name) => /^\d+$/.test(name)).map(Number);
  const found: number[] = [];
  await Promise.all(
    pids.map(async (pid) => {
      if (pid === process.pid) return;
      if ((await readlink(`/proc/${pid}/cwd`).catch(() => undefined)) === dir) found.push(pid);
    }),
  );
  return found;
}

async function lockHolder(lockFile: string): Promise<number | undefined> {
  const text = await readFile(lockFile, 'utf8').catch(() => undefined);
  const pid = Number(text?.split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** A postmaster's Tessera is alive when its parent is a live Node process (the one that spawned it); an orphan is reparented to init or a subreaper. */
async function ownedByLiveTessera(postmaster: Proc): Promise<boolean> {
  if (postmaster.ppid <= 1) return false;
  const parent = await procOf(postmaster.ppid);
  if (!parent || parent.state === 'Z') return false;
  return (await cmdline(parent.pid)).some((arg) => path.basename(arg).startsWith('node'));
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A signal to a process that may have ended meanwhile. */
function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // ESRCH: it ended on its own.
  }
}

/**
 * Makes `databaseDir` startable after a crash, or throws a StartupError when a live Tessera serves it. Returns at
 * once when there is no lock file. Waits at most `waitMs` for dying processes.
 */
export async function clearStaleServer(
  databaseDir: string,
  log: (msg: string) => void,
  waitMs = 25_000,
): Promise<void> {
  if (process.platform !== 'linux') return;
  const lockFile = path.join(databaseDir, 'postmaster.pid');
  const holder = await lockHolder(lockFile);
  if (holder === undefined) return;
  const deadline = Date.now() + waitMs;
  let asked: 'stop' | 'quit' | undefined;
  for (;;) {
    const postmaster = await procOf(holder);
    const serving = postmaster && postmaster.state !== 'Z' && (await processesIn(databaseDir)).includes(holder);
    if (serving && (await ownedByLiveTessera(postmaster))) {
      throw new StartupError(
        `the embedded PostgreSQL in ${databaseDir} is in use by a running process (PID ${postmaster.ppid}): is another Tessera running on this DATA_DIR?`,
      );
    }
    const left = await processesIn(databaseDir);
    if (left.length === 0) break;
    if (Date.now() > deadline) {
      throw new StartupError(
        `processes of an earlier embedded PostgreSQL in ${databaseDir} did not end (PIDs ${left.join(', ')}): stop them, then start again`,
      );
    }
    if (serving && !asked) {
      // An orphan: its Tessera died but it did not. A fast shutdown (SIGINT) rolls back what was open and writes a checkpoint.
      log(`stopping an orphaned embedded PostgreSQL (PID ${holder}) left running on ${databaseDir}`);
      signal(holder, 'SIGINT');
      asked = 'stop';
    } else if (!serving && asked !== 'quit' && Date.now() > deadline - waitMs + 2_000) {
      // Backends of a postmaster that is gone: they end on their own once they notice; after two seconds we tell
      // them to (SIGQUIT, as the postmaster itself would). Recovery on start replays what they had committed.
      for (const pid of left) signal(pid, 'SIGQUIT');
      asked = 'quit';
    }
    await pause(100);
  }
  // No process of the old server is left (a zombie postmaster is dead, only not yet reaped): its lock protects nothing.
  const still = await lockHolder(lockFile);
  if (still === holder) {
    await rm(lockFile, { force: true });
    log(
      `removed the lock file of an embedded PostgreSQL that had stopped without cleaning up (PID ${holder}); recovery replays its log`,
    );
  }
}
