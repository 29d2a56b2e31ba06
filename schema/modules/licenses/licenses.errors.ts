// The license check refuses nothing of its own (docs/architecture.md#errors): it answers as the general path does,
// with the credential's refusal (oauth.errors.ts InvalidToken), the access rules' (schema/auth/access.errors.ts
// MfaEnrollmentRequiredError), a rate limit's, or the shared ValidationError for input. New refusals of this
// domain go here.
export {};
