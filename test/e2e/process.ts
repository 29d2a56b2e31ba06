// Running the real service as a child process, as an operator would.
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');
/** Node 24 from the registry (the shell's `node` may be older); `npm start` runs the same binary. */
export const NODE = path.join(ROOT, 'node_modules/.bin/node');

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** The shell's environment, less what vitest adds (it sets BASE_URL=/ for Vite) and any database URL or key. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of ['DATABASE_URL', 'BASE_URL', 'MODE', 'DEV', 'PROD', 'SSR', 'NODE_ENV', 'SECRET_KEY']) delete env[key];
  return env;
}

export interface Ended {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command` to its end (a start that fails), with `env` over the clean environment. */
export function runToEnd(command: string[], env: NodeJS.ProcessEnv): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), { cwd: ROOT, env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
