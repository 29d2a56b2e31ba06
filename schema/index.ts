// Imports every module (each registers its types and fields on the builder) and exports the schema.
import { builder } from './builder.ts';
import './modules/auth/auth.graphql.ts';
import './modules/sessions/sessions.graphql.ts';
import './modules/users/users.graphql.ts';
import './modules/organizations/organizations.graphql.ts';
import './modules/organizations/overview.graphql.ts';
import './modules/members/members.graphql.ts';
import './modules/api-keys/api-keys.graphql.ts';
import './modules/audit/audit.graphql.ts';
import './modules/clients/clients.graphql.ts';
import './modules/oauth/oauth.graphql.ts';
import './modules/products/products.graphql.ts';
import './modules/subscriptions/subscriptions.graphql.ts';
import './modules/licenses/licenses.graphql.ts';
import './modules/webhooks/webhooks.graphql.ts';
import './modules/apps/apps.graphql.ts';
import './modules/accounts/accounts.graphql.ts';
import './modules/mail/mail.graphql.ts';
import './modules/passkeys/passkeys.graphql.ts';
import './modules/mfa/mfa.graphql.ts';
import './modules/sso/domains.graphql.ts';
import './modules/sso/sso.graphql.ts';
import './modules/directory/directory.graphql.ts';

export const schema = builder.toSchema({ sortSchema: true });
