-- An invitation has two links (docs/architecture.md#invitations): the mailed one (token_hash), which proves the
-- address when it is accepted, and the one shown to the inviter to copy (copy_token_hash), which joins but proves
-- nothing. Invitations made before this have the mailed one only.
ALTER TABLE "invitations" ADD COLUMN "copy_token_hash" TEXT;

CREATE UNIQUE INDEX "invitations_copy_token_hash_key" ON "invitations"("copy_token_hash");
