// A webhook receiver over real HTTPS: its certificate is signed by a certificate authority made for the test run
// (with the system's openssl), which the service trusts through configuration (WEBHOOK_CA_FILE or
// NODE_EXTRA_CA_CERTS), never by turning verification off.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';

export interface TestCa {
  /** The CA certificate (PEM), to trust. */
  caPem: string;
  /** A file holding it, for WEBHOOK_CA_FILE / NODE_EXTRA_CA_CERTS. */
  caFile: string;
  key: string;
  cert: string;
  remove(): void;
}

/** A CA and a server certificate for `names` (DNS names) and 127.0.0.1, valid for a day. */
export function makeTestCa(names: string[] = ['localhost', 'receiver.test', 'other.test', 'slow.test']): TestCa {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tessera-ca-'));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=Tessera Test CA',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  openssl(
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    '/CN=receiver',
    '-keyout',
    file('server.key'),
    '-out',
    file('server.csr'),
  );
  writeFileSync(
    file('ext.cnf'),
    `subjectAltName=${[...names.map((n) => `DNS:${n}`), 'IP:127.0.0.1'].join(',')}\nextendedKeyUsage=serverAuth\n`,
  );
  openssl(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    file('ext.cnf'),
    '-out',
    file('server.pem'),
  );
  return {
    caPem: readFileSync(file('ca.pem'), 'utf8'),
    caFile: file('ca.pem'),
    key: readFileSync(file('server.key'), 'utf8'),
    cert: readFileSync(file('server.pem'), 'utf8'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface Received {
  at: number;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body, byte for byte. */
  body: string;
}

/** How the receiver answers: a status (200 by default), or nothing at all (hang) until it is closed. */
export type Answer = number | 'hang' | ((request: Received, res: ServerResponse) => void);

export interface HttpsReceiver {
  port: number;
  /** The URL for `host` (a name of the certificate) on this receiver's port. */
  url(host?: string, pathname?: string): string;
  received: Received[];
  /** Sets the answer for requests from now on. */
  answer(next: Answer): void;
  close(): Promise<void>;
}

export async function startHttpsReceiver(ca: TestCa, initial: Answer = 200): Promise<HttpsReceiver> {
  let answer: Answer = initial;
  const received: Received[] = [];
  const server = https.createServer({ key: ca.key, cert: ca.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request = {
        at: Date.now(),
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      received.push(request);
      if (answer === 'hang') return;
      if (typeof answer === 'function') return answer(request, res);
      res.writeHead(answer, { 'content-type': 'text/plain' }).end(`answered ${answer}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: (host = 'receiver.test', pathname = '/hooks') => `https://${host}:${port}${pathname}`,
    received,
    answer: (next) => {
      answer = next;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
