-- Client ID metadata documents (docs/architecture.md#apps-without-secrets): the clients read from them, and each
-- organization's choice to allow them (off). Expand only: the running release never reads them.
-- AlterTable
ALTER TABLE "organizations" ADD COLUMN     "allow_metadata_clients" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "oauth_clients" ADD COLUMN     "metadata_document" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "metadata_expires_at" TIMESTAMP(3);
