// A small client for the REST interface: JSON in, JSON out, with the caller's credentials.
export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface Credentials {
  token?: string;
  apiKey?: { key: string; secret: string };
}

export function client(baseUrl: string, credentials: Credentials = {}) {
  async function request<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Reply<T>> {
    const h: Record<string, string> = { accept: 'application/json', ...headers };
    if (credentials.token) h.authorization = `Bearer ${credentials.token}`;
    if (credentials.apiKey) {
      h.authorization = `Bearer ${credentials.apiKey.key}`;
      h['x-api-secret'] = credentials.apiKey.secret;
    }
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      h['content-type'] ??= 'application/json';
    }
    const res = await fetch(new URL(path, baseUrl), { method, headers: h, body: payload, redirect: 'manual' });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, headers: res.headers, body: parsed as T };
  }
  return {
    request,
    get: <T = any>(path: string, headers?: Record<string, string>) => request<T>('GET', path, undefined, headers),
    post: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) =>
      request<T>('POST', path, body ?? {}, headers),
    patch: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) =>
      request<T>('PATCH', path, body ?? {}, headers),
    delete: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) =>
      request<T>('DELETE', path, body, headers),
    as: (next: Credentials) => client(baseUrl, next),
  };
}

export type Client = ReturnType<typeof client>;

/** Signs in and returns a client carrying the session token. */
export async function signIn(baseUrl: string, email: string, password: string) {
  const reply = await client(baseUrl).post('/api/v1/auth/login', { email, password });
  if (reply.status !== 200) throw new Error(`sign-in failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  return { api: client(baseUrl, { token: reply.body.token }), login: reply.body };
}
