// Routes under /v1 for organizations, their members and invitations, users, the product catalog and subscriptions.
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { graphql } from '../graphql/typed.ts';
import { fromBody, onlyFields, page, route, type RestRoute } from './route.ts';
import {
  INVITATION_FIELDS,
  MEMBER_FIELDS,
  ORGANIZATION_FIELDS,
  USER_FIELDS,
  presentInvitation,
  presentMember,
  presentOrganization,
  presentPage,
  presentUser,
} from './presenters.ts';
import { productRoutes } from './products.ts';
import { subscriptionRoutes } from './subscriptions.ts';

export const v1Routes: RestRoute[] = [
  route({
    method: 'GET',
    path: '/organizations',
    summary: "Organizations: every one for platform admins, else the caller's",
    operation: graphql(
      `query($limit: Int, $cursor: String, $search: String) { organizations(limit: $limit, cursor: $cursor, search: $search) { items { ...OrganizationFields } nextCursor } }`,
      [ORGANIZATION_FIELDS],
    ),
    variables: ({ query }) => ({ search: query.search, ...page(query) }),
    respond: (d) => ({ body: presentPage('organizations', d.organizations, presentOrganization) }),
  }),
  route({
    method: 'POST',
    path: '/organizations',
    summary: 'Create an organization owned by the caller',
    operation: graphql(
      `mutation($input: CreateOrganizationInput!) { createOrganization(input: $input) { __typename ...OrganizationFields ...UserErrorFields } }`,
      [ORGANIZATION_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['name']) }),
    respond: (d) => ({ status: 201, body: presentOrganization(unwrap(d.createOrganization)) }),
  }),
  route({
    method: 'GET',
    path: '/organizations/:id',
    summary: 'One organization',
    operation: graphql(`query($id: ID!) { organization(id: $id) { ...OrganizationFields } }`, [ORGANIZATION_FIELDS]),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentOrganization(d.organization) }),
  }),
  route({
    method: 'PATCH',
    path: '/organizations/:id',
    summary: 'Update an organization (owners and admins)',
    operation: graphql(
      `mutation($id: ID!, $input: UpdateOrganizationInput!) { updateOrganization(id: $id, input: $input) { __typename ...OrganizationFields ...UserErrorFields } }`,
      [ORGANIZATION_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => ({
      id: params.id,
      input: fromBody(body, ['name', 'require_mfa', 'allow_metadata_clients']),
    }),
    respond: (d) => ({ body: presentOrganization(unwrap(d.updateOrganization)) }),
  }),
  route({
    method: 'GET',
    path: '/organizations/:id/members',
    summary: "An organization's members and their roles",
    operation: graphql(
      `query($id: String!, $limit: Int, $cursor: String) { members(organizationId: $id, limit: $limit, cursor: $cursor) { items { ...MemberFields } nextCursor } }`,
      [MEMBER_FIELDS],
    ),
    variables: ({ params, query }) => ({ id: params.id, ...page(query) }),
    respond: (d) => ({ body: presentPage('members', d.members, presentMember) }),
  }),
  route({
    method: 'PATCH',
    path: '/organizations/:id/members/:user_id',
    summary: "Change a member's role",
    operation: graphql(
      `mutation($id: String!, $user: String!, $role: Role!) { changeMemberRole(organizationId: $id, userId: $user, role: $role) { __typename ...MemberFields ...UserErrorFields } }`,
      [MEMBER_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => ({ id: params.id, user: params.user_id, role: onlyFields(body, ['role']).role }),
    respond: (d) => ({ body: presentMember(unwrap(d.changeMemberRole)) }),
  }),
  route({
    method: 'DELETE',
    path: '/organizations/:id/members/:user_id',
    summary: 'Remove a member (or leave)',
    operation: graphql(
      `mutation($id: String!, $user: String!) { removeMember(organizationId: $id, userId: $user) { __typename ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ params }) => ({ id: params.id, user: params.user_id }),
    respond: (d) => (unwrap(d.removeMember), { status: 204 }),
  }),
  route({
    method: 'DELETE',
    path: '/organizations/:id/members/:user_id/mfa',
    summary: "Reset a member's second factors (owners; the member is mailed)",
    operation: graphql(
      `mutation($id: ID!, $user: ID!) { resetMemberMfa(organizationId: $id, userId: $user) { __typename ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ params }) => ({ id: params.id, user: params.user_id }),
    respond: (d) => (unwrap(d.resetMemberMfa), { status: 204 }),
  }),
  route({
    method: 'POST',
    path: '/organizations/:id/transfer-ownership',
    summary: 'Make a member owner, the calling owner stepping down to admin',
    operation: graphql(
      `mutation($id: String!, $user: String!, $stepDown: Boolean) { transferOwnership(organizationId: $id, userId: $user, stepDown: $stepDown) { __typename ...MemberFields ...UserErrorFields } }`,
      [MEMBER_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => {
      const { user_id: user, step_down: stepDown } = onlyFields(body, ['user_id', 'step_down']);
      return { id: params.id, user, stepDown };
    },
    respond: (d) => ({ body: presentMember(unwrap(d.transferOwnership)) }),
  }),
  route({
    method: 'GET',
    path: '/organizations/:id/invitations',
    summary: "An organization's invitations",
    operation: graphql(
      `query($id: String!, $limit: Int, $cursor: String) { invitations(organizationId: $id, limit: $limit, cursor: $cursor) { items { ...InvitationFields } nextCursor } }`,
      [INVITATION_FIELDS],
    ),
    variables: ({ params, query }) => ({ id: params.id, ...page(query) }),
    respond: (d) => ({ body: presentPage('invitations', d.invitations, presentInvitation) }),
  }),
  route({
    method: 'POST',
    path: '/organizations/:id/invitations',
    summary: 'Invite an e-mail address; returns a link to pass on, once',
    operation: graphql(
      `mutation($id: String!, $input: CreateInvitationInput!) { createInvitation(organizationId: $id, input: $input) { __typename ... on CreatedInvitation { token acceptUrl invitation { ...InvitationFields } } ...UserErrorFields } }`,
      [INVITATION_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => ({ id: params.id, input: fromBody(body, ['email', 'role']) }),
    respond: (d) => {
      const r = unwrap(d.createInvitation);
      return { status: 201, body: { ...presentInvitation(r.invitation), token: r.token, accept_url: r.acceptUrl } };
    },
  }),
  route({
    method: 'POST',
    path: '/organizations/:id/invitations/:invitation_id/resend',
    body: false,
    summary: 'Mail a pending invitation again with a new link (valid 7 days); the old links stop working',
    operation: graphql(
      `mutation($id: String!, $inv: String!) { resendInvitation(organizationId: $id, invitationId: $inv) { __typename ... on CreatedInvitation { token acceptUrl invitation { ...InvitationFields } } ...UserErrorFields } }`,
      [INVITATION_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params }) => ({ id: params.id, inv: params.invitation_id }),
    respond: (d) => {
      const r = unwrap(d.resendInvitation);
      return { body: { ...presentInvitation(r.invitation), token: r.token, accept_url: r.acceptUrl } };
    },
  }),
  route({
    method: 'DELETE',
    path: '/organizations/:id/invitations/:invitation_id',
    summary: 'Revoke a pending invitation',
    operation: graphql(
      `mutation($id: String!, $inv: String!) { revokeInvitation(organizationId: $id, invitationId: $inv) { __typename ... on Invitation { id } ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ params }) => ({ id: params.id, inv: params.invitation_id }),
    respond: (d) => (unwrap(d.revokeInvitation), { status: 204 }),
  }),
  route({
    method: 'GET',
    path: '/users',
    summary: 'Users the caller may see',
    operation: graphql(
      `query($limit: Int, $cursor: String) { users(limit: $limit, cursor: $cursor) { items { ...UserFields } nextCursor } }`,
      [USER_FIELDS],
    ),
    variables: ({ query }) => page(query),
    respond: (d) => ({ body: presentPage('users', d.users, presentUser) }),
  }),
  route({
    method: 'GET',
    path: '/users/:id',
    summary: 'One user',
    operation: graphql(`query($id: ID!) { user(id: $id) { ...UserFields } }`, [USER_FIELDS]),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentUser(d.user) }),
  }),
  route({
    method: 'PATCH',
    path: '/users/:id',
    summary: 'Update a user (platform admins, or the user itself)',
    operation: graphql(
      `mutation($id: ID!, $input: UpdateUserInput!) { updateUser(id: $id, input: $input) { __typename ...UserFields ...UserErrorFields } }`,
      [USER_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => ({
      id: params.id,
      input: fromBody(body, ['name', 'picture', 'email_verified']),
    }),
    respond: (d) => ({ body: presentUser(unwrap(d.updateUser)) }),
  }),
  route({
    method: 'POST',
    path: '/users/:id/password-reset',
    body: false,
    summary: 'Mail a person a password reset link (platform admins)',
    operation: graphql(`mutation($id: ID!) { sendPasswordReset(userId: $id) { __typename ...UserErrorFields } }`, [
      USER_ERROR_FIELDS,
    ]),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => (
      unwrap(d.sendPasswordReset),
      { status: 202, body: { message: 'A password reset link is on its way to the user.' } }
    ),
  }),
  route({
    method: 'DELETE',
    path: '/users/:id',
    summary: 'Delete a user (platform admins, or the user itself with your password or a code)',
    body: true,
    operation: graphql(
      `mutation($id: ID!, $input: FreshProofInput) { deleteUser(id: $id, input: $input) { __typename ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => ({ id: params.id, input: fromBody(body, ['password', 'code']) }),
    respond: (d) => (unwrap(d.deleteUser), { status: 204 }),
  }),
  ...productRoutes,
  ...subscriptionRoutes,
];
