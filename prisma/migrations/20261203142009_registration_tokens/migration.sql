-- Dynamic client registration (RFC 7591, docs/architecture.md#apps-without-secrets): the initial access tokens an
-- organization's admins make. A new table; its foreign key takes a lock on organizations that reads do not wait on.
-- CreateTable
CREATE TABLE "registration_tokens" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "scopes" TEXT[],
    "public" BOOLEAN NOT NULL DEFAULT false,
    "created_by_id" TEXT,
    "last_used_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "registration_tokens_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "registration_tokens_token_hash_key" ON "registration_tokens"("token_hash");

-- CreateIndex
CREATE INDEX "registration_tokens_organization_id_idx" ON "registration_tokens"("organization_id");

-- AddForeignKey
ALTER TABLE "registration_tokens" ADD CONSTRAINT "registration_tokens_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
