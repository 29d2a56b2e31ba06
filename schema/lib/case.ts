// snake_case <-> camelCase for field names: REST bodies and the portal's forms speak snake_case, GraphQL and the
// services camelCase (docs/architecture.md#rest-conventions).

/** `redirectUris` -> `redirect_uris`; a dotted path keeps its dots (`redirectUris.0` -> `redirect_uris.0`). */
export const snakeCase = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** `redirect_uris` -> `redirectUris`. */
export const camelCase = (name: string) => name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
