// Failures of sending webhooks (docs/architecture.md#events-webhooks-and-the-outbox).

/** A destination refused before anything is sent: not https, or an address the guard does not allow. */
export class DestinationError extends Error {}

/**
 * A guarded call (guarded-fetch.ts) to an identity provider or for a metadata document that got no usable answer: `refused` by the address guard, `unreachable` (no
 * connection, or it broke), `timeout`, or `too_large`. The message names the host, never a secret.
 */
export class UpstreamFetchError extends Error {
  readonly kind: 'refused' | 'unreachable' | 'timeout' | 'too_large';
  constructor(kind: UpstreamFetchError['kind'], message: string) {
    super(message);
    this.name = 'UpstreamFetchError';
    this.kind = kind;
  }
}
