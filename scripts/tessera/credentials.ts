// Where `tessera login` keeps a person's sign-in (the README, Command-line tool): `$XDG_CONFIG_HOME/tessera/
// credentials.json` (else ~/.config), mode 0600 in a directory of mode 0700, one entry per Tessera URL:
// `{"<base url>": {refresh_token, client_id, user: {id, email}}}`. The refresh token rotates at each use, so every
// change is made under a lock file (two commands at once would otherwise both spend the same token, which the server
// takes for a replay and answers by ending the sign-in) and written whole to a new file renamed over the old one: a
// process killed at any point leaves either the old file or the new one, never half of either.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApiError } from './errors.ts';

export interface StoredLogin {
  refresh_token: string;
  client_id: string;
  user: { id: string; email: string };
}
export type Logins = Record<string, StoredLogin>;

/** How long a command waits for another one's lock, and the age at which a lock is taken for a killed process's. */
const LOCK_WAIT_MS = 20_000;
const STALE_LOCK_MS = 30_000;
const LOCK_RETRY_MS = 50;

export function credentialsFile(env: NodeJS.ProcessEnv): string {
  const config = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(config, 'tessera', 'credentials.json');
}

/** The entry of a base URL: its origin, as the tool sends every request there. */
export const entryOf = (origin: URL) => origin.origin;

const isLogin = (v: unknown): v is StoredLogin => {
  const l = v as StoredLogin | null;
  return (
    typeof l === 'object' &&
    l !== null &&
    typeof l.refresh_token === 'string' &&
    typeof l.client_id === 'string' &&
    typeof l.user?.id === 'string' &&
    typeof l.user?.email === 'string'
  );
};

/** The stored sign-ins; none when there is no file. A file that is not ours is an error, never overwritten. */
export async function readLogins(file: string): Promise<Logins> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new ApiError(0, `cannot read ${file}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ApiError(0, `${file} is not JSON: remove it and run tessera login again`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ApiError(0, `${file} is not a credentials file: remove it and run tessera login again`);
  return Object.fromEntries(
    Object.entries(parsed).filter((entry): entry is [string, StoredLogin] => isLogin(entry[1])),
  );
}

/** Writes `logins` whole to a new file of mode 0600, flushed to disk, then renamed over the old one. */
async function writeLogins(file: string, logins: Logins): Promise<void> {
  const next = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const handle = await open(next, 'wx', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(logins, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(next, file);
}

/** Whether the process that wrote a lock file is gone (a killed command): its pid, on this machine, runs no more. */
async function abandoned(lockFile: string): Promise<boolean> {
  const [held, pid] = await Promise.all([
    stat(lockFile).catch(() => null),
    readFile(lockFile, 'utf8').then(Number, () => NaN),
  ]);
  if (!held) return false;
  if (Date.now() - held.mtimeMs > STALE_LOCK_MS) return true;
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Waits for the credentials' lock file and holds it; the answer releases it. */
async function lock(file: string): Promise<() => Promise<void>> {
  const lockFile = `${file}.lock`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const handle = await open(lockFile, 'wx', 0o600);
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => rm(lockFile, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    // A lock whose command was killed, or older than any command holds one, is taken over.
    if (await abandoned(lockFile)) await rm(lockFile, { force: true });
    else if (Date.now() > deadline)
      throw new ApiError(0, `${lockFile} is held by another tessera command: try again, or remove it if none runs`);
    else await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
  }
}

/**
 * Runs `change` over the stored sign-ins under the lock, and stores what it answers as `logins` (unless it answers
 * the same object unchanged, `undefined`).
 */
export async function changeLogins<T>(
  file: string,
  change: (logins: Logins) => Promise<{ logins?: Logins; result: T }> | { logins?: Logins; result: T },
): Promise<T> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const release = await lock(file);
  try {
    const { logins, result } = await change(await readLogins(file));
    if (logins) await writeLogins(file, logins);
    return result;
  } finally {
    await release();
  }
}
