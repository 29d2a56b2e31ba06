-- Resource indicators (RFC 8707, docs/architecture.md#apps-without-secrets): the resources a client may ask access
-- tokens for. Expand only: the running release never reads the column, and the constant default needs no rewrite.
-- One table a migration (see 20261203133251_metadata_clients).
-- AlterTable
ALTER TABLE "oauth_clients" ADD COLUMN     "resources" TEXT[] DEFAULT ARRAY[]::TEXT[];
