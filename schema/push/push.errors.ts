// Failures of sending webhooks (docs/architecture.md#events-webhooks-and-the-outbox).

/** A destination refused before anything is sent: not https, or an address the guard does not allow. */
export class DestinationError extends Error {}
