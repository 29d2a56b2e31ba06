-- Dynamic client registration (RFC 7592, docs/architecture.md#apps-without-secrets): the registration access token of
-- each client that registered itself. Expand only; oauth_clients alone (see 20261203133251). The index is built
-- in the transaction: every row holds null, and the table is as small as its clients.
-- AlterTable
ALTER TABLE "oauth_clients" ADD COLUMN     "registration_token_hash" TEXT;

-- CreateIndex
CREATE UNIQUE INDEX "oauth_clients_registration_token_hash_key" ON "oauth_clients"("registration_token_hash");
