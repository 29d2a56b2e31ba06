// Prints the README's "Events" section from the event catalog (schema/events/catalog.ts): which operation emits
// which kinds (as test/server/event-catalog.test.ts checks them) and an example payload per kind.
// `node scripts/print-event-catalog.ts > /tmp/events.md`, then paste it over the section.
import { EVENT_CATALOG, EVENT_KINDS } from '../schema/events/catalog.ts';

const OPERATIONS: [string, string][] = [
  [
    'Create an organization (`POST /v1/organizations`)',
    'organization.created, member.added, organization.member.added',
  ],
  ['Rename an organization (`PATCH /v1/organizations/{id}`)', 'organization.updated'],
  ['Invite (`POST /v1/organizations/{id}/invitations`)', 'member.invitation.sent'],
  [
    'Accept an invitation (`POST /api/v1/invitations/accept`)',
    'user.created (new account), member.invitation.accepted, member.added, organization.member.added, session.created',
  ],
  ['An invitation runs out (worker, every 5 minutes)', 'member.invitation.expired'],
  [
    "Change a member's role (`PATCH /v1/organizations/{id}/members/{user_id}`)",
    'member.role.changed, organization.member.role_changed',
  ],
  [
    'Transfer ownership (`POST /v1/organizations/{id}/transfer-ownership`)',
    'member.role.changed, organization.member.role_changed for the new owner, then for the owner stepping down',
  ],
  [
    'Remove a member or leave (`DELETE /v1/organizations/{id}/members/{user_id}`)',
    'member.removed, organization.member.removed (and api_key.revoked for the keys the member made)',
  ],
  ['Sign in (`POST /api/v1/auth/login`)', 'session.created'],
  ['Sign out (`POST /api/v1/auth/logout`, `/oauth/logout`)', 'session.revoked'],
  [
    'Update the profile (`PATCH /api/v1/users/me`, `PATCH /v1/users/{id}`)',
    'user.updated; user.password.changed and session.created for a new password; user.email.verified when marked verified',
  ],
  [
    'Delete an account (`DELETE /api/v1/users/me`, `DELETE /v1/users/{id}`)',
    'user.deleted, member.removed, organization.member.removed; organization.deleted for an organization it alone belonged to',
  ],
  ['Create / revoke an API key (`POST`, `DELETE /api/v1/api-keys`)', 'api_key.created / api_key.revoked'],
  [
    'Register / delete an OAuth client, install / uninstall an app',
    'oauth.client.created, oauth_client.created / oauth.client.deleted, oauth_client.deleted',
  ],
  ['Authorize, directly or on consent (`/oauth/authorize`)', 'oauth.authorization.granted'],
  ['Issue tokens (`POST /oauth/token`: code, refresh token, client credentials)', 'oauth.token.issued'],
  ['Revoke a token (`POST /oauth/revoke`, RFC 7009)', 'oauth_client.token_revoked'],
  ['Create a subscription (`POST /v1/subscriptions`)', 'subscription.created'],
  [
    'Change a subscription (`PATCH /v1/subscriptions/{id}`), or it expires (worker)',
    "subscription.updated; subscription.renewed when an active one's end date moves later; subscription.cancelled",
  ],
  ['Cancel a subscription (`DELETE /v1/subscriptions/{id}`)', 'subscription.cancelled'],
];

const lines = [
  '## Events',
  '',
  'Organizations learn what happened through signed webhooks (`/api/v1/webhooks`). Every event is one envelope,',
  'sent as exactly the text stored with it: `{"id", "event", "timestamp", "organization": {"id", "name"}, "data"}`.',
  "The catalog (`schema/events/catalog.ts`, served at `GET /api/v1/event-types`) is the union of the interface's",
  'lists A and B; each kind has one builder of its `data`. List A kinds are camelCase and list B kinds snake_case;',
  'kinds in both lists keep the list A shape (`user.created` is given in camelCase). Events about a person',
  '(`user.*`, `session.*`, `2fa.*`) are sent once to each organization the person belongs to at that moment.',
  '',
  '| Operation | Kinds |',
  '|---|---|',
  ...OPERATIONS.map(([op, kinds]) => `| ${op} | ${kinds} |`),
  '',
  '`session.expired`, `2fa.enabled` and `2fa.disabled` are in the catalog but not emitted yet (sessions expire when',
  'used, and there is no second factor yet). Example `data` of each kind:',
  '',
  '| Kind | Lists | Example `data` |',
  '|---|---|---|',
  ...EVENT_KINDS.map(
    (k) =>
      `| \`${k}\` | ${EVENT_CATALOG[k].lists.join(', ')} | \`${JSON.stringify(EVENT_CATALOG[k].example).replaceAll('|', '\\|')}\` |`,
  ),
  '',
];
process.stdout.write(lines.join('\n'));
