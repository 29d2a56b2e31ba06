-- Tessera's own command-line client (docs/architecture.md#apps-without-secrets): every signed-in person may authorize
-- it and its tokens act in each of the person's organizations. Expand only: the running release never reads it.
-- AlterTable
ALTER TABLE "oauth_clients" ADD COLUMN     "platform_wide" BOOLEAN NOT NULL DEFAULT false;
