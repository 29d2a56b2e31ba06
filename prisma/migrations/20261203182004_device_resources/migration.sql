-- Resource indicators (RFC 8707): the resources a device authorization request named. Expand only.
-- AlterTable
ALTER TABLE "device_authorizations" ADD COLUMN     "resources" TEXT[] DEFAULT ARRAY[]::TEXT[];
