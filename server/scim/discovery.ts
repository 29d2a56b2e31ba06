// What the service provider says of itself (RFC 7644 4, RFC 7643 5-7): what it supports (PATCH and filters, not
// bulk, sort, ETags or password changes), its resource types, and the attributes of their schemas that it keeps.
import { GROUP_SCHEMA, USER_SCHEMA } from './resources.ts';

export const SERVICE_PROVIDER_CONFIG_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
export const RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
export const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

/** The most resources one list answers (`count` above it is lowered to it). */
export const MAX_RESULTS = 1_000;

type Json = Record<string, unknown>;

export function serviceProviderConfig(base: string): Json {
  return {
    schemas: [SERVICE_PROVIDER_CONFIG_SCHEMA],
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: false },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'OAuth Bearer Token',
        description:
          "A directory token (tsd_...) made by an organization's owner or admin in Tessera, sent as Authorization: Bearer",
        specUri: 'https://www.rfc-editor.org/info/rfc6750',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}

const RESOURCE_TYPES = [
  { id: 'User', name: 'User', endpoint: '/Users', description: 'A person of the organization', schema: USER_SCHEMA },
  {
    id: 'Group',
    name: 'Group',
    endpoint: '/Groups',
    description: "A group of the directory's users; mapped in Tessera to a role or a subscription's seats",
    schema: GROUP_SCHEMA,
  },
];

export function resourceTypes(base: string): Json[] {
  return RESOURCE_TYPES.map((t) => ({
    schemas: [RESOURCE_TYPE_SCHEMA],
    ...t,
    schemaExtensions: [],
    meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/${t.id}` },
  }));
}

// ---- schemas ----------------------------------------------------------------------------------------------------

interface Attribute {
  name: string;
  type: 'string' | 'boolean' | 'complex' | 'reference';
  multiValued?: boolean;
  description: string;
  required?: boolean;
  caseExact?: boolean;
  mutability?: 'readOnly' | 'readWrite' | 'immutable';
  returned?: 'always' | 'default';
  uniqueness?: 'none' | 'server';
  referenceTypes?: string[];
  subAttributes?: Attribute[];
}

/** RFC 7643 7's characteristics, with its defaults spelled out. */
function attribute(a: Attribute): Json {
  const out: Json = {
    name: a.name,
    type: a.type,
    multiValued: a.multiValued ?? false,
    description: a.description,
    required: a.required ?? false,
    mutability: a.mutability ?? 'readWrite',
    returned: a.returned ?? 'default',
  };
  if (a.type === 'string' || a.type === 'reference') out.caseExact = a.caseExact ?? false;
  if (a.type === 'string') out.uniqueness = a.uniqueness ?? 'none';
  if (a.referenceTypes) out.referenceTypes = a.referenceTypes;
  if (a.subAttributes) out.subAttributes = a.subAttributes.map(attribute);
  return out;
}

const USER_ATTRIBUTES: Attribute[] = [
  {
    name: 'userName',
    type: 'string',
    description: 'Unique in the directory, compared case-insensitively',
    required: true,
    uniqueness: 'server',
  },
  {
    name: 'name',
    type: 'complex',
    description: "The person's name",
    subAttributes: [
      {
        name: 'formatted',
        type: 'string',
        description: 'givenName and familyName, made by Tessera',
        mutability: 'readOnly',
      },
      { name: 'familyName', type: 'string', description: 'Family name' },
      { name: 'givenName', type: 'string', description: 'Given name' },
    ],
  },
  { name: 'displayName', type: 'string', description: 'The name shown for the person' },
  {
    name: 'active',
    type: 'boolean',
    description: "false ends the person's membership of the organization; true makes them a member again",
  },
  {
    name: 'emails',
    type: 'complex',
    multiValued: true,
    description:
      "E-mail addresses; the primary one (else the first, else userName) is the account's, taken as verified",
    subAttributes: [
      { name: 'value', type: 'string', description: 'An e-mail address' },
      { name: 'type', type: 'string', description: 'work, home or other' },
      { name: 'primary', type: 'boolean', description: "The account's address" },
    ],
  },
  {
    name: 'groups',
    type: 'complex',
    multiValued: true,
    mutability: 'readOnly',
    description: "The groups the user is a member of; change a group's members to change them",
    subAttributes: [
      { name: 'value', type: 'string', description: "The group's id", mutability: 'readOnly' },
      {
        name: '$ref',
        type: 'reference',
        referenceTypes: ['Group'],
        description: "The group's URI",
        mutability: 'readOnly',
      },
      { name: 'display', type: 'string', description: "The group's displayName", mutability: 'readOnly' },
    ],
  },
];

const GROUP_ATTRIBUTES: Attribute[] = [
  {
    name: 'displayName',
    type: 'string',
    description: 'Unique in the directory, compared case-insensitively; what group mappings name',
    required: true,
    uniqueness: 'server',
  },
  {
    name: 'members',
    type: 'complex',
    multiValued: true,
    description: "The group's users",
    subAttributes: [
      { name: 'value', type: 'string', description: "A user's id", mutability: 'immutable' },
      {
        name: '$ref',
        type: 'reference',
        referenceTypes: ['User'],
        description: "The user's URI",
        mutability: 'immutable',
      },
      { name: 'display', type: 'string', description: "The user's displayName, else userName", mutability: 'readOnly' },
      { name: 'type', type: 'string', description: 'User', mutability: 'immutable' },
    ],
  },
];

export function schemas(base: string): Json[] {
  return [
    { id: USER_SCHEMA, name: 'User', description: 'User Account', attributes: USER_ATTRIBUTES.map(attribute) },
    { id: GROUP_SCHEMA, name: 'Group', description: 'Group', attributes: GROUP_ATTRIBUTES.map(attribute) },
  ].map((s) => ({
    schemas: [SCHEMA_SCHEMA],
    ...s,
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${s.id}` },
  }));
}
