import type { HTMLInputAttributes } from 'svelte/elements';

/**
 * A field for the code of an authenticator app (RFC 6238): digits, spaces allowed as the apps group them, typed on a
 * phone's number pad and offered by password managers.
 */
export const ONE_TIME_CODE = {
	type: 'text',
	inputmode: 'numeric',
	autocomplete: 'one-time-code',
	pattern: '[0-9 ]*',
	maxlength: 8,
} as const satisfies HTMLInputAttributes;
