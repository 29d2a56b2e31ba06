// One template per kind of mail, each giving a plain-text and an HTML body built from the same parts. Every value
// goes into the HTML through escapeHtml, so a name a user chose (an organization called <img src=x onerror=...>)
// arrives as text; links are absolute, from BASE_URL (docs/architecture.md#mail).
import { escapeHtml } from '../../lib/html.ts';

export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

interface Message {
  subject: string;
  /** Paragraphs before the button. */
  lines: string[];
  action?: { label: string; url: string };
  /** Paragraphs after the button. */
  after?: string[];
}

const PRODUCT = 'Tessera';

/** A header must stay one line, whatever a user put in a name. */
const oneLine = (s: string) => s.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();

function render({ subject, lines, action, after = [] }: Message): RenderedMail {
  const text = [...lines, ...(action ? [`${action.label}:\n${action.url}`] : []), ...after].join('\n\n') + '\n';
  const p = (line: string) => `<p style="margin:0 0 16px">${escapeHtml(line)}</p>`;
  const button = action
    ? `<p style="margin:24px 0"><a href="${escapeHtml(action.url)}" style="background:#1f4fd1;color:#ffffff;padding:10px 18px;border-radius:6px;text-decoration:none;display:inline-block">${escapeHtml(action.label)}</a></p>` +
      `<p style="margin:0 0 16px;font-size:13px;color:#555">If the button does not work, open this link: <a href="${escapeHtml(action.url)}">${escapeHtml(action.url)}</a></p>`
    : '';
  const html =
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(oneLine(subject))}</title></head>` +
    `<body style="font-family:system-ui,sans-serif;font-size:15px;line-height:1.5;color:#1b1b1b;max-width:560px;margin:0 auto;padding:24px">` +
    `${lines.map(p).join('')}${button}${after.map(p).join('')}` +
    `<p style="margin:32px 0 0;font-size:12px;color:#777">${escapeHtml(PRODUCT)}</p></body></html>`;
  return { subject: oneLine(subject), text, html };
}

const when = (d: Date) => d.toISOString().replace('T', ' ').slice(0, 16) + ' UTC';

export const MAIL_TEMPLATES = {
  password_reset: (f: { url: string; minutes: number }) =>
    render({
      subject: `Reset your ${PRODUCT} password`,
      lines: ['Someone asked to reset the password of the account that uses this address.'],
      action: { label: 'Choose a new password', url: f.url },
      after: [
        `The link works once, for ${f.minutes} minutes. If you did not ask for it, ignore this mail: your password stays as it is.`,
      ],
    }),
  password_changed: (f: { name: string; at: Date; forgotUrl: string }) =>
    render({
      subject: `Your ${PRODUCT} password was changed`,
      lines: [
        `Hello ${f.name},`,
        `The password of your account was changed on ${when(f.at)}. Every session and token signed in with the old one has ended.`,
      ],
      after: [`If this was not you, reset your password now at ${f.forgotUrl} and tell your administrator.`],
    }),
  email_verification: (f: { name: string; url: string; hours: number }) =>
    render({
      subject: `Confirm your e-mail address for ${PRODUCT}`,
      lines: [`Hello ${f.name},`, 'Please confirm that this address is yours.'],
      action: { label: 'Confirm this address', url: f.url },
      after: [`The link works once, for ${f.hours} hours. If you did not ask for it, ignore this mail.`],
    }),
  email_change: (f: { name: string; url: string; hours: number }) =>
    render({
      subject: `Confirm your new e-mail address for ${PRODUCT}`,
      lines: [
        `Hello ${f.name},`,
        'You asked to use this address for your account. It takes effect once you confirm it.',
      ],
      action: { label: 'Use this address', url: f.url },
      after: [
        `The link works once, for ${f.hours} hours. If you did not ask for it, ignore this mail: nothing changes.`,
      ],
    }),
  email_changed: (f: { name: string; newEmail: string; at: Date }) =>
    render({
      subject: `The e-mail address of your ${PRODUCT} account was changed`,
      lines: [
        `Hello ${f.name},`,
        `On ${when(f.at)} the address of your account was changed from this one to ${f.newEmail}. Mail about the account goes there from now on.`,
      ],
      after: ['If this was not you, tell your administrator at once.'],
    }),
  second_factor_changed: (f: { name: string; change: string; at: Date; securityUrl: string }) =>
    render({
      subject: `A second factor of your ${PRODUCT} account changed`,
      lines: [`Hello ${f.name},`, `On ${when(f.at)}: ${f.change}`],
      action: { label: 'Review your security settings', url: f.securityUrl },
      after: ['If this was not you, reset your password at once and tell your administrator.'],
    }),
  invitation: (f: { organization: string; inviter: string | null; role: string; url: string; expiresAt: Date }) =>
    render({
      subject: `You are invited to ${f.organization} on ${PRODUCT}`,
      lines: [
        `${f.inviter ?? 'An administrator'} invited you to join ${f.organization} as ${f.role === 'admin' ? 'an admin' : `a ${f.role}`}.`,
      ],
      action: { label: 'Accept the invitation', url: f.url },
      after: [`The invitation is valid until ${when(f.expiresAt)}. If you did not expect it, ignore this mail.`],
    }),
} as const;

export type MailKind = keyof typeof MAIL_TEMPLATES;
export type MailFacts<K extends MailKind> = Parameters<(typeof MAIL_TEMPLATES)[K]>[0];

export const renderMail = <K extends MailKind>(kind: K, facts: MailFacts<K>): RenderedMail =>
  (MAIL_TEMPLATES[kind] as (f: MailFacts<K>) => RenderedMail)(facts);
