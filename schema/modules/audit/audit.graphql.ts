import { builder } from '../../builder.ts';
import { pageType } from '../../page-type.ts';
import { listAuditLogs, type AuditActor, type AuditLogEntry } from './audit.service.ts';

const AuditActorRef = builder.objectRef<AuditActor>('AuditActor').implement({
  description: 'Who acted: a person (name and e-mail), an API key or an OAuth client (its name), or no one known.',
  fields: (t) => ({
    type: t.exposeString('type', { description: 'user, api_key, oauth_client or anonymous.' }),
    id: t.exposeString('id', { nullable: true }),
    name: t.exposeString('name', { nullable: true, description: 'Null when the actor is gone or anonymous.' }),
    email: t.exposeString('email', { nullable: true }),
  }),
});

const AuditOrganizationRef = builder
  .objectRef<NonNullable<AuditLogEntry['organization']>>('AuditOrganization')
  .implement({
    fields: (t) => ({
      id: t.exposeString('id'),
      name: t.exposeString('name', { nullable: true, description: 'Null when the organization is gone.' }),
    }),
  });

const AuditLogRef = builder.objectRef<AuditLogEntry>('AuditLog').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeString('organizationId', {
      nullable: true,
      description: 'Null for a platform event (seen by platform admins).',
    }),
    organization: t.field({ type: AuditOrganizationRef, nullable: true, resolve: (e) => e.organization }),
    actorType: t.exposeString('actorType'),
    actorId: t.exposeString('actorId', { nullable: true }),
    actor: t.field({ type: AuditActorRef, resolve: (e) => e.actor }),
    action: t.exposeString('action'),
    targetType: t.exposeString('targetType', { nullable: true }),
    targetId: t.exposeString('targetId', { nullable: true }),
    outcome: t.exposeString('outcome'),
    ip: t.exposeString('ip', { nullable: true }),
    userAgent: t.exposeString('userAgent', { nullable: true }),
    details: t.expose('details', { type: 'JSON' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

builder.queryField('auditLogs', (t) =>
  t.field({
    type: pageType('AuditLogPage', AuditLogRef),
    description:
      "The audit trail, newest first. Platform admins read every organization's and the platform events (no " +
      "organization); an organization's admins read theirs (the current one unless `organizationId` names another).",
    authScopes: { authenticated: true },
    args: {
      organizationId: t.arg.string(),
      actor: t.arg.string({
        description: "An actor's id, or an e-mail: that person's entries and the attempts made on that e-mail.",
      }),
      action: t.arg.string({ description: 'Exact, or a prefix ending in `*` (`auth.*`).' }),
      targetType: t.arg.string(),
      targetId: t.arg.string(),
      outcome: t.arg.string({ description: 'success or failure.' }),
      from: t.arg.string({ description: 'RFC 3339 date-time with a zone, or a date (from 00:00 UTC); inclusive.' }),
      to: t.arg.string({ description: 'RFC 3339 date-time with a zone (exclusive), or a date (that whole day, UTC).' }),
      limit: t.arg.int(),
      cursor: t.arg.string(),
    },
    resolve: (_root, args, ctx) => listAuditLogs(ctx, args),
  }),
);
