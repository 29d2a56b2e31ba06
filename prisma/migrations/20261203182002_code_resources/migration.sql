-- Resource indicators (RFC 8707): the resources an authorization request named, which its code's tokens are for.
-- Expand only: a code the running release writes gets none, as before.
-- AlterTable
ALTER TABLE "authorization_codes" ADD COLUMN     "resources" TEXT[] DEFAULT ARRAY[]::TEXT[];
