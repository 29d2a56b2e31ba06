-- Each organization's choice to let apps known only by a client ID metadata document sign its members in
-- (docs/architecture.md#apps-without-secrets), off. Expand only, and a migration of its own (see 20261203133251).
-- AlterTable
ALTER TABLE "organizations" ADD COLUMN     "allow_metadata_clients" BOOLEAN NOT NULL DEFAULT false;
