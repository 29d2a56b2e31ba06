// What a /scim/v2 request carries once its token is accepted: the services' context, the directory's caller and
// where the endpoints are (for locations and $ref).
import type Koa from 'koa';
import type { Context } from '../../schema/context.ts';
import type { ScimCaller } from '../../schema/modules/directory/directory.types.ts';

export interface ScimState {
  context: Context;
  caller: ScimCaller;
  /** `{BASE_URL}/scim/v2` */
  base: string;
}

export function scimState(ctx: Koa.Context): ScimState {
  return ctx.state.scim as ScimState;
}
