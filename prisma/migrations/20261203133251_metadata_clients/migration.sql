-- Client ID metadata documents (docs/architecture.md#apps-without-secrets): the clients read from them. Expand only:
-- the running release never reads these columns. One table a migration: a transaction that locks two tables the
-- hot paths read, one after the other, can deadlock with a statement that reads both in the other order.
-- AlterTable
ALTER TABLE "oauth_clients" ADD COLUMN     "metadata_document" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "metadata_expires_at" TIMESTAMP(3);
