-- Provisioning from an organization's directory by SCIM 2.0 (docs/architecture.md#directory-provisioning): bearer
-- tokens, the directory's users and groups as it sent them, which groups give a role or a subscription's seats,
-- and the last requests, so that an admin can see why someone did not arrive.

-- A directory's bearer token, shown once, stored as SHA-256; revoked tokens stay listed.
CREATE TABLE "scim_tokens" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "created_by_id" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL,
    "last_used_at" TIMESTAMP(3),
    "revoked_at" TIMESTAMP(3),

    CONSTRAINT "scim_tokens_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "scim_tokens_token_hash_key" ON "scim_tokens"("token_hash");
CREATE INDEX "scim_tokens_organization_id_idx" ON "scim_tokens"("organization_id");
ALTER TABLE "scim_tokens" ADD CONSTRAINT "scim_tokens_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A person as the directory knows them (the SCIM User resource, RFC 7643 4.1). While `active`, the person is a
-- member; inactive, the membership is gone but the resource stays, to come back. `email` is the primary address
-- (the account's), `emails` every address as sent. `version` counts changes (the ETag, and a guard for PATCH).
CREATE TABLE "scim_users" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "user_name" TEXT NOT NULL,
    "external_id" TEXT,
    "active" BOOLEAN NOT NULL DEFAULT true,
    "display_name" TEXT,
    "given_name" TEXT,
    "family_name" TEXT,
    "email" TEXT NOT NULL,
    "emails" JSONB NOT NULL DEFAULT '[]',
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMP(3) NOT NULL,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "scim_users_pkey" PRIMARY KEY ("id")
);
-- userName is unique within the directory, case-insensitively (RFC 7643 4.1.1 caseExact false).
CREATE UNIQUE INDEX "scim_users_organization_id_user_name_key" ON "scim_users"("organization_id", lower("user_name"));
CREATE UNIQUE INDEX "scim_users_organization_id_external_id_key" ON "scim_users"("organization_id", "external_id");
CREATE UNIQUE INDEX "scim_users_organization_id_user_id_key" ON "scim_users"("organization_id", "user_id");
CREATE INDEX "scim_users_organization_id_email_idx" ON "scim_users"("organization_id", "email");
ALTER TABLE "scim_users" ADD CONSTRAINT "scim_users_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "scim_users" ADD CONSTRAINT "scim_users_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A directory group (RFC 7643 4.2) and its members (users only).
CREATE TABLE "scim_groups" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "display_name" TEXT NOT NULL,
    "external_id" TEXT,
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMP(3) NOT NULL,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "scim_groups_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "scim_groups_organization_id_display_name_key" ON "scim_groups"("organization_id", lower("display_name"));
CREATE UNIQUE INDEX "scim_groups_organization_id_external_id_key" ON "scim_groups"("organization_id", "external_id");
ALTER TABLE "scim_groups" ADD CONSTRAINT "scim_groups_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "scim_group_members" (
    "group_id" TEXT NOT NULL,
    "scim_user_id" TEXT NOT NULL,

    CONSTRAINT "scim_group_members_pkey" PRIMARY KEY ("group_id", "scim_user_id")
);
CREATE INDEX "scim_group_members_scim_user_id_idx" ON "scim_group_members"("scim_user_id");
ALTER TABLE "scim_group_members" ADD CONSTRAINT "scim_group_members_group_id_fkey" FOREIGN KEY ("group_id") REFERENCES "scim_groups"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "scim_group_members" ADD CONSTRAINT "scim_group_members_scim_user_id_fkey" FOREIGN KEY ("scim_user_id") REFERENCES "scim_users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- What a directory group (by display name, case-insensitively) gives its members: a role, or a seat of a
-- subscription of the organization.
CREATE TABLE "directory_group_mappings" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "group_name" TEXT NOT NULL,
    "role" "Role",
    "subscription_id" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "directory_group_mappings_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "directory_group_mappings_one_check" CHECK (("role" IS NULL) <> ("subscription_id" IS NULL))
);
CREATE UNIQUE INDEX "directory_group_mappings_organization_id_group_name_key" ON "directory_group_mappings"("organization_id", lower("group_name"));
ALTER TABLE "directory_group_mappings" ADD CONSTRAINT "directory_group_mappings_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "directory_group_mappings" ADD CONSTRAINT "directory_group_mappings_subscription_id_fkey" FOREIGN KEY ("subscription_id") REFERENCES "subscriptions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The directory's requests, newest kept (the cleanup trims each organization's to the last 1,000).
CREATE TABLE "scim_requests" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "token_id" TEXT,
    "method" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "status" INTEGER NOT NULL,
    "scim_type" TEXT,
    "detail" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "scim_requests_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "scim_requests_organization_id_id_idx" ON "scim_requests"("organization_id", "id");
ALTER TABLE "scim_requests" ADD CONSTRAINT "scim_requests_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
