-- A time-ordered id (UUIDv7, RFC 9562) made in SQL: lists page by id, so the delivery ids that the fan-out writes
-- must sort by creation time, as the ids that the services make (`uuidv7`, schema/lib/ids.ts) do.
CREATE OR REPLACE FUNCTION tessera_uuid_v7() RETURNS text LANGUAGE sql VOLATILE AS $$
  SELECT encode(
    set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
      PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1),
    'hex')::uuid::text
$$;
