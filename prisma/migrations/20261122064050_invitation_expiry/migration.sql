-- AlterTable
ALTER TABLE "invitations" ADD COLUMN     "expiry_announced_at" TIMESTAMP(3);

-- CreateIndex
CREATE INDEX "invitations_expires_at_idx" ON "invitations"("expires_at");
