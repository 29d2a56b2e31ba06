// The codes a UserError carries, each said once for clients: schema.graphql prints them as the UserErrorCode enum,
// and each domain's mutations name the ones they can answer in an enum of their own (schema/mutation-errors.ts).
// A code is stable: renaming one breaks every client that reads it.
export const USER_ERROR_CODES = {
  invalid_request: 'The input is not valid: `details` names each field and its problem.',
  conflict: 'The change does not fit the current state (already done, taken, or the last of its kind).',
  invalid_credentials: 'A password, code, passkey or proof of the account is wrong.',
  app_unreachable:
    'The app did not accept its installation (refused, timed out or unreachable); nothing was installed.',
  domain_taken: 'Another organization has already verified this domain.',
  verification_failed: 'The DNS TXT record that proves the domain was not found; `details` says what was.',
  sso_required: 'The organization requires single sign-on for this address; `details` names the connection.',
  sso_failed: 'A sign-in through an identity provider did not succeed; `details` gives the reason.',
  issuer_unreachable: 'The identity provider could not be reached, or gave no usable discovery document.',
  passkeys_unavailable: 'Passkeys are not offered here: the service is reached by an IP address, not a domain name.',
  invalid_challenge: 'The passkey request expired, was used already, or was for another purpose: start again.',
  passkey_counter_mismatch: 'The passkey reported a use count lower than before, as a copied key would.',
} as const;

export type UserErrorCode = keyof typeof USER_ERROR_CODES;
