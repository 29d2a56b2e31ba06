// Token signing keys: kept in the database with the private half sealed under SECRET_KEY (schema/lib/sealed.ts),
// decrypted once and held in memory. One current key per algorithm signs; JWKS publishes the
// current and previous keys so that tokens signed before a rotation keep verifying.
import {
  createLocalJWKSet,
  exportJWK,
  generateKeyPair,
  importJWK,
  jwtVerify,
  SignJWT,
  type JWK,
  type JWTPayload,
  type JWTVerifyOptions,
  type CryptoKey,
} from 'jose';
import type { Db } from '../db.ts';
import { seal, unseal } from '../lib/sealed.ts';
import { SecretKeyMismatchError } from './keys.errors.ts';
import { expected } from '../lib/expected.ts';

export const SIGNING_ALGS = ['RS256', 'ES256', 'EdDSA'] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];

interface LoadedKey {
  kid: string;
  alg: SigningAlg;
  createdAt: Date;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

interface Remembered {
  issuer: string;
  typ: string;
  payload: Readonly<JWTPayload>;
}

const REFRESH_MS = 60_000;
/** Access tokens verifyRemembered keeps per key set: enough for every token in use under load, a few MB at most. */
const REMEMBERED_TOKENS = 10_000;
// A new key is published at once but signs only after every process has had time to load and publish it,
// so that no relying party meets a kid it cannot find in JWKS.
const ACTIVATE_AFTER_MS = 2 * REFRESH_MS;

export class KeyStore {
  #keys: LoadedKey[] = [];
  // Built once per key set: a fresh local set would import the public keys again on every verification. `verified`
  // holds what verifyRemembered verified under this set, so it goes with it.
  #verifySet:
    { keys: LoadedKey[]; set: ReturnType<typeof createLocalJWKSet>; verified: Map<string, Remembered> } | undefined;
  #published: { keys: LoadedKey[]; set: { keys: JWK[] } } | undefined;
  #loadedAt = 0;
  #loading: Promise<void> | undefined;
  readonly #db: Db;
  readonly #secret: Uint8Array;

  constructor(db: Db, secretKey: Uint8Array) {
    this.#db = db;
    this.#secret = secretKey;
  }

  /** Loads the keys, creating the first one of each algorithm on first start. */
  async init(): Promise<void> {
    await this.#reload();
    const missing = SIGNING_ALGS.filter((alg) => !this.#keys.some((k) => k.alg === alg));
    if (missing.length) {
      // Several processes may start at once on an empty database: each makes its keys (slowly, outside any
      // transaction), then under one lock only the first writes them and the others keep what it wrote. Two first
      // keys of an algorithm would both look current, and the first rotation would retire the one still signing.
      const made = await Promise.all(missing.map((alg) => this.#generate(alg)));
      await this.#db.$transaction(async (tx) => {
        await tx.$executeRaw`select pg_advisory_xact_lock(hashtext('tessera_signing_keys_init'))`;
        const present = new Set(
          (await tx.signingKey.findMany({ where: { retiredAt: null }, select: { alg: true } })).map((k) => k.alg),
        );
        const wanted = made.filter((row) => !present.has(row.alg));
        if (wanted.length) await tx.signingKey.createMany({ data: wanted });
      });
      await this.#reload();
    }
  }

  /** Adds a new current key for every algorithm; keys older than the previous ones are retired. */
  async rotate(): Promise<string[]> {
    const kids: string[] = [];
    for (const alg of SIGNING_ALGS) kids.push(await this.#create(alg));
    const live = await this.#db.signingKey.findMany({ where: { retiredAt: null }, orderBy: { createdAt: 'desc' } });
    const seen = new Map<string, number>();
    const retire = live.filter((k) => {
      const n = (seen.get(k.alg) ?? 0) + 1;
      seen.set(k.alg, n);
      return n > 2; // keep the new current and the previous key of each algorithm
    });
    await this.#db.signingKey.updateMany({
      where: { id: { in: retire.map((k) => k.id) } },
      data: { retiredAt: new Date() },
    });
    await this.#reload();
    return kids;
  }

  async sign(payload: JWTPayload, alg: SigningAlg = 'RS256', typ = 'JWT'): Promise<string> {
    const key = await this.#current(alg);
    return new SignJWT(payload).setProtectedHeader({ alg, kid: key.kid, typ }).sign(key.privateKey);
  }

  /** Verifies a JWT signed by one of our keys. Only our asymmetric algorithms pass: never none or HS256. */
  async verify(token: string, options: JWTVerifyOptions = {}): Promise<{ payload: JWTPayload; typ?: string }> {
    await this.#fresh();
    const attempt = () => jwtVerify(token, this.#verifying().set, { ...options, algorithms: [...SIGNING_ALGS] });
    try {
      const { payload, protectedHeader } = await attempt();
      return { payload, typ: protectedHeader.typ };
    } catch (error) {
      // Another process may have rotated: reload once when the kid is unknown to us.
      if ((error as { code?: string }).code !== 'ERR_JWKS_NO_MATCHING_KEY') throw error;
      await this.#reload();
      const { payload, protectedHeader } = await attempt();
      return { payload, typ: protectedHeader.typ };
    }
  }

  /**
   * verify, remembered for the token in use: an access token is verified on every API call, and its RS256
   * verification was a quarter of userinfo's CPU. The same token asked again, with the same issuer and type, under
   * the same loaded key set, is answered from memory once its time claims (exp, nbf) are checked against
   * `currentDate` as jwtVerify checks them. The memory goes with the key set (every reload starts it anew, at least
   * once a minute), so a retired key stops verifying exactly as before. Only successes are kept.
   */
  async verifyRemembered(
    token: string,
    options: { issuer: string; typ: string; currentDate: Date },
  ): Promise<JWTPayload> {
    await this.#fresh();
    const known = this.#verifying().verified.get(token);
    if (known && known.issuer === options.issuer && known.typ === options.typ) {
      const now = Math.floor(options.currentDate.getTime() / 1000);
      const { exp, nbf } = known.payload;
      if (typeof exp === 'number' && exp <= now) throw new Error('"exp" claim timestamp check failed');
      if (typeof nbf === 'number' && nbf > now) throw new Error('"nbf" claim timestamp check failed');
      return known.payload;
    }
    const { payload } = await this.verify(token, options);
    const verified = this.#verifying().verified; // a reload during verify starts a new one
    if (verified.size >= REMEMBERED_TOKENS)
      verified.delete(expected(verified.keys().next().value, 'the oldest remembered token'));
    verified.set(token, { issuer: options.issuer, typ: options.typ, payload: Object.freeze(payload) });
    return payload;
  }

  async jwks(): Promise<{ keys: JWK[] }> {
    await this.#fresh();
    return this.jwksSync();
  }

  /** The published key set: the same object until the keys change, so that its JSON text can be kept (well-known.ts). */
  jwksSync(): { keys: JWK[] } {
    if (this.#published?.keys !== this.#keys) {
      this.#published = {
        keys: this.#keys,
        set: { keys: this.#keys.map((k) => ({ ...k.publicJwk, kid: k.kid, alg: k.alg, use: 'sig' })) },
      };
    }
    return this.#published.set;
  }

  /** Reloads the keys from the database now (a rotation by another process shows up without waiting). */
  async refresh(): Promise<void> {
    await this.#reload();
  }

  /** The loaded keys as jose verifies with them, and what verifyRemembered verified under them. */
  #verifying() {
    if (this.#verifySet?.keys !== this.#keys)
      this.#verifySet = { keys: this.#keys, set: createLocalJWKSet(this.jwksSync()), verified: new Map() };
    return this.#verifySet;
  }

  async #current(alg: SigningAlg): Promise<LoadedKey> {
    await this.#fresh();
    const newestFirst = this.#keys.filter((k) => k.alg === alg).sort((a, b) => +b.createdAt - +a.createdAt);
    const active = newestFirst.find((k) => Date.now() - k.createdAt.getTime() >= ACTIVATE_AFTER_MS);
    // On first start the only key is new: it signs at once.
    const key = active ?? newestFirst[newestFirst.length - 1];
    if (!key) throw new Error(`no signing key for ${alg}`);
    return key;
  }

  async #fresh(): Promise<void> {
    if (Date.now() - this.#loadedAt > REFRESH_MS) await this.#reload();
  }

  async #reload(): Promise<void> {
    this.#loading ??= (async () => {
      const rows = await this.#db.signingKey.findMany({ where: { retiredAt: null }, orderBy: { createdAt: 'asc' } });
      const known = new Map(this.#keys.map((k) => [k.kid, k]));
      const keys: LoadedKey[] = [];
      for (const row of rows) {
        const existing = known.get(row.kid);
        if (existing) {
          keys.push(existing);
          continue;
        }
        const plaintext = await unseal(row.privateJwe, this.#secret).catch((error: { code?: string }) => {
          if (error.code === 'ERR_JWE_DECRYPTION_FAILED') throw new SecretKeyMismatchError(row.kid);
          throw error;
        });
        const jwk = JSON.parse(plaintext) as JWK;
        const privateKey = (await importJWK(jwk, row.alg)) as CryptoKey;
        keys.push({
          kid: row.kid,
          alg: row.alg as SigningAlg,
          createdAt: row.createdAt,
          privateKey,
          publicJwk: row.publicJwk as JWK,
        });
      }
      this.#keys = keys;
      this.#loadedAt = Date.now();
    })().finally(() => {
      this.#loading = undefined;
    });
    return this.#loading;
  }

  async #create(alg: SigningAlg): Promise<string> {
    const row = await this.#generate(alg);
    await this.#db.signingKey.create({ data: row });
    return row.kid;
  }

  /** A new key pair of `alg`: its public JWK, and its private JWK encrypted with SECRET_KEY. */
  async #generate(
    alg: SigningAlg,
  ): Promise<{ kid: string; alg: SigningAlg; publicJwk: Record<string, string>; privateJwe: string }> {
    const { publicKey, privateKey } = await generateKeyPair(alg, {
      extractable: true,
      ...(alg === 'RS256' ? { modulusLength: 2048 } : {}),
    });
    const kid = crypto.randomUUID();
    const privateJwe = await seal(JSON.stringify(await exportJWK(privateKey)), this.#secret);
    const { kty, n, e, crv, x, y } = await exportJWK(publicKey);
    const publicJwk = Object.fromEntries(
      Object.entries({ kty, n, e, crv, x, y }).filter(([, v]) => v !== undefined),
    ) as Record<string, string>;
    return { kid, alg, publicJwk, privateJwe };
  }
}
