-- A code's and a refresh token's client_id and user_id are copies of their grant's. Their own foreign keys made
-- every authorize and every exchange check and lock the client's and the user's rows (FOR KEY SHARE: a MultiXact
-- on the rows of a busy client or user) for nothing: the grant's keys already hold them, and deleting a client or
-- a user deletes its grants, whose cascade deletes their codes and tokens.
-- DropForeignKey
ALTER TABLE "authorization_codes" DROP CONSTRAINT "authorization_codes_client_id_fkey";

-- DropForeignKey
ALTER TABLE "authorization_codes" DROP CONSTRAINT "authorization_codes_user_id_fkey";

-- DropForeignKey
ALTER TABLE "refresh_tokens" DROP CONSTRAINT "refresh_tokens_client_id_fkey";

-- DropForeignKey
ALTER TABLE "refresh_tokens" DROP CONSTRAINT "refresh_tokens_user_id_fkey";
