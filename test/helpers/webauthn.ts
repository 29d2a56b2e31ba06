// A software authenticator for tests without a browser: an ES256 key made with node:crypto, and the answers a browser
// would send for it (WebAuthn Level 3: authenticator data 6.1, attested credential data 6.5.2, the "none" attestation
// format 8.7, assertion signatures 6.3.3), CBOR-encoded (RFC 8949) with the few shapes they need.
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { client, type Client } from './http.ts';
import { PASSWORD } from './fixtures.ts';
import { startTestServer, type TestServer, type TestServerOptions } from './server.ts';

type Cbor = number | string | Uint8Array | Cbor[] | Map<Cbor, Cbor>;

function head(major: number, n: number): Buffer {
  if (n < 24) return Buffer.from([(major << 5) | n]);
  if (n < 0x100) return Buffer.from([(major << 5) | 24, n]);
  if (n < 0x10000) return Buffer.from([(major << 5) | 25, n >> 8, n & 0xff]);
  const b = Buffer.alloc(5);
  b[0] = (major << 5) | 26;
  b.writeUInt32BE(n, 1);
  return b;
}

/** CBOR for unsigned and negative integers, byte and text strings, arrays and maps (keys in the order given). */
export function cbor(value: Cbor): Buffer {
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([head(3, bytes.length), bytes]);
  }
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), value]);
  if (Array.isArray(value)) return Buffer.concat([head(4, value.length), ...value.map(cbor)]);
  return Buffer.concat([head(5, value.size), ...[...value].flatMap(([k, v]) => [cbor(k), cbor(v)])]);
}

const b64url = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');
const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest();

/** Authenticator data flags (WebAuthn Level 3, 6.1). */
const UP = 0x01;
const UV = 0x04;
const BE = 0x08;
const BS = 0x10;
const AT = 0x40;

export interface AuthenticatorOptions {
  /** The relying party's origin (BASE_URL's); the RP id is its host. */
  origin: string;
  /** A synced passkey (backup eligible and backed up): multiDevice. Otherwise singleDevice. */
  synced?: boolean;
  /** Whether the person was verified (PIN, biometrics). */
  userVerified?: boolean;
  /** An authenticator without a signature counter (it always says 0, as synced passkeys do). */
  counterless?: boolean;
}

/** One passkey on a software authenticator: its key, its id, its signature counter. */
export class SoftPasskey {
  readonly credentialId = randomBytes(32);
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  /** The signature counter the next answer carries once incremented; set it to make an answer go backwards. */
  counter = 0;
  userHandle: string | null = null;
  readonly options: Required<AuthenticatorOptions>;

  constructor(options: AuthenticatorOptions) {
    this.options = { synced: false, userVerified: true, counterless: false, ...options };
    ({ privateKey: this.privateKey, publicKey: this.publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' }));
  }

  get id(): string {
    return b64url(this.credentialId);
  }

  private get rpIdHash(): Buffer {
    return sha256(new URL(this.options.origin).hostname);
  }

  private flags(extra: number): number {
    return UP | (this.options.userVerified ? UV : 0) | (this.options.synced ? BE | BS : 0) | extra;
  }

  private clientData(
    type: 'webauthn.create' | 'webauthn.get',
    challenge: string,
    origin = this.options.origin,
  ): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
  }

  /** The COSE_Key of the public key (RFC 9053: kty EC2, alg ES256, crv P-256, x, y). */
  private coseKey(): Buffer {
    const jwk = this.publicKey.export({ format: 'jwk' });
    return cbor(
      new Map<Cbor, Cbor>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    );
  }

  /** What navigator.credentials.create answers to `options` (as @simplewebauthn/browser sends it). */
  register(options: { challenge: string; user: { id: string } }): Record<string, any> {
    this.userHandle = options.user.id;
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.credentialId.length);
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(this.counter);
    const authData = Buffer.concat([
      this.rpIdHash,
      Buffer.from([this.flags(AT)]),
      counter,
      Buffer.alloc(16),
      idLength,
      this.credentialId,
      this.coseKey(),
    ]);
    const attestationObject = cbor(
      new Map<Cbor, Cbor>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]),
    );
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
      response: {
        clientDataJSON: b64url(this.clientData('webauthn.create', options.challenge)),
        attestationObject: b64url(attestationObject),
        transports: ['internal'],
      },
    };
  }

  /** What navigator.credentials.get answers to `options`; the counter grows by one first (set it to go back), if it has one. */
  authenticate(
    options: { challenge: string },
    override: { origin?: string; type?: 'webauthn.get' | 'webauthn.create' } = {},
  ): Record<string, any> {
    if (!this.options.counterless) this.counter += 1;
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(this.counter);
    const authData = Buffer.concat([this.rpIdHash, Buffer.from([this.flags(0)]), counter]);
    const clientDataJSON = this.clientData(override.type ?? 'webauthn.get', options.challenge, override.origin);
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientDataJSON)]), this.privateKey);
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
      response: {
        clientDataJSON: b64url(clientDataJSON),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        userHandle: this.userHandle,
      },
    };
  }
}

/**
 * A test server whose BASE_URL is http://localhost:<port>: a relying party browsers and the library accept (the
 * default test server's http://127.0.0.1 is an IP address, where passkeys are offered nowhere). Requests may still go
 * to `url` (127.0.0.1); only the answers' origin and RP id name localhost.
 */
export async function startPasskeyServer(options: TestServerOptions = {}): Promise<TestServer & { origin: string }> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const origin = `http://localhost:${port}`;
  const server = await startTestServer({ ...options, env: { ...options.env, PORT: String(port), BASE_URL: origin } });
  return Object.assign(server, { origin });
}

/**
 * Registers a new passkey for the person of `api` through the routes, as the portal does: as the first factor it
 * needs the account's password again. The key (for origin `origin`) and the passkey's id.
 */
export async function addPasskey(
  api: Client,
  origin: string,
  name = 'Key',
  password: string = PASSWORD,
): Promise<{ key: SoftPasskey; id: string }> {
  const key = new SoftPasskey({ origin });
  const options = await api.post('/api/v1/users/me/passkeys/options', { password });
  if (options.status !== 200)
    throw new Error(`passkey options failed: ${options.status} ${JSON.stringify(options.body)}`);
  const registered = await api.post('/api/v1/users/me/passkeys', { name, response: key.register(options.body) });
  if (registered.status !== 201)
    throw new Error(`passkey registration failed: ${registered.status} ${JSON.stringify(registered.body)}`);
  return { key, id: registered.body.id };
}

/** Signs in with `key` through the routes, as a browser's ceremony does (options, then the answer); with the mfa_token of a password step when given. */
export async function passkeySignIn(baseUrl: string, key: SoftPasskey, mfaToken?: string) {
  const anonymous = client(baseUrl);
  const options = await anonymous.post('/api/v1/auth/passkeys/options');
  if (options.status !== 200)
    throw new Error(`passkey sign-in options failed: ${options.status} ${JSON.stringify(options.body)}`);
  return anonymous.post('/api/v1/auth/passkeys/verify', {
    response: key.authenticate(options.body),
    ...(mfaToken ? { mfa_token: mfaToken } : {}),
  });
}
