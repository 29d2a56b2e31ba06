// A push's signing secret: Standard Webhooks' form (whsec_ + base64 of 32 random bytes), stored sealed
// (schema/lib/sealed.ts), and the signature headers made with it.
import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

const PREFIX = 'whsec_';

export const newSecret = () => `${PREFIX}${randomBytes(32).toString('base64')}`;

// The two HMAC keys of a secret, made once: making them from the string on every attempt was most of signing's CPU.
const hmacKeys = new Map<string, { hex: KeyObject; v1: KeyObject }>();
function keysOf(secret: string) {
  let keys = hmacKeys.get(secret);
  if (!keys) {
    if (hmacKeys.size >= 1000) hmacKeys.clear();
    keys = {
      hex: createSecretKey(Buffer.from(secret, 'utf8')),
      v1: createSecretKey(Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64')),
    };
    hmacKeys.set(secret, keys);
  }
  return keys;
}

/**
 * The headers that sign one attempt. X-Service-Signature is the interface's: hex HMAC-SHA256 of the raw body keyed
 * with the secret as written. webhook-signature is Standard Webhooks' (v1): base64 HMAC-SHA256 of
 * "<webhook-id>.<webhook-timestamp>.<body>" keyed with the base64-decoded part after whsec_; receivers check the
 * timestamp to refuse replays. webhook-id is the event id, the same on every attempt (the idempotency key).
 */
export function signatureHeaders(
  secret: string,
  input: { eventId: string; deliveryId: string; kind: string; body: string; timestamp: Date },
) {
  const seconds = Math.floor(input.timestamp.getTime() / 1000);
  const keys = keysOf(secret);
  const hex = createHmac('sha256', keys.hex).update(input.body).digest('hex');
  const v1 = createHmac('sha256', keys.v1).update(`${input.eventId}.${seconds}.${input.body}`).digest('base64');
  return {
    'content-type': 'application/json',
    'user-agent': 'Tessera-Webhooks/1',
    'x-service-signature': `sha256=${hex}`,
    'x-service-event': input.kind,
    'x-service-delivery': input.deliveryId,
    'webhook-id': input.eventId,
    'webhook-timestamp': String(seconds),
    'webhook-signature': `v1,${v1}`,
  };
}
