// The marketplace (docs/architecture.md#marketplace). Platform admins register apps; an organization's admins
// install one, which makes an OAuth client for it and pushes the credentials to the app, signed like a webhook;
// members open installed apps through the authorization URL whose state is the organization id; uninstalling ends
// the client and everything issued to it, then tells the app through the worker.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { isUniqueViolation } from '../../db.ts';
import { NotFoundError } from '../../errors/index.ts';
import { organizationInScope, requireActor, requireOrgRole, requirePlatformAdmin } from '../../auth/access.ts';
import { randomToken, sha256 } from '../../lib/crypto.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';
import { emitEvents } from '../../events/emit.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { CLIENT_ID_PREFIX, CLIENT_SECRET_PREFIX, redirectUri } from '../clients/clients.service.ts';
import { isKnownScope } from '../oauth/scopes.ts';
import { checkDestination, DEFAULT_WEBHOOK_SETTINGS, type Destination } from '../../push/destination.ts';
import { DestinationError } from '../../push/push.errors.ts';
import { seal } from '../../lib/sealed.ts';
import { newSecret } from '../../push/secret.ts';
import { send } from '../../push/sender.ts';
import { isAccepted, signMessage } from '../../push/signed-attempt.ts';
import {
  AlreadyInstalledError,
  AppInstalledError,
  AppUnreachableError,
  AppWriterOnlyError,
  WebhookUrlNotAllowedError,
} from './apps.errors.ts';
import { notificationJobSql } from './notifications.service.ts';

const scope = z
  .string()
  .refine(
    isKnownScope,
    'is not a known scope (openid, profile, email, organization, offline_access, api or a product slug)',
  );
const appFields = {
  name: fields.name,
  description: z.string().trim().max(1000, 'must be at most 1000 characters'),
  webhookUrl: fields.httpsUrl,
  // The first one is where a launch returns to.
  redirectUris: z
    .array(redirectUri)
    .min(1, 'must name at least one')
    .max(20, 'at most 20')
    .transform((l) => [...new Set(l)]),
  scopes: z
    .array(scope)
    .min(1, 'must name at least one scope')
    .max(100)
    .transform((l) => [...new Set(l)]),
  homepageUrl: fields.httpsUrl.nullable(),
};
const createInput = z
  .object({
    ...appFields,
    description: appFields.description.default(''),
    homepageUrl: appFields.homepageUrl.optional(),
  })
  .strict();
const updateInput = z.object(appFields).partial().strict();
const installInput = z.object({ organizationId: fields.id.nullish() }).strict();

const settingsOf = (ctx: Context) => ctx.settings.webhooks ?? DEFAULT_WEBHOOK_SETTINGS;

const requireAppWriter = (ctx: Context) => requirePlatformAdmin(ctx, AppWriterOnlyError);

/** The SSRF guard of webhooks, at registration and edit; the install checks again and connects to what it checked. */
async function checkWebhookUrl(ctx: Context, url: string): Promise<void> {
  try {
    await checkDestination(url, settingsOf(ctx));
  } catch (error) {
    if (error instanceof DestinationError) throw new WebhookUrlNotAllowedError(error.message);
    throw error;
  }
}

async function findApp(ctx: Context, id: unknown) {
  const appId = parseInput(fields.id, id);
  const app = await ctx.db.app.findUnique({ where: { id: appId } });
  if (!app) throw new NotFoundError('App');
  return app;
}

export async function listApps(ctx: Context, page?: PageInput) {
  requireActor(ctx);
  const { limit, args } = paged(page, {});
  return toPage(await ctx.db.app.findMany(args), limit);
}

export async function getApp(ctx: Context, id: unknown) {
  requireActor(ctx);
  return findApp(ctx, id);
}

export async function createApp(ctx: Context, input: unknown) {
  const operatorId = await requireAppWriter(ctx);
  const data = parseInput(createInput, input);
  await checkWebhookUrl(ctx, data.webhookUrl);
  const signingSecret = newSecret();
  const signingSecretEncrypted = await seal(signingSecret, ctx.settings.secretKey);
  const app = await ctx.db.$transaction(async (tx) => {
    const app = await tx.app.create({
      data: { ...data, homepageUrl: data.homepageUrl ?? null, signingSecretEncrypted },
    });
    await recordAudit(
      ctx,
      {
        action: 'app.create',
        organizationId: operatorId,
        targetType: 'app',
        targetId: app.id,
        details: { name: app.name, webhookUrl: app.webhookUrl },
      },
      tx,
    );
    return app;
  });
  return { app, signingSecret };
}

/** A change of name, redirect URIs or scopes reaches every installed client in the same transaction. */
export async function updateApp(ctx: Context, id: unknown, input: unknown) {
  const operatorId = await requireAppWriter(ctx);
  const app = await findApp(ctx, id);
  const data = parseInput(updateInput, input);
  if (data.webhookUrl !== undefined) await checkWebhookUrl(ctx, data.webhookUrl);
  return ctx.db.$transaction(async (tx) => {
    const updated = await tx.app.update({ where: { id: app.id }, data });
    const clients = { name: data.name, redirectUris: data.redirectUris, allowedScopes: data.scopes };
    if (Object.values(clients).some((v) => v !== undefined)) {
      await tx.oAuthClient.updateMany({ where: { installation: { is: { appId: app.id } } }, data: clients });
    }
    await recordAudit(
      ctx,
      {
        action: 'app.update',
        organizationId: operatorId,
        targetType: 'app',
        targetId: app.id,
        details: { fields: Object.keys(data) },
      },
      tx,
    );
    return updated;
  });
}

export async function deleteApp(ctx: Context, id: unknown) {
  const operatorId = await requireAppWriter(ctx);
  const app = await findApp(ctx, id);
  try {
    await ctx.db.$transaction(async (tx) => {
      await tx.app.delete({ where: { id: app.id } });
      await recordAudit(
        ctx,
        {
          action: 'app.delete',
          organizationId: operatorId,
          targetType: 'app',
          targetId: app.id,
          details: { name: app.name },
        },
        tx,
      );
    });
  } catch (error) {
    // installations.app_id is ON DELETE RESTRICT: pending installations count too.
    if ((error as { code?: unknown } | null)?.code === 'P2003') throw new AppInstalledError();
    throw error;
  }
  return true;
}

/** A new signing secret; the old one signs nothing from now on (every push reads the secret when it is sent). */
export async function rotateAppSecret(ctx: Context, id: unknown) {
  const operatorId = await requireAppWriter(ctx);
  const app = await findApp(ctx, id);
  const signingSecret = newSecret();
  const signingSecretEncrypted = await seal(signingSecret, ctx.settings.secretKey);
  const updated = await ctx.db.$transaction(async (tx) => {
    const updated = await tx.app.update({ where: { id: app.id }, data: { signingSecretEncrypted } });
    await recordAudit(
      ctx,
      { action: 'app.rotate_secret', organizationId: operatorId, targetType: 'app', targetId: app.id },
      tx,
    );
    return updated;
  });
  return { app: updated, signingSecret };
}

const installationInclude = { app: true, client: { select: { clientId: true } } } as const;

/** The authorization URL that opens the app for a member: state carries the organization id, and no nonce. */
export function launchUrl(
  ctx: Context,
  installation: {
    organizationId: string;
    app: { redirectUris: string[]; scopes: string[] };
    client: { clientId: string };
  },
): string {
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: installation.client.clientId,
    redirect_uri: installation.app.redirectUris[0] ?? '',
    scope: installation.app.scopes.join(' '),
    state: installation.organizationId,
  });
  return `${ctx.settings.issuer()}/oauth/authorize?${params}`;
}

function unreachableReason(result: { statusCode: number | null; error: string | null }, timeoutMs: number): string {
  if (result.statusCode !== null) return `it answered HTTP ${result.statusCode}`;
  if (result.error?.startsWith('no answer')) return `no answer within ${timeoutMs} ms`;
  // The cause as the network gave it (a refused connection, a certificate the receiver's chain does not prove).
  return `it could not be reached: ${result.error ?? 'no connection'}`;
}

/**
 * Installs an app in one step that leaves nothing behind when it fails, even if the process dies halfway: the client
 * (disabled) and the installation are written as pending in one transaction, the credentials are pushed with no
 * transaction open, then both are made active, or deleted when the app did not answer 2xx in time. A pending row
 * whose request died is deleted by the sweep (sweepStaleInstallations); its client never authorized anything.
 */
export async function installApp(ctx: Context, appId: unknown, input: unknown = {}) {
  const data = parseInput(installInput, input ?? {});
  const organizationId = organizationInScope(ctx, data.organizationId);
  await requireOrgRole(ctx, organizationId, 'admin');
  const app = await findApp(ctx, appId);
  const settings = settingsOf(ctx);
  let destination: Destination;
  try {
    destination = await checkDestination(app.webhookUrl, settings);
  } catch (error) {
    if (error instanceof DestinationError)
      throw new AppUnreachableError(`its webhook URL ${error.message}`, app.webhookUrl);
    throw error;
  }
  if (
    await ctx.db.installation.findUnique({
      where: { appId_organizationId: { appId: app.id, organizationId } },
      select: { id: true },
    })
  ) {
    throw new AlreadyInstalledError();
  }

  const actor = requireActor(ctx);
  const userId = actor.kind === 'apiKey' ? actor.createdById : actor.userId;
  const clientId = randomToken(CLIENT_ID_PREFIX, 16);
  const clientSecret = randomToken(CLIENT_SECRET_PREFIX);
  let pending;
  try {
    pending = await ctx.db.$transaction(async (tx) => {
      const client = await tx.oAuthClient.create({
        data: {
          clientId,
          secretHash: sha256(clientSecret),
          organizationId,
          createdById: userId,
          name: app.name,
          description: `Marketplace app ${app.name}`,
          redirectUris: app.redirectUris,
          allowedScopes: app.scopes,
          // The installing admin consents for the organization (docs/architecture.md#marketplace); disabled until
          // the app took the credentials.
          consentRequired: false,
          enabled: false,
        },
      });
      return tx.installation.create({
        data: {
          appId: app.id,
          organizationId,
          oauthClientId: client.id,
          installedById: userId,
          createdAt: ctx.clock.now(),
        },
      });
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AlreadyInstalledError();
    throw error;
  }

  const body = JSON.stringify({ event: 'app.installed', organizationId, clientId, clientSecret });
  const { headers } = await signMessage(
    { clock: ctx.clock, secretKey: ctx.settings.secretKey },
    app.signingSecretEncrypted,
    {
      eventId: pending.id,
      deliveryId: uuidv7(),
      kind: 'app.installed',
      body,
    },
  );
  const result = await send(destination, headers, body, { timeoutMs: settings.timeoutMs, ca: settings.ca });

  if (!isAccepted(result)) {
    const reason = unreachableReason(result, settings.timeoutMs);
    await ctx.db.$transaction(async (tx) => {
      // The installation goes with its client (ON DELETE CASCADE).
      await tx.oAuthClient.deleteMany({ where: { id: pending.oauthClientId } });
      await recordAudit(
        ctx,
        {
          action: 'app.install',
          outcome: 'failure',
          organizationId,
          targetType: 'app',
          targetId: app.id,
          details: { reason },
        },
        tx,
      );
    });
    throw new AppUnreachableError(reason, app.webhookUrl);
  }

  return ctx.db.$transaction(async (tx) => {
    const now = ctx.clock.now();
    const activated = await tx.installation.updateMany({
      where: { id: pending.id, status: 'pending' },
      data: { status: 'active', activatedAt: now },
    });
    // Swept while the app took its time: nothing is left to activate.
    if (activated.count !== 1) throw new AppUnreachableError('it answered too late', app.webhookUrl);
    const client = await tx.oAuthClient.update({
      where: { id: pending.oauthClientId },
      data: { enabled: true },
      include: { organization: { select: { id: true, name: true } } },
    });
    await emitEvents(tx, ['oauth.client.created', 'oauth_client.created'], client.organization, {
      client: { id: client.id, clientId: client.clientId, name: client.name },
    });
    await recordAudit(
      ctx,
      {
        action: 'oauth_client.create',
        organizationId,
        targetType: 'oauth_client',
        targetId: client.id,
        details: { appId: app.id },
      },
      tx,
    );
    await recordAudit(
      ctx,
      {
        action: 'app.install',
        organizationId,
        targetType: 'installation',
        targetId: pending.id,
        details: { appId: app.id, clientId },
      },
      tx,
    );
    return tx.installation.findUniqueOrThrow({ where: { id: pending.id }, include: installationInclude });
  });
}

/** An active installation the caller may see (any member of its organization); anything else is not found. */
async function findInstallation(ctx: Context, id: unknown, role: 'member' | 'admin') {
  const installationId = parseInput(fields.id, id);
  const installation = await ctx.db.installation.findUnique({
    where: { id: installationId },
    include: {
      ...installationInclude,
      client: { select: { id: true, clientId: true, name: true } },
      organization: { select: { id: true, name: true } },
    },
  });
  if (!installation || installation.status !== 'active') throw new NotFoundError('Installation');
  await requireOrgRole(ctx, installation.organizationId, role, 'Installation');
  return installation;
}

export async function listInstallations(ctx: Context, organizationId?: string | null, page?: PageInput) {
  const orgId = organizationInScope(ctx, organizationId);
  await requireOrgRole(ctx, orgId, 'member');
  const { limit, args } = paged(page, { organizationId: orgId, status: 'active' });
  return toPage(await ctx.db.installation.findMany({ ...args, include: installationInclude }), limit);
}

export const getInstallation = (ctx: Context, id: unknown) => findInstallation(ctx, id, 'member');

/**
 * Uninstalls in one transaction: the client is deleted, and with it every grant, code, refresh token and consent
 * (ON DELETE CASCADE), so its access tokens fail verification at once and the token endpoint no longer knows it; the
 * installation goes with it. The app.uninstalled notice is queued in the same transaction and sent by the worker.
 */
export async function uninstallApp(ctx: Context, id: unknown) {
  const installation = await findInstallation(ctx, id, 'admin');
  const body = JSON.stringify({ event: 'app.uninstalled', organizationId: installation.organizationId });
  await ctx.db.$transaction(async (tx) => {
    await tx.oAuthClient.delete({ where: { id: installation.oauthClientId } });
    const { client } = installation;
    await emitEvents(tx, ['oauth.client.deleted', 'oauth_client.deleted'], installation.organization, {
      client: { id: client.id, clientId: client.clientId, name: client.name },
    });
    const notification = await tx.appNotification.create({
      data: {
        appId: installation.appId,
        organizationId: installation.organizationId,
        kind: 'app.uninstalled',
        body,
        nextAttemptAt: ctx.clock.now(),
      },
    });
    await tx.$queryRaw`select (${notificationJobSql(notification.id, installation.appId, 1, ctx.clock.now())}).id`;
    await recordAudit(
      ctx,
      {
        action: 'oauth_client.delete',
        organizationId: installation.organizationId,
        targetType: 'oauth_client',
        targetId: client.id,
        details: { appId: installation.appId },
      },
      tx,
    );
    await recordAudit(
      ctx,
      {
        action: 'app.uninstall',
        organizationId: installation.organizationId,
        targetType: 'installation',
        targetId: installation.id,
        details: { appId: installation.appId },
      },
      tx,
    );
  });
  return installation;
}
