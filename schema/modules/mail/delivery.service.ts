// Sending one queued mail: the mail_send job's work (docs/architecture.md#mail). Idempotent: a mail already sent,
// kept or given up is left alone. A temporary failure is recorded and thrown, so that graphile-worker tries again
// with its back-off; a permanent one, or the last attempt, is recorded as failed and not retried. Once sent over
// SMTP, or given up, the bodies are erased: they hold single-use links.
import type { Db } from '../../db.ts';
import type { Clock } from '../../lib/clock.ts';
import { defaultSender, type Mailer } from './transport.ts';
import { MailNotYetSentError } from './mail.errors.ts';
import type { Metrics } from '../../metrics/metrics.ts';

export const MAIL_SEND_TASK = 'mail_send';

export interface MailDeps {
  db: Db;
  clock: Clock;
  /** Null: no SMTP_URL, mail stays in the development mailbox. */
  mailer: Mailer | null;
  from: string | undefined;
  issuer: () => string;
  metrics: Metrics;
}

export interface MailJob {
  mailId: string;
}

export function assertMailJob(payload: unknown): MailJob {
  const p = payload as Partial<MailJob> | null;
  if (typeof p?.mailId !== 'string') throw new Error('mail_send: payload must be {mailId}');
  return { mailId: p.mailId };
}

export type MailOutcome = 'sent' | 'mailbox' | 'retrying' | 'failed' | 'skipped';

export async function sendQueuedMail(
  deps: MailDeps,
  job: MailJob,
  attempt: { number: number; last: boolean },
): Promise<MailOutcome> {
  const mail = await deps.db.mail.findUnique({ where: { id: job.mailId } });
  if (!mail || !['queued', 'retrying'].includes(mail.status)) return 'skipped';
  const now = () => deps.clock.now();
  const started = performance.now();
  if (!deps.mailer) {
    await deps.db.mail.update({
      where: { id: mail.id },
      data: { status: 'mailbox', attempts: { increment: 1 }, updatedAt: now() },
    });
    deps.metrics.mailAttempt('mailbox', (performance.now() - started) / 1000);
    return 'mailbox';
  }
  const outcome = await deps.mailer.send({
    from: deps.from ?? defaultSender(deps.issuer()),
    to: mail.toAddress,
    subject: mail.subject,
    text: mail.textBody ?? '',
    html: mail.htmlBody ?? '',
  });
  const seconds = (performance.now() - started) / 1000;
  if (outcome.ok) {
    deps.metrics.mailAttempt('sent', seconds);
    await deps.db.mail.update({
      where: { id: mail.id },
      data: {
        status: 'sent',
        attempts: { increment: 1 },
        lastError: null,
        sentAt: now(),
        textBody: null,
        htmlBody: null,
        updatedAt: now(),
      },
    });
    return 'sent';
  }
  const giveUp = outcome.permanent || attempt.last;
  deps.metrics.mailAttempt(giveUp ? 'failed' : 'retrying', seconds);
  await deps.db.mail.update({
    where: { id: mail.id },
    data: {
      status: giveUp ? 'failed' : 'retrying',
      attempts: { increment: 1 },
      lastError: outcome.error,
      updatedAt: now(),
      ...(giveUp ? { textBody: null, htmlBody: null } : {}),
    },
  });
  if (giveUp) return 'failed';
  throw new MailNotYetSentError(`mail ${mail.id} attempt ${attempt.number}: ${outcome.error}`);
}
