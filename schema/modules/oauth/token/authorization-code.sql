-- The authorization_code grant's one statement, in each of its compositions, as the code composes it.
-- Written by test/oauth/token-statements.test.ts (run it with -u after a change); never run from here.

-- a client of plain scopes only, no audit row
    with consumed as (
      update authorization_codes set used_at = :now::timestamp(3)
      where code_hash = :hash::text and client_id = :clientRowId::text and used_at is null
        and expires_at > :now::timestamp(3) and exists (select 1 from oauth_clients oc where oc.id = :clientRowId::text and oc.xmin = :clientVersion::xid) and string_to_array(scope, ' ') <@ array['openid', 'profile', 'email', 'offline_access', 'api']::text[]
        and resources @> :resources::text[]
      returning grant_id, user_id, organization_id, redirect_uri, scope, resources, nonce, code_challenge, code_challenge_method, auth_time, amr, session_version
    ), subject as (
      select c.grant_id, c.nonce, c.auth_time, c.amr, c.session_version,
        c.redirect_uri = :redirectUri::text as redirect_ok,
        c.code_challenge is not null as has_challenge,
        case when c.code_challenge is null then not :verifierGiven::boolean
             when c.code_challenge_method = 'S256' then coalesce(c.code_challenge = :s256::text, false)
             else coalesce(c.code_challenge = :plain::text, false) end as pkce_ok,
        i.scope, k.scope as refresh_scope, c.resources,
    g.revoked_at is null as grant_live,
    coalesce(u.session_version = c.session_version, false) as session_current,
    (m.role is not null or :platformWide::boolean) as member,
    c.user_id, c.organization_id, u.email, u.email_verified, u.name, u.picture, u.updated_at, o.name as organization_name, m.role::text as role, null::jsonb as products
  from consumed c
  cross join lateral (select c.scope as scope) k
  cross join lateral (select k.scope as scope) i
  join oauth_grants g on g.id = c.grant_id
  left join users u on u.id = c.user_id
  left join organizations o on o.id = c.organization_id
  left join memberships m on m.user_id = c.user_id and m.organization_id = c.organization_id
    )
    , issued as (
      select * from subject where redirect_ok and pkce_ok and grant_live and session_current and member
    ), next_refresh as (
      insert into refresh_tokens (id, token_hash, grant_id, client_id, user_id, organization_id, scope, resources, auth_time, amr, session_version, expires_at, created_at)
      select :refreshId::text, :refreshHash::text, grant_id, :clientRowId::text, user_id, organization_id, refresh_scope, resources, auth_time, amr,
             session_version, :refreshExpiresAt::timestamp(3), :now::timestamp(3)
      from issued where :issuesRefresh::boolean
        and (not :refreshNeedsOffline::boolean or 'offline_access' = any(string_to_array(refresh_scope, ' ')))
    ), event AS (
    INSERT INTO events (id, kind, organization_id, body, created_at)
    SELECT :eventId::text, 'oauth.token.issued'::text, evo.id, '{"id":'::text || coalesce(to_json(:eventId::text)::text, 'null') || ',"event":"oauth.token.issued","timestamp":'::text || coalesce(to_json(:now::text)::text, 'null') || ',"organization":{"id":'::text || coalesce(to_json(evo.id)::text, 'null') || ',"name":'::text || coalesce(to_json(evo.name)::text, 'null') || '},"data":{"client":{"id":'::text || coalesce(to_json(:clientRowId::text)::text, 'null') || ',"clientId":'::text || coalesce(to_json(:clientPublicId::text)::text, 'null') || '},"user":{"id":'::text || coalesce(to_json(issued.user_id)::text, 'null') || '},"scope":'::text || coalesce(to_json(issued.scope)::text, 'null') || ',"grantType":"authorization_code"}}'::text, :now::timestamp(3)
    FROM issued JOIN organizations evo ON evo.id = issued.organization_id
    WHERE EXISTS (SELECT 1 FROM tessera_webhooks_wanting(evo.id, 'oauth.token.issued'::text, NULL))), touched as (
      update oauth_consents set last_used_at = :now::timestamp(3)
      where user_id = (select user_id from issued) and client_id = :clientRowId::text
        and (last_used_at is null or last_used_at < :now::timestamp(3) - interval '1 minute')
    ), ended_grant as (
      update oauth_grants set revoked_at = :now::timestamp(3)
      where id = (select grant_id from subject where grant_live and not (session_current and member))
    ), ended_tokens as (
      update refresh_tokens set revoked_at = :now::timestamp(3)
      where grant_id = (select grant_id from subject where grant_live and not (session_current and member)) and revoked_at is null
    )
    select * from subject;

-- a client of plain scopes only, with AUDIT_TOKEN_ISSUANCE
    with consumed as (
      update authorization_codes set used_at = :now::timestamp(3)
      where code_hash = :hash::text and client_id = :clientRowId::text and used_at is null
        and expires_at > :now::timestamp(3) and exists (select 1 from oauth_clients oc where oc.id = :clientRowId::text and oc.xmin = :clientVersion::xid) and string_to_array(scope, ' ') <@ array['openid', 'profile', 'email', 'offline_access', 'api']::text[]
        and resources @> :resources::text[]
      returning grant_id, user_id, organization_id, redirect_uri, scope, resources, nonce, code_challenge, code_challenge_method, auth_time, amr, session_version
    ), subject as (
      select c.grant_id, c.nonce, c.auth_time, c.amr, c.session_version,
        c.redirect_uri = :redirectUri::text as redirect_ok,
        c.code_challenge is not null as has_challenge,
        case when c.code_challenge is null then not :verifierGiven::boolean
             when c.code_challenge_method = 'S256' then coalesce(c.code_challenge = :s256::text, false)
             else coalesce(c.code_challenge = :plain::text, false) end as pkce_ok,
        i.scope, k.scope as refresh_scope, c.resources,
    g.revoked_at is null as grant_live,
    coalesce(u.session_version = c.session_version, false) as session_current,
    (m.role is not null or :platformWide::boolean) as member,
    c.user_id, c.organization_id, u.email, u.email_verified, u.name, u.picture, u.updated_at, o.name as organization_name, m.role::text as role, null::jsonb as products
  from consumed c
  cross join lateral (select c.scope as scope) k
  cross join lateral (select k.scope as scope) i
  join oauth_grants g on g.id = c.grant_id
  left join users u on u.id = c.user_id
  left join organizations o on o.id = c.organization_id
  left join memberships m on m.user_id = c.user_id and m.organization_id = c.organization_id
    )
    , issued as (
      select * from subject where redirect_ok and pkce_ok and grant_live and session_current and member
    ), next_refresh as (
      insert into refresh_tokens (id, token_hash, grant_id, client_id, user_id, organization_id, scope, resources, auth_time, amr, session_version, expires_at, created_at)
      select :refreshId::text, :refreshHash::text, grant_id, :clientRowId::text, user_id, organization_id, refresh_scope, resources, auth_time, amr,
             session_version, :refreshExpiresAt::timestamp(3), :now::timestamp(3)
      from issued where :issuesRefresh::boolean
        and (not :refreshNeedsOffline::boolean or 'offline_access' = any(string_to_array(refresh_scope, ' ')))
    ), event AS (
    INSERT INTO events (id, kind, organization_id, body, created_at)
    SELECT :eventId::text, 'oauth.token.issued'::text, evo.id, '{"id":'::text || coalesce(to_json(:eventId::text)::text, 'null') || ',"event":"oauth.token.issued","timestamp":'::text || coalesce(to_json(:now::text)::text, 'null') || ',"organization":{"id":'::text || coalesce(to_json(evo.id)::text, 'null') || ',"name":'::text || coalesce(to_json(evo.name)::text, 'null') || '},"data":{"client":{"id":'::text || coalesce(to_json(:clientRowId::text)::text, 'null') || ',"clientId":'::text || coalesce(to_json(:clientPublicId::text)::text, 'null') || '},"user":{"id":'::text || coalesce(to_json(issued.user_id)::text, 'null') || '},"scope":'::text || coalesce(to_json(issued.scope)::text, 'null') || ',"grantType":"authorization_code"}}'::text, :now::timestamp(3)
    FROM issued JOIN organizations evo ON evo.id = issued.organization_id
    WHERE EXISTS (SELECT 1 FROM tessera_webhooks_wanting(evo.id, 'oauth.token.issued'::text, NULL))), audit AS (
    INSERT INTO audit_logs (id, organization_id, actor_type, actor_id, action, target_type, target_id, outcome, ip, user_agent, details, created_at)
    SELECT :auditId::text, issued.organization_id, 'user'::text, issued.user_id, 'oauth.token.issue'::text,
           'oauth_client'::text, :clientRowId::text, 'success'::"AuditOutcome",
           :ip::text, :userAgent::text, jsonb_build_object('kind', 'user', 'scope', issued.scope), :now::timestamp(3)
    FROM issued), touched as (
      update oauth_consents set last_used_at = :now::timestamp(3)
      where user_id = (select user_id from issued) and client_id = :clientRowId::text
        and (last_used_at is null or last_used_at < :now::timestamp(3) - interval '1 minute')
    ), ended_grant as (
      update oauth_grants set revoked_at = :now::timestamp(3)
      where id = (select grant_id from subject where grant_live and not (session_current and member))
    ), ended_tokens as (
      update refresh_tokens set revoked_at = :now::timestamp(3)
      where grant_id = (select grant_id from subject where grant_live and not (session_current and member)) and revoked_at is null
    )
    select * from subject;

-- with the license lookups, no audit row
    with consumed as (
      update authorization_codes set used_at = :now::timestamp(3)
      where code_hash = :hash::text and client_id = :clientRowId::text and used_at is null
        and expires_at > :now::timestamp(3) and exists (select 1 from oauth_clients oc where oc.id = :clientRowId::text and oc.xmin = :clientVersion::xid) and true
        and resources @> :resources::text[]
      returning grant_id, user_id, organization_id, redirect_uri, scope, resources, nonce, code_challenge, code_challenge_method, auth_time, amr, session_version
    ), subject as (
      select c.grant_id, c.nonce, c.auth_time, c.amr, c.session_version,
        c.redirect_uri = :redirectUri::text as redirect_ok,
        c.code_challenge is not null as has_challenge,
        case when c.code_challenge is null then not :verifierGiven::boolean
             when c.code_challenge_method = 'S256' then coalesce(c.code_challenge = :s256::text, false)
             else coalesce(c.code_challenge = :plain::text, false) end as pkce_ok,
        i.scope, k.scope as refresh_scope, c.resources,
    g.revoked_at is null as grant_live,
    coalesce(u.session_version = c.session_version, false) as session_current,
    (m.role is not null or :platformWide::boolean) as member,
    c.user_id, c.organization_id, u.email, u.email_verified, u.name, u.picture, u.updated_at, o.name as organization_name, m.role::text as role, (select coalesce(jsonb_agg(jsonb_build_object('id', p.id, 'slug', p.slug, 'name', p.name, 'features', p.features) order by p.slug), '[]'::jsonb)
    from products p where ('organization' = any(string_to_array(i.scope, ' ')) or p.slug = any(string_to_array(i.scope, ' '))) and exists (
    select 1 from seat_assignments lic_a join subscriptions lic_s on lic_s.id = lic_a.subscription_id
    where lic_a.user_id = c.user_id and lic_a.organization_id = c.organization_id and lic_s.product_id = p.id
      and lic_s.status in ('active', 'trial') and (lic_s.end_date is null or lic_s.end_date > :now::timestamp(3)))) as products
  from consumed c
  cross join lateral (select array_to_string(array(
    select x from unnest(string_to_array(c.scope, ' ')) with ordinality as t(x, n)
    where x = any(array['openid', 'profile', 'email', 'organization', 'offline_access', 'api']::text[]) or exists (select 1 from products p where p.slug = x and exists (
    select 1 from seat_assignments lic_a join subscriptions lic_s on lic_s.id = lic_a.subscription_id
    where lic_a.user_id = c.user_id and lic_a.organization_id = c.organization_id and lic_s.product_id = p.id
      and lic_s.status in ('active', 'trial') and (lic_s.end_date is null or lic_s.end_date > :now::timestamp(3))))
    order by n), ' ') as scope) k
  cross join lateral (select k.scope as scope) i
  join oauth_grants g on g.id = c.grant_id
  left join users u on u.id = c.user_id
  left join organizations o on o.id = c.organization_id
  left join memberships m on m.user_id = c.user_id and m.organization_id = c.organization_id
    )
    , issued as (
      select * from subject where redirect_ok and pkce_ok and grant_live and session_current and member
    ), next_refresh as (
      insert into refresh_tokens (id, token_hash, grant_id, client_id, user_id, organization_id, scope, resources, auth_time, amr, session_version, expires_at, created_at)
      select :refreshId::text, :refreshHash::text, grant_id, :clientRowId::text, user_id, organization_id, refresh_scope, resources, auth_time, amr,
             session_version, :refreshExpiresAt::timestamp(3), :now::timestamp(3)
      from issued where :issuesRefresh::boolean
        and (not :refreshNeedsOffline::boolean or 'offline_access' = any(string_to_array(refresh_scope, ' ')))
    ), event AS (
    INSERT INTO events (id, kind, organization_id, body, created_at)
    SELECT :eventId::text, 'oauth.token.issued'::text, evo.id, '{"id":'::text || coalesce(to_json(:eventId::text)::text, 'null') || ',"event":"oauth.token.issued","timestamp":'::text || coalesce(to_json(:now::text)::text, 'null') || ',"organization":{"id":'::text || coalesce(to_json(evo.id)::text, 'null') || ',"name":'::text || coalesce(to_json(evo.name)::text, 'null') || '},"data":{"client":{"id":'::text || coalesce(to_json(:clientRowId::text)::text, 'null') || ',"clientId":'::text || coalesce(to_json(:clientPublicId::text)::text, 'null') || '},"user":{"id":'::text || coalesce(to_json(issued.user_id)::text, 'null') || '},"scope":'::text || coalesce(to_json(issued.scope)::text, 'null') || ',"grantType":"authorization_code"}}'::text, :now::timestamp(3)
    FROM issued JOIN organizations evo ON evo.id = issued.organization_id
    WHERE EXISTS (SELECT 1 FROM tessera_webhooks_wanting(evo.id, 'oauth.token.issued'::text, NULL))), touched as (
      update oauth_consents set last_used_at = :now::timestamp(3)
      where user_id = (select user_id from issued) and client_id = :clientRowId::text
        and (last_used_at is null or last_used_at < :now::timestamp(3) - interval '1 minute')
    ), ended_grant as (
      update oauth_grants set revoked_at = :now::timestamp(3)
      where id = (select grant_id from subject where grant_live and not (session_current and member))
    ), ended_tokens as (
      update refresh_tokens set revoked_at = :now::timestamp(3)
      where grant_id = (select grant_id from subject where grant_live and not (session_current and member)) and revoked_at is null
    )
    select * from subject;

-- with the license lookups and AUDIT_TOKEN_ISSUANCE
    with consumed as (
      update authorization_codes set used_at = :now::timestamp(3)
      where code_hash = :hash::text and client_id = :clientRowId::text and used_at is null
        and expires_at > :now::timestamp(3) and exists (select 1 from oauth_clients oc where oc.id = :clientRowId::text and oc.xmin = :clientVersion::xid) and true
        and resources @> :resources::text[]
      returning grant_id, user_id, organization_id, redirect_uri, scope, resources, nonce, code_challenge, code_challenge_method, auth_time, amr, session_version
    ), subject as (
      select c.grant_id, c.nonce, c.auth_time, c.amr, c.session_version,
        c.redirect_uri = :redirectUri::text as redirect_ok,
        c.code_challenge is not null as has_challenge,
        case when c.code_challenge is null then not :verifierGiven::boolean
             when c.code_challenge_method = 'S256' then coalesce(c.code_challenge = :s256::text, false)
             else coalesce(c.code_challenge = :plain::text, false) end as pkce_ok,
        i.scope, k.scope as refresh_scope, c.resources,
    g.revoked_at is null as grant_live,
    coalesce(u.session_version = c.session_version, false) as session_current,
    (m.role is not null or :platformWide::boolean) as member,
    c.user_id, c.organization_id, u.email, u.email_verified, u.name, u.picture, u.updated_at, o.name as organization_name, m.role::text as role, (select coalesce(jsonb_agg(jsonb_build_object('id', p.id, 'slug', p.slug, 'name', p.name, 'features', p.features) order by p.slug), '[]'::jsonb)
    from products p where ('organization' = any(string_to_array(i.scope, ' ')) or p.slug = any(string_to_array(i.scope, ' '))) and exists (
    select 1 from seat_assignments lic_a join subscriptions lic_s on lic_s.id = lic_a.subscription_id
    where lic_a.user_id = c.user_id and lic_a.organization_id = c.organization_id and lic_s.product_id = p.id
      and lic_s.status in ('active', 'trial') and (lic_s.end_date is null or lic_s.end_date > :now::timestamp(3)))) as products
  from consumed c
  cross join lateral (select array_to_string(array(
    select x from unnest(string_to_array(c.scope, ' ')) with ordinality as t(x, n)
    where x = any(array['openid', 'profile', 'email', 'organization', 'offline_access', 'api']::text[]) or exists (select 1 from products p where p.slug = x and exists (
    select 1 from seat_assignments lic_a join subscriptions lic_s on lic_s.id = lic_a.subscription_id
    where lic_a.user_id = c.user_id and lic_a.organization_id = c.organization_id and lic_s.product_id = p.id
      and lic_s.status in ('active', 'trial') and (lic_s.end_date is null or lic_s.end_date > :now::timestamp(3))))
    order by n), ' ') as scope) k
  cross join lateral (select k.scope as scope) i
  join oauth_grants g on g.id = c.grant_id
  left join users u on u.id = c.user_id
  left join organizations o on o.id = c.organization_id
  left join memberships m on m.user_id = c.user_id and m.organization_id = c.organization_id
    )
    , issued as (
      select * from subject where redirect_ok and pkce_ok and grant_live and session_current and member
    ), next_refresh as (
      insert into refresh_tokens (id, token_hash, grant_id, client_id, user_id, organization_id, scope, resources, auth_time, amr, session_version, expires_at, created_at)
      select :refreshId::text, :refreshHash::text, grant_id, :clientRowId::text, user_id, organization_id, refresh_scope, resources, auth_time, amr,
             session_version, :refreshExpiresAt::timestamp(3), :now::timestamp(3)
      from issued where :issuesRefresh::boolean
        and (not :refreshNeedsOffline::boolean or 'offline_access' = any(string_to_array(refresh_scope, ' ')))
    ), event AS (
    INSERT INTO events (id, kind, organization_id, body, created_at)
    SELECT :eventId::text, 'oauth.token.issued'::text, evo.id, '{"id":'::text || coalesce(to_json(:eventId::text)::text, 'null') || ',"event":"oauth.token.issued","timestamp":'::text || coalesce(to_json(:now::text)::text, 'null') || ',"organization":{"id":'::text || coalesce(to_json(evo.id)::text, 'null') || ',"name":'::text || coalesce(to_json(evo.name)::text, 'null') || '},"data":{"client":{"id":'::text || coalesce(to_json(:clientRowId::text)::text, 'null') || ',"clientId":'::text || coalesce(to_json(:clientPublicId::text)::text, 'null') || '},"user":{"id":'::text || coalesce(to_json(issued.user_id)::text, 'null') || '},"scope":'::text || coalesce(to_json(issued.scope)::text, 'null') || ',"grantType":"authorization_code"}}'::text, :now::timestamp(3)
    FROM issued JOIN organizations evo ON evo.id = issued.organization_id
    WHERE EXISTS (SELECT 1 FROM tessera_webhooks_wanting(evo.id, 'oauth.token.issued'::text, NULL))), audit AS (
    INSERT INTO audit_logs (id, organization_id, actor_type, actor_id, action, target_type, target_id, outcome, ip, user_agent, details, created_at)
    SELECT :auditId::text, issued.organization_id, 'user'::text, issued.user_id, 'oauth.token.issue'::text,
           'oauth_client'::text, :clientRowId::text, 'success'::"AuditOutcome",
           :ip::text, :userAgent::text, jsonb_build_object('kind', 'user', 'scope', issued.scope), :now::timestamp(3)
    FROM issued), touched as (
      update oauth_consents set last_used_at = :now::timestamp(3)
      where user_id = (select user_id from issued) and client_id = :clientRowId::text
        and (last_used_at is null or last_used_at < :now::timestamp(3) - interval '1 minute')
    ), ended_grant as (
      update oauth_grants set revoked_at = :now::timestamp(3)
      where id = (select grant_id from subject where grant_live and not (session_current and member))
    ), ended_tokens as (
      update refresh_tokens set revoked_at = :now::timestamp(3)
      where grant_id = (select grant_id from subject where grant_live and not (session_current and member)) and revoked_at is null
    )
    select * from subject;
