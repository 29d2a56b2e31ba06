// The scopes Tessera knows. A product's slug is a scope of its own (the catalog issue adds the licence rule).
export const STANDARD_SCOPES = {
  openid: 'Sign you in with your Tessera account',
  profile: 'See your name and picture',
  email: 'See your e-mail address',
  organization: 'See your organization and your role in it',
  offline_access: 'Stay connected when you are not using it',
  // Never granted by default: only a client whose allowed_scopes list it may ask (docs/architecture.md#oauth-and-openid-connect).
  api: "Act as you in Tessera's API",
} as const;

export type StandardScope = keyof typeof STANDARD_SCOPES;

const PRODUCT_SCOPE = /^[a-z0-9][a-z0-9-]{0,62}$/;

export const isKnownScope = (scope: string) => scope in STANDARD_SCOPES || PRODUCT_SCOPE.test(scope);

export function describeScope(scope: string): string {
  return STANDARD_SCOPES[scope as StandardScope] ?? `Use ${scope} on your behalf`;
}

/** Splits a space-separated scope string; duplicates dropped, order kept. */
export function parseScope(value: string | undefined | null): string[] {
  return [...new Set((value ?? '').split(' ').filter(Boolean))];
}
