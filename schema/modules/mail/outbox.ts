// Queuing a mail in the caller's transaction (docs/architecture.md#mail): the row and its send job are written by
// one SQL function, tessera_queue_mail, so a rolled-back change mails nothing and a committed one is sent even
// across a crash.
import { Prisma } from '../../db.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { renderMail, type MailFacts, type MailKind } from './templates.ts';

type Tx = Pick<Prisma.TransactionClient, '$executeRaw'>;

/**
 * The call that queues a rendered mail, for statements that queue one only where a row exists (`from <cte>`).
 * `id` is the mail's id when the caller chose it beforehand (a job that must write its mail once, however often it runs).
 */
export function queueMailSql<K extends MailKind>(
  kind: K,
  to: string | Prisma.Sql,
  facts: MailFacts<K>,
  at: Date,
  id: string = uuidv7(),
): Prisma.Sql {
  const { subject, text, html } = renderMail(kind, facts);
  return Prisma.sql`tessera_queue_mail(${id}, ${kind}, ${to}, ${subject}, ${text}, ${html}, ${at}::timestamp)`;
}

/** Queues one mail to `to` in the transaction `tx`. */
export async function queueMail<K extends MailKind>(
  tx: Tx,
  kind: K,
  to: string,
  facts: MailFacts<K>,
  at: Date,
): Promise<void> {
  await tx.$executeRaw`select ${queueMailSql(kind, to, facts, at)}`;
}
