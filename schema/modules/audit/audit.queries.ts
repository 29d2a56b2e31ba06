import { builder } from '../../builder.ts';
import { listAuditLogs } from './audit.service.ts';

builder.prismaObject('AuditLog', {
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeString('organizationId', { nullable: true }),
    actorType: t.exposeString('actorType'),
    actorId: t.exposeString('actorId', { nullable: true }),
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
  t.prismaField({
    type: ['AuditLog'],
    description: "An organization's audit trail, newest first (its admins; platform admins for any).",
    authScopes: (_parent, args) => ({ orgRole: { organizationId: args.organizationId, role: 'admin' } }),
    args: { organizationId: t.arg.string({ required: true }), limit: t.arg.int(), before: t.arg.string() },
    resolve: (query, _parent, args, ctx) => listAuditLogs(ctx, { ...args, query }),
  }),
);
