// The one way Tessera fetches from a server it does not run: an identity provider (discovery, keys, token, userinfo,
// GitHub's API) and an app's client ID metadata document (modules/clients/metadata-document.ts). A `fetch` in
// openid-client's shape that follows the webhook address guard (docs/architecture.md#single-sign-on): https only,
// every resolved address public unless WEBHOOK_ALLOW_PRIVATE_NETWORKS is set, the connection made to the address that
// was checked (destination.ts, sender.ts), the extra CA of WEBHOOK_CA_FILE trusted beside Node's roots. A redirect is
// handed back as it is, never followed, so it cannot lead anywhere unchecked; an answer must arrive within
// WEBHOOK_TIMEOUT_MS and weigh at most 1 MiB, or the smaller limit its caller gives.
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { CustomFetch, CustomFetchOptions } from 'openid-client';
import { checkDestination, DEFAULT_WEBHOOK_SETTINGS, type WebhookSettings } from './destination.ts';
import { DestinationError, UpstreamFetchError } from './push.errors.ts';
import { agentFor, pinnedLookup } from './sender.ts';

/** More than a discovery document, a key set or a profile ever needs; past it the connection is dropped. */
export const UPSTREAM_RESPONSE_LIMIT = 1024 * 1024;

/** The UpstreamFetchError behind an error that openid-client wrapped (its `cause` chain), if any. */
export function upstreamFetchErrorIn(error: unknown): UpstreamFetchError | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof UpstreamFetchError) return e;
  }
  return undefined;
}

type Body = CustomFetchOptions['body'];
function bodyBytes(body: Body): Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof URLSearchParams) return Buffer.from(body.toString());
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  // A stream is what no request of a relying party sends.
  throw new TypeError('a streamed request body is not supported');
}

// A status the Fetch API forbids a body with; and a Response can only carry 200-599.
const NULL_BODY = new Set([204, 205, 304]);

/** The headers of an answer, as far as the Fetch API accepts them (one it refuses is left out, not fatal). */
function headersOf(response: IncomingMessage): Headers {
  const headers = new Headers();
  const raw = response.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i];
    const value = raw[i + 1];
    if (name === undefined || value === undefined) break;
    try {
      headers.append(name, value);
    } catch {
      // A name or value the Fetch API refuses says nothing a relying party needs.
    }
  }
  return headers;
}

/**
 * A `fetch` for openid-client (its customFetch) under the guard and limits of `settings`, dropping an answer of more
 * than `limit` bytes.
 */
export function upstreamFetch(
  settings: WebhookSettings = DEFAULT_WEBHOOK_SETTINGS,
  limit = UPSTREAM_RESPONSE_LIMIT,
): CustomFetch {
  return async (url, options) => {
    let destination;
    try {
      destination = await checkDestination(url, settings);
    } catch (error) {
      if (error instanceof DestinationError)
        throw new UpstreamFetchError('refused', `${safeHost(url)} ${error.message}`);
      throw error;
    }
    const body = bodyBytes(options.body);
    const host = destination.url.host;
    if (options.signal?.aborted) throw new UpstreamFetchError('timeout', `the call to ${host} was abandoned`);
    const headers: Record<string, string> = { 'user-agent': 'Tessera', ...options.headers };
    if (body) headers['content-length'] = String(body.length);
    return new Promise<Response>((resolve, reject) => {
      const request = https.request(destination.url, {
        method: options.method,
        headers,
        agent: agentFor(settings.ca),
        // The certificate is still checked against the URL's host name; only the address comes from the check.
        lookup: pinnedLookup(destination),
      });
      let settled = false;
      const settle = () => {
        if (settled) return false;
        settled = true;
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', aborted);
        return true;
      };
      const fail = (error: UpstreamFetchError) => {
        if (!settle()) return;
        request.destroy();
        reject(error);
      };
      const timer = setTimeout(
        () => fail(new UpstreamFetchError('timeout', `${host} gave no answer within ${settings.timeoutMs} ms`)),
        settings.timeoutMs,
      );
      const aborted = () => fail(new UpstreamFetchError('timeout', `the call to ${host} was abandoned`));
      options.signal?.addEventListener('abort', aborted, { once: true });
      request.on('error', (error: NodeJS.ErrnoException) =>
        fail(new UpstreamFetchError('unreachable', `${host}: ${error.code ?? error.message}`)),
      );
      request.on('response', (response) => {
        const status = response.statusCode ?? 0;
        const broken = () => fail(new UpstreamFetchError('unreachable', `${host} closed the connection mid-answer`));
        response.on('error', broken);
        if (status < 200 || status > 599)
          return fail(new UpstreamFetchError('unreachable', `${host} answered with HTTP status ${status}`));
        const tooLarge = () =>
          fail(new UpstreamFetchError('too_large', `${host} answered with more than ${limit} bytes`));
        if (Number(response.headers['content-length'] ?? 0) > limit) return tooLarge();
        const chunks: Buffer[] = [];
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > limit) return tooLarge();
          chunks.push(chunk);
        });
        response.on('close', () => {
          if (!response.complete) broken();
        });
        response.on('end', () => {
          if (!settle()) return;
          resolve(
            new Response(NULL_BODY.has(status) ? null : Buffer.concat(chunks), {
              status,
              headers: headersOf(response),
            }),
          );
        });
      });
      request.end(body);
    });
  };
}

/** The host of a URL for a message, or a placeholder when it is no URL at all. */
function safeHost(url: string): string {
  try {
    return new URL(url).host || 'the address';
  } catch {
    return 'the address';
  }
}
