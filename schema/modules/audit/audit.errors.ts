// Audit refuses nothing of its own (docs/architecture.md#errors): a filter that does not parse is the shared
// ValidationError (invalid_request, with a detail per field), and who may read which entries is an access problem
// (forbidden, not_found) answered by the scopes and schema/auth/access.ts. New refusals of this domain go here.
export {};
