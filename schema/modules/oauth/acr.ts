// Authentication context classes (OIDC Core 2, the acr claim): what an ID token says of the sign-in behind it,
// derived from its RFC 8176 amr. Two levels: one factor, or a second factor (a code, or a passkey with user
// verification, which is both something held and something known or are) (docs/architecture.md#second-factors).
export const ACR_ONE_FACTOR = 'urn:tessera:acr:1fa';
export const ACR_MFA = 'urn:tessera:acr:mfa';

/** Discovery's acr_values_supported, weakest first. */
export const ACR_VALUES = [ACR_ONE_FACTOR, ACR_MFA] as const;

export const acrOf = (amr: readonly string[]): string => (amr.includes('mfa') ? ACR_MFA : ACR_ONE_FACTOR);
