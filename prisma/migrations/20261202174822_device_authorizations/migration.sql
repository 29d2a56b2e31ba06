-- The device authorization grant (RFC 8628, docs/architecture.md#apps-without-secrets): a new table, nothing the
-- running release reads changes.
-- CreateTable
CREATE TABLE "device_authorizations" (
    "id" TEXT NOT NULL,
    "device_code_hash" TEXT NOT NULL,
    "user_code_hash" TEXT NOT NULL,
    "client_id" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "user_id" TEXT,
    "grant_id" TEXT,
    "organization_id" TEXT NOT NULL,
    "auth_time" TIMESTAMP(3),
    "amr" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "session_version" INTEGER,
    "interval_seconds" INTEGER NOT NULL DEFAULT 5,
    "last_polled_at" TIMESTAMP(3),
    "expires_at" TIMESTAMP(3) NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "device_authorizations_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "device_authorizations_device_code_hash_key" ON "device_authorizations"("device_code_hash");

-- CreateIndex
CREATE UNIQUE INDEX "device_authorizations_user_code_hash_key" ON "device_authorizations"("user_code_hash");

-- CreateIndex
CREATE UNIQUE INDEX "device_authorizations_grant_id_key" ON "device_authorizations"("grant_id");

-- CreateIndex
CREATE INDEX "device_authorizations_client_id_idx" ON "device_authorizations"("client_id");

-- CreateIndex
CREATE INDEX "device_authorizations_expires_at_idx" ON "device_authorizations"("expires_at");

-- AddForeignKey
ALTER TABLE "device_authorizations" ADD CONSTRAINT "device_authorizations_client_id_fkey" FOREIGN KEY ("client_id") REFERENCES "oauth_clients"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "device_authorizations" ADD CONSTRAINT "device_authorizations_grant_id_fkey" FOREIGN KEY ("grant_id") REFERENCES "oauth_grants"("id") ON DELETE CASCADE ON UPDATE CASCADE;
