-- Organizations that bring their own identity (docs/architecture.md#single-sign-on): domains proven by a DNS TXT
-- record, OpenID Connect and SAML connections, the upstream identities linked to people, and the sign-ins in
-- flight (single use).

-- A domain an organization claims. `domain` is lower-case ASCII (IDNs as punycode). Several organizations may
-- claim the same name while it is unproven; once one proves it (verified_at), nobody else can.
CREATE TABLE "domains" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "domain" TEXT NOT NULL,
    -- the value of the TXT record at _tessera-verification.<domain>
    "verification_token" TEXT NOT NULL,
    "verified_at" TIMESTAMP(3),
    "checked_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "domains_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "domains_organization_id_domain_key" ON "domains"("organization_id", "domain");
CREATE UNIQUE INDEX "domains_verified_domain_key" ON "domains"("domain") WHERE "verified_at" IS NOT NULL;
ALTER TABLE "domains" ADD CONSTRAINT "domains_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- An identity provider people sign in through. An organization's connection (oidc or saml) serves its verified
-- domains; a platform-wide one (organization_id null: oidc or github) is a "Sign in with ..." button on /login.
-- Secrets are encrypted with SECRET_KEY.
CREATE TABLE "sso_connections" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT,
    "type" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "default_role" "Role" NOT NULL DEFAULT 'member',
    "require_sso" BOOLEAN NOT NULL DEFAULT false,
    "seat_subscription_id" TEXT,
    "role_claim" TEXT,
    "role_map" JSONB,
    "issuer" TEXT,
    "client_id" TEXT,
    "client_secret_encrypted" TEXT,
    "scopes" TEXT[] NOT NULL DEFAULT '{}',
    "entry_point" TEXT,
    "idp_entity_id" TEXT,
    "idp_certs" TEXT[] NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMP(3) NOT NULL,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "sso_connections_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "sso_connections_type_check" CHECK ("type" IN ('oidc', 'saml', 'github'))
);
CREATE INDEX "sso_connections_organization_id_idx" ON "sso_connections"("organization_id");
ALTER TABLE "sso_connections" ADD CONSTRAINT "sso_connections_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "sso_connections" ADD CONSTRAINT "sso_connections_seat_subscription_id_fkey" FOREIGN KEY ("seat_subscription_id") REFERENCES "subscriptions"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- Which connection serves a domain: one at most.
CREATE TABLE "sso_connection_domains" (
    "connection_id" TEXT NOT NULL,
    "domain_id" TEXT NOT NULL,

    CONSTRAINT "sso_connection_domains_pkey" PRIMARY KEY ("connection_id", "domain_id")
);
CREATE UNIQUE INDEX "sso_connection_domains_domain_id_key" ON "sso_connection_domains"("domain_id");
ALTER TABLE "sso_connection_domains" ADD CONSTRAINT "sso_connection_domains_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "sso_connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "sso_connection_domains" ADD CONSTRAINT "sso_connection_domains_domain_id_fkey" FOREIGN KEY ("domain_id") REFERENCES "domains"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A person as an identity provider knows them (OIDC sub, SAML NameID), linked to their Tessera account.
CREATE TABLE "sso_identities" (
    "id" TEXT NOT NULL,
    "connection_id" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL,
    "last_sign_in_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "sso_identities_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "sso_identities_connection_id_subject_key" ON "sso_identities"("connection_id", "subject");
CREATE INDEX "sso_identities_user_id_idx" ON "sso_identities"("user_id");
ALTER TABLE "sso_identities" ADD CONSTRAINT "sso_identities_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "sso_connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "sso_identities" ADD CONSTRAINT "sso_identities_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A sign-in sent to an identity provider and not yet back: `id` is the OIDC state or the SAML RelayState, used
-- once (deleted when it returns). `browser_hash` binds it to the browser that started it (a cookie), so that a
-- callback cannot sign another browser in. `tested_by_id`: an admin's test sign-in, which shows the claims and
-- signs nobody in; `result` holds them. `link_user_id`: a signed-in person connecting a platform-wide provider to
-- their account.
CREATE TABLE "sso_requests" (
    "id" TEXT NOT NULL,
    "connection_id" TEXT NOT NULL,
    "browser_hash" TEXT,
    "code_verifier" TEXT,
    "nonce" TEXT,
    "saml_request_id" TEXT,
    "return_to" TEXT,
    "tested_by_id" TEXT,
    "link_user_id" TEXT,
    "result" JSONB,
    "expires_at" TIMESTAMP(3) NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "sso_requests_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "sso_requests_expires_at_idx" ON "sso_requests"("expires_at");
ALTER TABLE "sso_requests" ADD CONSTRAINT "sso_requests_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "sso_connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- SAML assertion ids seen, kept until the assertion would have expired anyway: a replayed one is refused.
CREATE TABLE "saml_assertions" (
    "connection_id" TEXT NOT NULL,
    "assertion_id" TEXT NOT NULL,
    "expires_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "saml_assertions_pkey" PRIMARY KEY ("connection_id", "assertion_id")
);
CREATE INDEX "saml_assertions_expires_at_idx" ON "saml_assertions"("expires_at");
ALTER TABLE "saml_assertions" ADD CONSTRAINT "saml_assertions_connection_id_fkey" FOREIGN KEY ("connection_id") REFERENCES "sso_connections"("id") ON DELETE CASCADE ON UPDATE CASCADE;
