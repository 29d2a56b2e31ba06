// The mail log and development mailbox, for platform admins.
import { builder } from '../../builder.ts';
import { pageType } from '../../page-type.ts';
import { getMail, listMails } from './mail.service.ts';

const MailStatusEnum = builder.enumType('MailStatus', {
  values: {
    queued: { description: 'Written, not yet tried.' },
    retrying: { description: 'A temporary failure (4xx reply, network); tried again with back-off.' },
    sent: { description: 'Accepted by the SMTP relay; the bodies are erased.' },
    mailbox: { description: 'No SMTP_URL: kept in the development mailbox.' },
    failed: { description: 'Refused for good (5xx reply), or out of attempts.' },
  } as const,
});

const MailRef = builder.prismaObject('Mail', {
  fields: (t) => ({
    id: t.exposeID('id'),
    kind: t.exposeString('kind'),
    to: t.exposeString('toAddress'),
    subject: t.exposeString('subject'),
    // Mails carry single-use links (a password reset sets a password): their bodies are shown only in the development
    // mailbox, where nothing is sent and reading them is the point; a mail on its way to a person's inbox is not
    // readable here, so that no administrator can use another person's link.
    text: t.string({
      nullable: true,
      description: 'Only in the development mailbox (status mailbox); otherwise null.',
      resolve: (m) => (m.status === 'mailbox' ? m.textBody : null),
    }),
    html: t.string({
      nullable: true,
      description: 'Only in the development mailbox (status mailbox); otherwise null.',
      resolve: (m) => (m.status === 'mailbox' ? m.htmlBody : null),
    }),
    status: t.field({ type: MailStatusEnum, resolve: (m) => m.status as 'queued' }),
    attempts: t.exposeInt('attempts'),
    lastError: t.exposeString('lastError', { nullable: true }),
    sentAt: t.expose('sentAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

builder.queryField('mails', (t) =>
  t.field({
    type: pageType('MailPage', MailRef),
    description: 'Outgoing mail, newest first (platform admins).',
    authScopes: { platformAdmin: true },
    args: { to: t.arg.string(), limit: t.arg.int(), cursor: t.arg.string() },
    resolve: (_root, { to, ...page }, ctx) => listMails(ctx, { to }, page),
  }),
);

builder.queryField('mail', (t) =>
  t.field({
    type: MailRef,
    authScopes: { platformAdmin: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => getMail(ctx, String(args.id)),
  }),
);
