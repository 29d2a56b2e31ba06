// Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document; docs/architecture.md#apps-without-secrets):
// an application that is registered nowhere names itself by the https URL of a JSON document about itself. Tessera
// fetches that URL through the webhook address guard (push/guarded-fetch.ts: https only, no private address, no
// redirect followed), at most 5 kB, and keeps what it read as a public client row whose client_id is the URL, owned
// by the operator organization, until the document's cache headers say to read it again (within 5 minutes and 24
// hours). Which organization such a client signs a person into is decided per request (authorize/load.ts).
import CachePolicy from 'http-cache-semantics';
import { z } from 'zod';
import type { Context } from '../../context.ts';
import type { Db } from '../../db.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { unstorableInput } from '../../lib/storable.ts';
import { DEFAULT_WEBHOOK_SETTINGS } from '../../push/destination.ts';
import { upstreamFetch, upstreamFetchErrorIn } from '../../push/guarded-fetch.ts';
import { redirectUri } from './clients.service.ts';

/** The largest document read; past it the connection is dropped. */
export const METADATA_DOCUMENT_LIMIT = 5 * 1024;
const MIN_CACHE_SECONDS = 5 * 60;
const MAX_CACHE_SECONDS = 24 * 3600;
/** What client authentication accepts as a client_id (client-authentication.ts), and so the longest such URL. */
const MAX_CLIENT_ID_LENGTH = 200;
/** The scopes a client known only by its document may ask for: the person's own, never `api` or a product's. */
export const METADATA_CLIENT_SCOPES = ['openid', 'profile', 'email', 'offline_access'];
const GRANT_TYPES = ['authorization_code', 'refresh_token'];

/** Why a document cannot be used, in words shown on the authorization page. */
export class MetadataDocumentRefused extends Error {
  override readonly name = 'MetadataDocumentRefused';
}

/**
 * A client_id that names a metadata document: an https URL with a path, written as the URL parser writes it (so no
 * dot segment, no default port, no fragment), with no user name or password (the draft's section 3).
 */
export function isMetadataClientId(clientId: string | undefined): clientId is string {
  if (!clientId || clientId.length > MAX_CLIENT_ID_LENGTH || !clientId.startsWith('https://')) return false;
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return false;
  }
  return url.href === clientId && url.pathname !== '/' && !url.hash && !url.username && !url.password;
}

const noControl = (v: string) => !/[\u0000-\u001f\u007f-\u009f]/.test(v);

/** The members Tessera reads; any other member is ignored, as RFC 7591 2 says of unknown metadata. */
const documentShape = (clientId: string) =>
  z.object({
    client_id: z.literal(clientId, { message: 'must be the URL the document was fetched from' }),
    redirect_uris: z.array(redirectUri).min(1, 'must name at least one redirect URI').max(20, 'at most 20'),
    client_name: z.string().trim().min(1).max(200).refine(noControl, 'must not contain control characters').optional(),
    token_endpoint_auth_method: z
      .literal('none', { message: 'must be none: only public clients may be known by a document' })
      .optional(),
    grant_types: z
      .array(z.string())
      .refine((g) => g.includes('authorization_code'), 'must include authorization_code')
      .optional(),
    response_types: z
      .array(z.string())
      .refine((r) => r.includes('code'), 'must include code')
      .optional(),
    scope: z.string().max(1000).optional(),
    // A document is public: one that carries a secret is not one to trust (the draft's section 4.1).
    client_secret: z.undefined({ message: 'must not be in a public document' }).optional(),
  });

export type MetadataDocument = z.infer<ReturnType<typeof documentShape>>;

/** The document's body as a metadata document for `clientId`, or the reason it is not one. */
export function readMetadataDocument(clientId: string, body: Uint8Array): MetadataDocument {
  if (body.includes(0)) throw new MetadataDocumentRefused('the document contains a NUL byte');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new MetadataDocumentRefused('the document is not UTF-8');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new MetadataDocumentRefused('the document is not JSON');
  }
  // An escaped NUL or a lone surrogate in any name or value: what no column can hold, by the interfaces' own rule.
  const [unstorable] = unstorableInput([[json, '']]);
  if (unstorable) throw new MetadataDocumentRefused(`${unstorable.path || 'the document'} ${unstorable.message}`);
  const read = documentShape(clientId).safeParse(json);
  if (!read.success) {
    const issue = read.error.issues[0];
    const where = issue?.path.length ? issue.path.join('.') : 'the document';
    throw new MetadataDocumentRefused(`${where} ${issue?.message ?? 'is not a client metadata document'}`);
  }
  return read.data;
}

/**
 * How long a fetched document is kept: as long as HTTP caching allows (RFC 9111, read by http-cache-semantics:
 * max-age, Expires against the answer's Date, no-store, no-cache), within 5 minutes and 24 hours. An answer without
 * a Date is taken as sent `now`.
 */
export function cacheSeconds(headers: Headers, now: Date): number {
  const response = Object.fromEntries(headers);
  response.date ??= now.toUTCString();
  const policy = new CachePolicy({ method: 'GET', headers: {} }, { status: 200, headers: response });
  const seconds = policy.storable() ? Math.floor(policy.timeToLive() / 1000) : 0;
  return Math.min(MAX_CACHE_SECONDS, Math.max(MIN_CACHE_SECONDS, seconds));
}

/** The document at `clientId`, fetched under the guard, and until when it may be kept. */
async function fetchDocument(ctx: Context, clientId: string): Promise<{ document: MetadataDocument; until: Date }> {
  const settings = ctx.settings.webhooks ?? DEFAULT_WEBHOOK_SETTINGS;
  let response: Response;
  try {
    response = await upstreamFetch(settings, METADATA_DOCUMENT_LIMIT)(clientId, {
      method: 'GET',
      headers: { accept: 'application/json' },
      body: undefined,
      redirect: 'manual',
    });
  } catch (error) {
    const fetchError = upstreamFetchErrorIn(error);
    if (fetchError) throw new MetadataDocumentRefused(fetchError.message);
    throw error;
  }
  if (response.status >= 300 && response.status < 400)
    throw new MetadataDocumentRefused(`${new URL(clientId).host} answered with a redirect, which is not followed`);
  if (response.status !== 200)
    throw new MetadataDocumentRefused(`${new URL(clientId).host} answered with HTTP status ${response.status}`);
  const type = (response.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type !== 'application/json' && !type.endsWith('+json'))
    throw new MetadataDocumentRefused('the document is not served as application/json');
  const now = ctx.clock.now();
  const document = readMetadataDocument(clientId, new Uint8Array(await response.arrayBuffer()));
  return { document, until: new Date(now.getTime() + cacheSeconds(response.headers, now) * 1000) };
}

/** The scopes a document's client may ask for: those its `scope` names among METADATA_CLIENT_SCOPES, else all of them. */
function allowedScopes(document: MetadataDocument): string[] {
  if (document.scope === undefined) return METADATA_CLIENT_SCOPES;
  const named = new Set(document.scope.split(' '));
  return METADATA_CLIENT_SCOPES.filter((s) => named.has(s));
}

/**
 * Stores what the document says as the client's row, in one statement. A client_id a registered client holds is
 * never taken over (registered ids are not URLs, and the update is limited to document clients); a client an
 * operator disabled stays disabled.
 */
async function storeClient(db: Db, clientId: string, document: MetadataDocument, until: Date): Promise<void> {
  const name = document.client_name ?? new URL(clientId).host;
  await db.$executeRaw`
    insert into oauth_clients (id, client_id, secret_hash, token_endpoint_auth_method, organization_id, name, description,
                               redirect_uris, allowed_scopes, grant_types, consent_required, metadata_document,
                               metadata_expires_at, updated_at)
    select ${uuidv7()}, ${clientId}, null, 'none', o.id, ${name}, '', ${[...new Set(document.redirect_uris)]}::text[],
           ${allowedScopes(document)}::text[], ${GRANT_TYPES}::text[], true, true, ${until}, now()
    from organizations o where o.is_operator limit 1
    on conflict (client_id) do update set name = excluded.name, redirect_uris = excluded.redirect_uris,
      allowed_scopes = excluded.allowed_scopes, metadata_expires_at = excluded.metadata_expires_at, updated_at = now()
    where oauth_clients.metadata_document`;
}

/** The fetches under way in this process, by database and client_id: twenty requests at once fetch once. */
const inFlight = new WeakMap<Db, Map<string, Promise<void>>>();

/**
 * Makes sure the client row of the document at `clientId` is current: read again once its time is up. A document
 * that cannot be fetched or used throws MetadataDocumentRefused, whatever was stored before.
 */
export async function refreshMetadataClient(ctx: Context, clientId: string): Promise<void> {
  if (await storedIsCurrent(ctx, clientId)) return;
  let fetches = inFlight.get(ctx.db);
  if (!fetches) inFlight.set(ctx.db, (fetches = new Map<string, Promise<void>>()));
  const running = fetches.get(clientId);
  if (running) return running;
  const fetching = (async () => {
    // A fetch that ended between the read above and here has stored the row already: read it again first.
    if (await storedIsCurrent(ctx, clientId)) return;
    const { document, until } = await fetchDocument(ctx, clientId);
    await storeClient(ctx.db, clientId, document, until);
  })().finally(() => fetches.delete(clientId));
  fetches.set(clientId, fetching);
  return fetching;
}

/** A row for `clientId` that needs no fetch: a registered client's, or a document's still within its time. */
async function storedIsCurrent(ctx: Context, clientId: string): Promise<boolean> {
  const stored = await ctx.db.oAuthClient.findUnique({
    where: { clientId },
    select: { metadataDocument: true, metadataExpiresAt: true },
  });
  return !!stored && (!stored.metadataDocument || (stored.metadataExpiresAt ?? new Date(0)) > ctx.clock.now());
}
