// What an operator measures (docs/architecture.md#metrics). Code that counts something is given a Metrics: the
// prom-client one (prometheus.ts, loaded only when METRICS_TOKEN or METRICS_PORT is set), or the no-op one, so a
// deployment that does not scrape pays nothing and loads nothing.

/** `sso`: through an organization's or a platform-wide identity provider (OpenID Connect, SAML, GitHub). */
export type SignInMethod = 'password' | 'second_factor' | 'passkey' | 'sso';
export type DeliveryOutcome = 'delivered' | 'retrying' | 'failed';
export type MailOutcome = 'sent' | 'mailbox' | 'retrying' | 'failed';

export interface Metrics {
  /** One HTTP request: `route` is the route's template (/v1/users/:id), never the raw path. */
  request(method: string, route: string, status: number, seconds: number): void;
  tokenIssued(grantType: string): void;
  signIn(outcome: 'success' | 'failure' | 'throttled', method: SignInMethod): void;
  webhookAttempt(outcome: DeliveryOutcome, seconds: number): void;
  mailAttempt(outcome: MailOutcome, seconds: number): void;
}

export const noMetrics: Metrics = {
  request() {},
  tokenIssued() {},
  signIn() {},
  webhookAttempt() {},
  mailAttempt() {},
};
