-- Events keep their envelope once, as the exact text in body that every writer now gives. The JSONB copy in payload
-- cost a parse of each body on every insert (the token and authorize hot paths among them) and doubled each event's
-- storage; nothing reads it.
DROP TRIGGER "events_body" ON "events";
DROP FUNCTION tessera_event_body();
ALTER TABLE "events" DROP COLUMN "payload";
