// What the mail log's two pages share: the platform-admin gate and a mail's fields.
import { error, type RequestEvent } from '@sveltejs/kit';

export type MailStatus = 'queued' | 'retrying' | 'sent' | 'mailbox' | 'failed';

export interface MailSummary {
	id: string;
	kind: string;
	to: string;
	subject: string;
	status: MailStatus;
	attempts: number;
	lastError: string | null;
	sentAt: string | null;
	createdAt: string;
}

export interface Mail extends MailSummary {
	text: string | null;
	html: string | null;
}

export const SUMMARY_FIELDS = /* GraphQL */ `id kind to subject status attempts lastError sentAt createdAt`;

/**
 * Mail goes to every organization's people and carries their single-use links: platform administrators only, on
 * top of the admin layout's gate (which lets any organization's owners and admins in).
 */
export function requirePlatformAdmin(event: Pick<RequestEvent, 'locals'>): void {
	if (!event.locals.platformAdmin) error(403, 'Only platform administrators read the mail log.');
}
