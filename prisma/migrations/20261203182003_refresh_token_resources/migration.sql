-- Resource indicators (RFC 8707): the grant's resources, kept by each refresh token through rotation. Expand only:
-- a refresh token the running release writes gets none, as before.
-- AlterTable
ALTER TABLE "refresh_tokens" ADD COLUMN     "resources" TEXT[] DEFAULT ARRAY[]::TEXT[];
