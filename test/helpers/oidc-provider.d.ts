// The package ships no types: what the test identity provider (oidc-upstream.ts) uses of it.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface ProviderContext {
    path: string;
    method: string;
    status: number;
    body: unknown;
    req: IncomingMessage;
    res: ServerResponse;
    redirect(url: string): void;
  }

  export interface InteractionDetails {
    uid: string;
    params: Record<string, unknown>;
    prompt: { name: string; details: Record<string, unknown> };
    session?: { accountId: string };
    grantId?: string;
  }

  export interface Grant {
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    save(): Promise<string>;
  }

  export class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    readonly issuer: string;
    use(fn: (ctx: ProviderContext, next: () => Promise<void>) => Promise<void>): this;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionResult(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<string>;
    Grant: {
      new (properties: { accountId: string; clientId: string }): Grant;
      find(id: string): Promise<Grant | undefined>;
    };
    on(event: string, listener: (...args: unknown[]) => void): this;
  }
  export default Provider;
}
