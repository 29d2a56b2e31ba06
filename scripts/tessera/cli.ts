// What every `tessera` command shares: option parsing, the REST client (API key and secret), output and exit codes.
// Exit codes (the README, Command-line tool): 0 success, 1 an API error (its error_description on stderr) or an answer
// not of the documented shape (answers.ts), 2 bad usage.
// The key and secret go to the --url origin and nowhere else: redirects are followed by hand, within that origin only.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { page, refusal, UnexpectedAnswer, type Check, type Page } from './answers.ts';
import { ApiError, UsageError } from './errors.ts';
import { storedAccessToken } from './signed-in.ts';

export type Options = NonNullable<ParseArgsConfig['options']>;

export interface Command {
  /** "products create" */
  name: string;
  /** The arguments after the name, as in the usage line: "--name NAME --slug SLUG [--feature F]..." */
  usage: string;
  summary: string;
  /** The one positional argument the command takes (an id or a slug), if any. */
  positional?: string;
  options: Options;
  run(ctx: RunContext): Promise<void>;
}

export interface RunContext {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  /** The one positional argument of a command that takes one (`Command.positional`). */
  positional: () => string;
  api: Api;
  out: Output;
}

export const GLOBAL_OPTIONS: Options = {
  url: { type: 'string' },
  key: { type: 'string' },
  secret: { type: 'string' },
  'secret-stdin': { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

export const GLOBAL_HELP = `Options for every command:
  --url URL        the Tessera base URL (TESSERA_URL; default http://localhost:3000)
  --key KEY        an API key (TESSERA_API_KEY)
  --secret-stdin   read the API key's secret from standard input (or set TESSERA_API_SECRET)
  --secret SECRET  the secret as an argument: avoid, other users see it in the process list
  --json           print the API's JSON instead of text
  -h, --help       show help
Without a key, the person signed in with "tessera login" acts (or a session token in TESSERA_TOKEN).`;

/** Printed on stderr whenever --secret is given: kept for old scripts, but the secret shows in `ps` while the command runs. */
export const SECRET_FLAG_WARNING =
  'warning: --secret is visible to other users in the process list; give the secret with --secret-stdin or TESSERA_API_SECRET instead\n';

/** Help fits this many columns (the README, Command-line tool). */
export const HELP_WIDTH = 100;

/** `text` in lines of at most `width` columns, broken between words, each line after the first `indent` spaces in. */
export function wrap(text: string, width = HELP_WIDTH, indent = 0): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    const limit = width - (lines.length ? indent : 0);
    if (line && line.length + 1 + word.length > limit) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  lines.push(line);
  return lines.join(`\n${' '.repeat(indent)}`);
}

export function helpOf(command: Command): string {
  const usage = `Usage: tessera ${command.name}${command.usage ? ` ${command.usage}` : ''}`;
  return `${wrap(usage, HELP_WIDTH, 4)}\n\n${wrap(command.summary)}\n\n${GLOBAL_HELP}\n`;
}

export function parse(command: Command, argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: { ...GLOBAL_OPTIONS, ...command.options },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** Checks the positional arguments against what the command takes, and returns the one it takes, if any. */
export function checkPositionals(command: Command, positionals: string[]): string | undefined {
  const [first] = positionals;
  const expected = command.positional ? 1 : 0;
  if (positionals.length !== expected) {
    throw new UsageError(
      command.positional
        ? `expected one ${command.positional}, got ${positionals.length}`
        : `unexpected argument "${first}"`,
    );
  }
  return first;
}

/** The value of an option that takes one, if given. */
export function text(value: unknown, flag: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new UsageError(`${flag} takes a value`);
  return value;
}

export function integer(value: unknown, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) throw new UsageError(`${flag} must be a whole number`);
  return Number(value);
}

export function decimal(value: unknown, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d+(\.\d+)?$/.test(value))
    throw new UsageError(`${flag} must be an amount such as 19.99`);
  return Number(value);
}

export function oneOf<T extends string>(value: unknown, flag: string, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!allowed.includes(value as T)) throw new UsageError(`${flag} must be one of ${allowed.join(', ')}`);
  return value as T;
}

/** The values of the options `flags`: a usage error that names every one missing. */
export function required<F extends string>(values: Record<string, unknown>, ...flags: F[]): Record<F, string> {
  const given: Partial<Record<F, string>> = {};
  const missing: F[] = [];
  for (const flag of flags) {
    const value = text(values[flag], `--${flag}`);
    if (value === undefined) missing.push(flag);
    else given[flag] = value;
  }
  if (missing.length) throw new UsageError(`missing ${missing.map((f) => `--${f}`).join(', ')}`);
  // Every flag was either given or is among the missing, which are none.
  return given as Record<F, string>;
}

export type Api = ReturnType<typeof createApi>;

/** Redirects followed for one request, all within the --url origin. */
const MAX_REDIRECTS = 5;

/**
 * Sends one request to `url`, following redirects only while they stay on `origin` (scheme, host and port): the
 * request carries the key and secret, so a redirect elsewhere is an error and nothing is sent there. 307 and 308 keep
 * the method and body; 303, and 301/302 after a POST, become a GET without a body, as browsers and fetch do.
 */
async function sendWithinOrigin(
  origin: URL,
  start: URL,
  init: { method: string; headers: Record<string, string>; body?: string },
): Promise<Response> {
  let url = start;
  let request = init;
  for (let redirects = 0; ; redirects++) {
    let res: Response;
    try {
      res = await fetch(url, { ...request, redirect: 'manual' });
    } catch (error) {
      throw new ApiError(
        0,
        `cannot reach ${origin.origin}: ${(error as Error & { cause?: Error }).cause?.message ?? (error as Error).message}`,
      );
    }
    const location = res.headers.get('location');
    if (![301, 302, 303, 307, 308].includes(res.status) || location === null) return res;
    await res.body?.cancel();
    const target = new URL(location, url);
    if (target.origin !== origin.origin) {
      throw new ApiError(
        res.status,
        `refused to follow a redirect to another origin, ${target.origin}: the API key and secret go to ${origin.origin} only`,
      );
    }
    if (redirects === MAX_REDIRECTS)
      throw new ApiError(res.status, `too many redirects (more than ${MAX_REDIRECTS}) from ${start.href}`);
    if (res.status === 303 || ((res.status === 301 || res.status === 302) && request.method === 'POST')) {
      request = {
        method: 'GET',
        headers: Object.fromEntries(Object.entries(request.headers).filter(([name]) => name !== 'content-type')),
      };
    }
    url = target;
  }
}

/**
 * The REST client. The secret comes from standard input (--secret-stdin, read at the first request so that a
 * command's usage problems and --help come first), else --secret, else TESSERA_API_SECRET.
 */
export function createApi(values: Record<string, unknown>, env: NodeJS.ProcessEnv, readStdin: () => Promise<string>) {
  const base = text(values.url, '--url') ?? env.TESSERA_URL ?? 'http://localhost:3000';
  const key = text(values.key, '--key') ?? env.TESSERA_API_KEY;
  let origin: URL;
  try {
    origin = new URL(base);
  } catch {
    throw new UsageError(`--url is not a URL: ${base}`);
  }
  let secret: Promise<string | undefined> | undefined;
  async function secretOf(): Promise<string | undefined> {
    if (!values['secret-stdin']) return text(values.secret, '--secret') ?? env.TESSERA_API_SECRET;
    if (values.secret !== undefined) throw new UsageError('give --secret-stdin or --secret, not both');
    // One trailing newline, as `echo` and a typed line end with, is not part of the secret.
    const read = (await readStdin()).replace(/\r?\n$/, '');
    if (!read) throw new UsageError('--secret-stdin: standard input held no secret');
    return read;
  }

  let signedIn: Promise<string | null> | undefined;
  /**
   * An API key and its secret; else, with no key given, a session token (TESSERA_TOKEN); else the access token of
   * the person signed in with `tessera login`, from a refresh made once for the command (signed-in.ts).
   */
  async function credentials(): Promise<Record<string, string>> {
    if (!key && env.TESSERA_TOKEN) return { authorization: `Bearer ${env.TESSERA_TOKEN}` };
    if (!key && !values['secret-stdin'] && values.secret === undefined) {
      const token = await (signedIn ??= storedAccessToken(form, origin, env));
      if (token) return { authorization: `Bearer ${token}` };
    }
    const given = await (secret ??= secretOf());
    if (!key || !given) {
      throw new UsageError(
        'credentials missing: run "tessera login", or give --key and --secret-stdin (or TESSERA_API_KEY and TESSERA_API_SECRET)',
      );
    }
    return { authorization: `Bearer ${key}`, 'x-api-secret': given };
  }

  /**
   * An OAuth endpoint's answer to a form (RFC 6749 3.2): no credentials but those in `fields`. An error answer is an
   * ApiError with the OAuth error code.
   */
  async function form<T>(path: string, fields: Record<string, string>, expected: Check<T>): Promise<T> {
    const res = await sendWithinOrigin(origin, new URL(path, origin), {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    return answerOf(res, 'POST', path, expected);
  }

  /** The answer to one request, checked against the shape `expected`: anything else is an ApiError. */
  async function request<T>(
    method: string,
    path: string,
    expected: Check<T>,
    body?: unknown,
    bearer?: string,
  ): Promise<T> {
    // Checked at the first call, so that a command's own usage problems are reported first.
    const auth = bearer ? { authorization: `Bearer ${bearer}` } : await credentials();
    const res = await sendWithinOrigin(origin, new URL(path, origin), {
      method,
      headers: {
        accept: 'application/json',
        ...auth,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return answerOf(res, method, path, expected);
  }
  return {
    origin,
    form,
    get: <T>(path: string, expected: Check<T>) => request('GET', path, expected),
    post: <T>(path: string, body: unknown, expected: Check<T>) => request('POST', path, expected, body),
    patch: <T>(path: string, body: unknown, expected: Check<T>) => request('PATCH', path, expected, body),
    delete: <T>(path: string, expected: Check<T>) => request('DELETE', path, expected),
    /** A GET with the access token `bearer` rather than the command's credentials (login.ts, before any is stored). */
    getWith: <T>(bearer: string, path: string, expected: Check<T>) => request('GET', path, expected, undefined, bearer),
    /** Every item of a paged list, following next_cursor. */
    async all<T>(path: string, name: string, item: Check<T>): Promise<T[]> {
      const items: T[] = [];
      let cursor: string | null = null;
      do {
        const sep: string = path.includes('?') ? '&' : '?';
        const next: Page<T> = await request(
          'GET',
          `${path}${sep}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          page(name, item),
        );
        items.push(...next.items);
        cursor = next.nextCursor;
      } while (cursor);
      return items;
    },
  };
}

/** The answer `res` to `method path`, checked against `expected`; an error answer or another shape is an ApiError. */
async function answerOf<T>(res: Response, method: string, path: string, expected: Check<T>): Promise<T> {
  const answer = await res.text();
  let parsed: unknown;
  try {
    parsed = answer ? JSON.parse(answer) : null;
  } catch {
    parsed = null;
  }
  if (!res.ok) {
    const { error, description, details } = refusal(parsed);
    throw new ApiError(res.status, description ?? `HTTP ${res.status}`, details, error);
  }
  try {
    return expected(parsed, '');
  } catch (error) {
    if (!(error instanceof UnexpectedAnswer)) throw error;
    throw new ApiError(res.status, `the server answered something unexpected to ${method} ${path}`, [
      { path: error.at || '(the answer)', message: `expected ${error.expected}` },
    ]);
  }
}

export interface Output {
  json: boolean;
  print(text: string): void;
  /** The API's value as JSON with --json, else the readable text. */
  result(value: unknown, text: () => string): void;
}

export function createOutput(json: boolean, write: (text: string) => void): Output {
  return {
    json,
    print: (text) => write(`${text}\n`),
    result: (value, text) => write(json ? `${JSON.stringify(value, null, 2)}\n` : `${text()}\n`),
  };
}

/** Lines of a table fit this many characters, the width of a wide terminal (the README, Command-line tool). */
export const TABLE_WIDTH = 100;

/**
 * The id as a table shows it: its last 8 characters. Ids are UUIDv7, whose first characters are a timestamp that
 * records made in the same minute share; the end is random. `get` and --json give the whole id.
 */
export const shortId = (id: string | null | undefined) => (id ? id.slice(-8) : '-');

const length = (text: string) => [...text].length;

/** A cell made exactly `width` characters: cut, the cut marked with "…", or padded with spaces. */
function fit(cell: string, width: number): string {
  const chars = [...cell];
  return chars.length > width ? `${chars.slice(0, width - 1).join('')}…` : cell + ' '.repeat(width - chars.length);
}

/**
 * Aligned columns, for lists, each line at most `width` characters: while too wide, the widest column loses a
 * character (down to its header's width) and its longer cells are cut. --json gives every value whole.
 */
export function table(rows: string[][], header: string[], width = TABLE_WIDTH): string {
  if (!rows.length) return '(none)';
  const all = [header, ...rows];
  const columns = header.map((h, i) => ({ least: length(h), width: Math.max(...all.map((r) => length(r[i] ?? ''))) }));
  let total = columns.reduce((sum, c) => sum + c.width, 2 * (header.length - 1));
  while (total > width) {
    // The first of the widest columns that may still lose a character.
    const widest = columns
      .filter((c) => c.width > c.least)
      .reduce<(typeof columns)[number] | undefined>((a, c) => (a && a.width >= c.width ? a : c), undefined);
    if (!widest) break;
    widest.width--;
    total--;
  }
  return all
    .map((r) =>
      columns
        .map((c, i) => fit(r[i] ?? '', c.width))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** A field's value as text: a nested object as its JSON, nothing as a dash. */
const shown = (v: unknown): string =>
  v === null || v === undefined
    ? '-'
    : typeof v === 'string'
      ? v
      : typeof v === 'number' || typeof v === 'boolean'
        ? String(v)
        : JSON.stringify(v);

/** "key: value" lines, for one record. */
export function record(fields: [string, unknown][]): string {
  const width = Math.max(...fields.map(([k]) => k.length));
  return fields
    .map(([k, v]) => `${`${k}:`.padEnd(width + 1)} ${Array.isArray(v) ? v.join(', ') || '-' : shown(v)}`)
    .join('\n');
}
