// Housekeeping run by the worker: rows that can never be used again are deleted after a grace period, so
// the tables that hot paths read stay small.
import type { Db } from '../db.ts';

const GRACE_DAYS = 7;
/** The mail log, and the development mailbox, keep a month. */
const MAIL_DAYS = 30;
/** What each organization's directory log keeps (its page shows the last 100). */
const SCIM_REQUESTS_KEPT = 1_000;

export async function deleteExpiredCredentials(db: Db, now = new Date()): Promise<number> {
  const before = new Date(now.getTime() - GRACE_DAYS * 86_400_000);
  const results = await db.$transaction([
    db.session.deleteMany({ where: { expiresAt: { lt: before } } }),
    db.authorizationCode.deleteMany({ where: { expiresAt: { lt: before } } }),
    db.refreshToken.deleteMany({ where: { expiresAt: { lt: before } } }),
    db.loginThrottle.deleteMany({ where: { windowStart: { lt: before } } }),
    db.consentAnswer.deleteMany({ where: { expiresAt: { lt: before } } }),
    db.linkToken.deleteMany({ where: { expiresAt: { lt: before } } }),
    db.webauthnChallenge.deleteMany({ where: { expiresAt: { lt: before } } }),
    db.ssoRequest.deleteMany({ where: { expiresAt: { lt: before } } }),
    // An assertion past its NotOnOrAfter is refused for its time anyway: its id need not be kept to refuse a replay.
    db.samlAssertion.deleteMany({ where: { expiresAt: { lt: before } } }),
    // A mail still queued or retrying is left to its job, however old.
    db.mail.deleteMany({
      where: {
        createdAt: { lt: new Date(now.getTime() - MAIL_DAYS * 86_400_000) },
        status: { in: ['sent', 'mailbox', 'failed'] },
      },
    }),
  ]);
  const trimmed = await db.$executeRaw`
    delete from scim_requests r using (
      select id from (select id, row_number() over (partition by organization_id order by id desc) as n from scim_requests) ranked
      where n > ${SCIM_REQUESTS_KEPT}) old
    where r.id = old.id`;
  return results.reduce((n, r) => n + r.count, 0) + trimmed;
}
