// The client a browser request names (the consent page, RP-initiated logout): known and enabled, or invalid_client.
import type { Context } from '../../context.ts';
import type { Prisma } from '../../db.ts';
import { InvalidClient } from './oauth.errors.ts';

export async function findEnabledClient(
  ctx: Context,
  clientId: string | undefined,
): Promise<Prisma.OAuthClientGetPayload<object>> {
  if (!clientId || clientId.length > 200) throw new InvalidClient();
  const client = await ctx.db.oAuthClient.findUnique({ where: { clientId } });
  if (!client || !client.enabled) throw new InvalidClient();
  return client;
}
