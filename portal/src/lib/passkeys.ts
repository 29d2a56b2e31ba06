// What the passkey pieces of the portal (the sign-in's and the security page's) say when the browser's WebAuthn
// ceremony does not complete.
import { WebAuthnError } from '@simplewebauthn/browser';

/** The words for a ceremony that failed, or null when the person cancelled it or another one replaced it. */
export function ceremonyProblem(error: unknown): string | null {
	const name = (error as { name?: string } | null)?.name;
	if (error instanceof WebAuthnError && error.code === 'ERROR_CEREMONY_ABORTED') return null;
	if (name === 'AbortError') return null;
	// Cancelled, timed out, or no passkey chosen: the browser does not tell these apart (WebAuthn Level 3, 5.1.4.1).
	if (name === 'NotAllowedError') return 'The passkey request was cancelled or timed out. Try again.';
	if (error instanceof WebAuthnError && error.code === 'ERROR_AUTHENTICATOR_PREVIOUSLY_REGISTERED')
		return 'This device already holds a passkey for your account.';
	return error instanceof Error ? `The passkey could not be used: ${error.message}` : 'The passkey could not be used.';
}

/** A passkey as the security page lists it. */
export interface PasskeyItem {
	id: string;
	name: string;
	createdAt: string;
	lastUsedAt: string | null;
	deviceType: string;
	backedUp: boolean;
}
