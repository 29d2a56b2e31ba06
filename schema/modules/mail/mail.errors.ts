// Failures of mail delivery (docs/architecture.md#mail). A refusal to read the log is an access problem of the
// shared kinds (forbidden, not_found).

/** A temporary failure: the job throws it so that graphile-worker schedules the next attempt. */
export class MailNotYetSentError extends Error {}
