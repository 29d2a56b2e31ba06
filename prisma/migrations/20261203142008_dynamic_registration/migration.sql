-- Dynamic client registration (RFC 7591, RFC 7592; docs/architecture.md#apps-without-secrets): initial access
-- tokens, and the registration access token of each client registered with one. Expand only.
-- AlterTable
ALTER TABLE "oauth_clients" ADD COLUMN     "registration_token_hash" TEXT;

-- CreateTable
CREATE TABLE "registration_tokens" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "scopes" TEXT[],
    "public" BOOLEAN NOT NULL DEFAULT false,
    "created_by_id" TEXT,
    "last_used_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "registration_tokens_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "registration_tokens_token_hash_key" ON "registration_tokens"("token_hash");

-- CreateIndex
CREATE INDEX "registration_tokens_organization_id_idx" ON "registration_tokens"("organization_id");

-- CreateIndex
CREATE UNIQUE INDEX "oauth_clients_registration_token_hash_key" ON "oauth_clients"("registration_token_hash");

-- AddForeignKey
ALTER TABLE "registration_tokens" ADD CONSTRAINT "registration_tokens_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
