// One POST to a receiver: to the checked address only (a lookup that answers with it), never following a
// redirect, within the time-out for the whole exchange, keeping the first 4 KB of the answer as text that
// PostgreSQL can store whatever the receiver sent.
import https from 'node:https';
import { createSecureContext, rootCertificates } from 'node:tls';
import type { LookupFunction } from 'node:net';
import type { Destination } from './destination.ts';

export const RESPONSE_LIMIT = 4096;
/** Past this much of an answer's body the rest is not read: the connection is dropped instead of drained. */
const DRAIN_LIMIT = 1024 * 1024;
const ERROR_LIMIT = 1000;

/**
 * A receiver's text as PostgreSQL text and JSON can hold it: a NUL (which neither can) becomes U+FFFD, as invalid
 * UTF-8 already has in decoding. An attempt whose reply could not be stored was never recorded, and so never
 * counted: the delivery was sent again and again past its five attempts.
 */
export function storable(text: string, limit = RESPONSE_LIMIT): string {
  return text.slice(0, limit).replaceAll('\u0000', '\uFFFD').toWellFormed();
}

export interface SendResult {
  statusCode: number | null;
  headers: Record<string, string> | null;
  body: string | null;
  error: string | null;
  durationMs: number;
}

// Keep-alive agents, one per extra CA: a receiver's connection is reused across deliveries.
const agents = new Map<string, https.Agent>();
/**
 * An idle connection is closed after four seconds (undici's default), or a second before the time the receiver
 * announces (Keep-Alive: timeout=N) when that is sooner; Node reads the hint only when the agent has a time-out of
 * its own. Without one, an idle connection was kept until the receiver closed it, and a delivery sent on it just as
 * the receiver closed it failed ("socket hang up"). Only idle connections are closed: `timeoutMs` bounds a request.
 */
const IDLE_CONNECTION_MS = 4_000;
export function agentFor(ca: string | undefined): https.Agent {
  const key = ca ?? '';
  let agent = agents.get(key);
  if (!agent) {
    // A secure context, not `ca`: the agent names each request's connection pool from its TLS options, and a `ca`
    // of every root certificate made that name (a string of ~200 KB) on every request: most of a delivery's CPU.
    agent = new https.Agent({
      keepAlive: true,
      timeout: IDLE_CONNECTION_MS,
      maxSockets: 16,
      ...(ca ? { secureContext: createSecureContext({ ca: [...rootCertificates, ca] }) } : {}),
    });
    agents.set(key, agent);
  }
  return agent;
}

/** A lookup that answers with the checked address only, whatever the host name: the request connects to it. */
export function pinnedLookup(destination: Destination): LookupFunction {
  const { address, family } = destination.address;
  return (_hostname, opts, callback) => {
    if ((opts as { all?: boolean }).all)
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

export function send(
  destination: Destination,
  headers: Record<string, string>,
  body: string,
  options: { timeoutMs: number; ca?: string },
): Promise<SendResult> {
  const started = performance.now();
  const lookup = pinnedLookup(destination);
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const finish = (result: Omit<SendResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({
        ...result,
        error: result.error === null ? null : storable(result.error, ERROR_LIMIT),
        durationMs: Math.round(performance.now() - started),
      });
    };
    const request = https.request(destination.url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      agent: agentFor(options.ca),
      // The certificate is still checked against the URL's host name; only the address comes from the check.
      lookup,
    });
    const timer = setTimeout(() => {
      finish({ statusCode: null, headers: null, body: null, error: `no answer within ${options.timeoutMs} ms` });
      request.destroy();
    }, options.timeoutMs);
    request.on('error', (error: NodeJS.ErrnoException) =>
      finish({
        statusCode: null,
        headers: null,
        body: null,
        error: error.code ? `${error.code}: ${error.message}` : error.message,
      }),
    );
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      let read = 0;
      const answered = () => {
        const flat: Record<string, string> = {};
        for (const [k, v] of Object.entries(response.headers))
          if (v !== undefined) flat[storable(k)] = storable(Array.isArray(v) ? v.join(', ') : v);
        finish({
          statusCode: response.statusCode ?? null,
          headers: flat,
          body: storable(Buffer.concat(chunks).toString('utf8')),
          error: null,
        });
      };
      response.on('data', (chunk: Buffer) => {
        if (kept < RESPONSE_LIMIT) {
          chunks.push(chunk.subarray(0, RESPONSE_LIMIT - kept));
          kept += Math.min(chunk.length, RESPONSE_LIMIT - kept);
        }
        read += chunk.length;
        if (read > DRAIN_LIMIT) {
          answered();
          request.destroy();
        }
      });
      response.on('error', () => {});
      response.on('end', answered);
    });
    request.end(body);
  });
}
