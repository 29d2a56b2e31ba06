// /portal/security's two-factor section (docs/architecture.md#second-factors): the person's second factors, setting
// up an authenticator app (a QR code and the secret, confirmed by a first code, answered by ten recovery codes shown
// once), removing it and a new set of recovery codes (each with the password or a code). Opened with ?enrol=1 when
// the organization requires a second factor, and then on to where the person was going.
import { fail, type RequestEvent } from '@sveltejs/kit';
import { refused, userErrorStatus } from '#lib/server/errors.ts';
import { gql, type UserError, graphql, type ResultOf, USER_ERROR_FIELDS } from '#lib/server/graphql.ts';
import { safeReturnTo } from '#lib/server/session.ts';

const MY_MFA = graphql(`
	query MyMfa {
		myMfa {
			totp
			totpPending
			passkeys
			recoveryCodesLeft
		}
	}
`);

const ENROLL_TOTP = graphql(
	`
		mutation EnrollTotp($input: FreshProofInput) {
			enrollTotp(input: $input) {
				__typename
				... on TotpEnrolment {
					secret
					otpauthUrl
					qrSvg
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const CONFIRM_TOTP = graphql(
	`
		mutation ConfirmTotp($code: String!) {
			confirmTotp(input: { code: $code }) {
				__typename
				... on RecoveryCodes {
					codes
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const REMOVE_TOTP = graphql(
	`
		mutation RemoveTotp($input: FreshProofInput!) {
			removeTotp(input: $input) {
				__typename
				... on MfaStatus {
					totp
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const REGENERATE_RECOVERY_CODES = graphql(
	`
		mutation RegenerateRecoveryCodes($input: FreshProofInput!) {
			regenerateRecoveryCodes(input: $input) {
				__typename
				... on RecoveryCodes {
					codes
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

export type MfaStatus = ResultOf<typeof MY_MFA>['myMfa'];

/** What an authenticator app needs, as the page shows it: the QR code as an image, never as markup. */
export interface Enrolment {
	secret: string;
	otpauthUrl: string;
	/** data:image/svg+xml;base64,... */
	qr: string;
}

type EnrolResult = ResultOf<typeof ENROLL_TOTP>['enrollTotp'];
type CodesResult = ResultOf<typeof CONFIRM_TOTP>['confirmTotp'];
type RemoveResult = ResultOf<typeof REMOVE_TOTP>['removeTotp'];

const RATE_LIMITED = 'Too many attempts. Please wait a while and try again.';
const QR_PREFIX = 'data:image/svg+xml;base64,';

const field = (form: FormData, name: string) => {
	const value = form.get(name);
	return typeof value === 'string' ? value : '';
};

/** A code as typed: an app shows "123 456". */
const codeOf = (form: FormData, name = 'code') => field(form, name).replace(/\s+/g, '');

/** Where "Continue" goes once a factor is set up: the page the organization's policy sent the person from. */
const continueTo = (returnTo: string | null, origin: string) => (returnTo ? safeReturnTo(returnTo, origin) : null);

/** The section's data: the person's factors, and whether the organization's policy sent them here. */
export async function twoFactorData(event: RequestEvent) {
	const { myMfa } = await gql(event, MY_MFA);
	const enrol = event.url.searchParams.get('enrol') === '1';
	return {
		mfa: myMfa,
		enrol,
		continueTo: enrol ? continueTo(event.url.searchParams.get('return_to'), event.url.origin) : null,
	};
}

/**
 * The enrolment a refused confirmation shows again, from the form that sent the code (the service keeps the secret
 * but never answers it twice). The QR code is only ever an SVG image in a data: address.
 */
function enrolmentFrom(form: FormData): Enrolment | null {
	const secret = field(form, 'secret');
	const otpauthUrl = field(form, 'otpauthUrl');
	const qr = field(form, 'qr');
	if (
		!/^[A-Z2-7]+=*$/.test(secret) ||
		!otpauthUrl.startsWith('otpauth://') ||
		!qr.startsWith(QR_PREFIX) ||
		!/^[A-Za-z0-9+/]*=*$/.test(qr.slice(QR_PREFIX.length))
	) {
		return null;
	}
	return { secret, otpauthUrl, qr };
}

/** The password or a code, whichever was given, for a change that removes or replaces a factor's proof. */
function proofOf(form: FormData): { password?: string; code?: string } | null {
	const password = field(form, 'password');
	const code = codeOf(form);
	if (password) return { password };
	if (code) return { code };
	return null;
}

/** A refused proof as its form shows it, beside its fields. */
function proofFailure<A extends string>(action: A, result: UserError) {
	const message = result.code === 'invalid_credentials' ? `${result.message}: nothing was changed.` : result.message;
	return fail(userErrorStatus(result), {
		action,
		message,
		proofRefused: result.code === 'invalid_credentials' || result.code === 'invalid_request',
	});
}

const NO_PROOF = 'Enter your password or a code from your authenticator app.';

export const twoFactorActions = {
	/** Starts setting up an authenticator app: its QR code and secret, pending until a code confirms them. */
	enrollTotp: async (event: RequestEvent) => {
		const form = await event.request.formData();
		const returnTo = field(form, 'return_to') || null;
		let result: EnrolResult;
		try {
			// A first factor needs the password again (the service asks only then); empty, it is left out.
			const password = field(form, 'password');
			({ enrollTotp: result } = await gql(event, ENROLL_TOTP, {
				input: password ? { password } : {},
			}));
		} catch (err) {
			return refused(err, { action: 'enrollTotp' as const, returnTo }, { rate_limited: RATE_LIMITED });
		}
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), { action: 'enrollTotp' as const, returnTo, message: result.message });
		// The secret is in this response only: no cache may keep it.
		event.setHeaders({ 'cache-control': 'no-store' });
		const enrolment: Enrolment = {
			secret: result.secret,
			otpauthUrl: result.otpauthUrl,
			qr: QR_PREFIX + Buffer.from(result.qrSvg).toString('base64'),
		};
		return { action: 'enrollTotp' as const, returnTo, enrolment };
	},

	/** The first code confirms the app; the answer is the ten recovery codes, shown this once. */
	confirmTotp: async (event: RequestEvent) => {
		const form = await event.request.formData();
		const returnTo = field(form, 'return_to') || null;
		const enrolment = enrolmentFrom(form);
		const code = codeOf(form);
		const again = (status: number, message: string) =>
			fail(status, { action: 'confirmTotp' as const, returnTo, enrolment, message });
		if (!code) return again(400, 'Enter the 6-digit code your authenticator app shows.');
		let result: CodesResult;
		try {
			({ confirmTotp: result } = await gql(event, CONFIRM_TOTP, { code }));
		} catch (err) {
			return refused(err, { action: 'confirmTotp' as const, returnTo, enrolment }, { rate_limited: RATE_LIMITED });
		}
		if (result.__typename === 'UserError') {
			if (result.code === 'invalid_credentials')
				return again(400, 'That code is wrong or too old. Enter the code your app shows now.');
			return again(userErrorStatus(result), result.message);
		}
		event.setHeaders({ 'cache-control': 'no-store' });
		return {
			action: 'confirmTotp' as const,
			recoveryCodes: result.codes,
			continueTo: continueTo(returnTo, event.url.origin),
		};
	},

	removeTotp: async (event: RequestEvent) => {
		const proof = proofOf(await event.request.formData());
		if (!proof) return fail(400, { action: 'removeTotp' as const, message: NO_PROOF, proofRefused: true });
		let result: RemoveResult;
		try {
			({ removeTotp: result } = await gql(event, REMOVE_TOTP, { input: proof }));
		} catch (err) {
			return refused(err, { action: 'removeTotp' as const, proofRefused: false }, { rate_limited: RATE_LIMITED });
		}
		if (result.__typename === 'UserError') return proofFailure('removeTotp', result);
		return { action: 'removeTotp' as const, removed: true };
	},

	regenerateRecoveryCodes: async (event: RequestEvent) => {
		const proof = proofOf(await event.request.formData());
		if (!proof) return fail(400, { action: 'regenerateRecoveryCodes' as const, message: NO_PROOF, proofRefused: true });
		let result: CodesResult;
		try {
			({ regenerateRecoveryCodes: result } = await gql(event, REGENERATE_RECOVERY_CODES, { input: proof }));
		} catch (err) {
			return refused(
				err,
				{ action: 'regenerateRecoveryCodes' as const, proofRefused: false },
				{ rate_limited: RATE_LIMITED },
			);
		}
		if (result.__typename === 'UserError') return proofFailure('regenerateRecoveryCodes', result);
		event.setHeaders({ 'cache-control': 'no-store' });
		return { action: 'regenerateRecoveryCodes' as const, recoveryCodes: result.codes };
	},
};
