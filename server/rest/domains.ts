// Routes under /api/v1/domains: an organization's domains for single sign-on, proven by a DNS TXT record
// (docs/architecture.md#single-sign-on). Owners and admins.
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { graphql, type ResultOf } from '../graphql/typed.ts';
import { fromBody, page, route, type RestRoute } from './route.ts';
import { presentPage } from './presenters.ts';

const DOMAIN_FIELDS = graphql(
  `fragment DomainFields on Domain { id domain verified verifiedAt checkedAt createdAt verification { type name value } }`,
);

const presentDomain = (d: ResultOf<typeof DOMAIN_FIELDS>) => ({
  id: d.id,
  domain: d.domain,
  verified: d.verified,
  verification: d.verification,
  verified_at: d.verifiedAt,
  checked_at: d.checkedAt,
  created_at: d.createdAt,
});

export const domainRoutes: RestRoute[] = [
  route({
    method: 'GET',
    path: '/domains',
    summary: "The organization's domains, verified or not, with the TXT record that proves each",
    operation: graphql(
      `query($org: String, $limit: Int, $cursor: String) { domains(organizationId: $org, limit: $limit, cursor: $cursor) { items { ...DomainFields } nextCursor } }`,
      [DOMAIN_FIELDS],
    ),
    variables: ({ query }) => ({ org: query.organization_id, ...page(query) }),
    respond: (d) => ({ body: presentPage('domains', d.domains, presentDomain) }),
  }),
  route({
    method: 'POST',
    path: '/domains',
    summary: 'Claim a domain; the answer names the TXT record to publish before verifying it',
    operation: graphql(
      `mutation($input: AddDomainInput!) { addDomain(input: $input) { __typename ...DomainFields ...UserErrorFields } }`,
      [DOMAIN_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['domain', 'organization_id']) }),
    respond: (d) => ({ status: 201, body: presentDomain(unwrap(d.addDomain)) }),
  }),
  route({
    method: 'POST',
    path: '/domains/:id/verify',
    summary: 'Look up the TXT record and verify the domain; 409 verification_failed says what was found',
    body: false,
    operation: graphql(
      `mutation($id: ID!) { verifyDomain(id: $id) { __typename ...DomainFields ...UserErrorFields } }`,
      [DOMAIN_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentDomain(unwrap(d.verifyDomain)) }),
  }),
  route({
    method: 'DELETE',
    path: '/domains/:id',
    summary: 'Remove a domain: connections stop serving it',
    operation: graphql(
      `mutation($id: ID!) { deleteDomain(id: $id) { __typename ... on Domain { id } ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => (unwrap(d.deleteDomain), { status: 204 }),
  }),
];
