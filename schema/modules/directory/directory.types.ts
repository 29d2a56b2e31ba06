// The directory's resources as the services take and give them (docs/architecture.md#directory-provisioning). The
// SCIM wire format (RFC 7643 schemas, meta, ListResponse) is server/scim's; these are plain records.
import type { Prisma } from '../../db.ts';

/** Who calls: a directory's bearer token, and the organization it provisions. */
export interface ScimCaller {
  organizationId: string;
  tokenId: string;
}

export interface DirectoryEmail {
  value: string;
  primary?: boolean;
  type?: string;
}

/** A User as the directory sends it (POST, PUT, or a PATCH applied to the current one). */
export interface DirectoryUserInput {
  userName: string;
  externalId?: string | null;
  active?: boolean;
  displayName?: string | null;
  givenName?: string | null;
  familyName?: string | null;
  emails?: DirectoryEmail[];
}

export interface DirectoryUser {
  id: string;
  userName: string;
  externalId: string | null;
  active: boolean;
  displayName: string | null;
  givenName: string | null;
  familyName: string | null;
  /** The primary address, the account's. */
  email: string;
  emails: DirectoryEmail[];
  groups: { id: string; displayName: string }[];
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface DirectoryGroupInput {
  displayName: string;
  externalId?: string | null;
  /** SCIM ids of users. */
  members?: string[];
}

/** A change to a group, from PUT or PATCH: members as a delta, so that concurrent PATCHes do not undo each other. */
export interface DirectoryGroupChange {
  displayName?: string;
  externalId?: string | null;
  /** Replace the whole member list (PUT, or a PATCH replace of members). */
  members?: string[];
  add?: string[];
  remove?: string[];
}

export interface DirectoryGroup {
  id: string;
  displayName: string;
  externalId: string | null;
  members: { id: string; userName: string; displayName: string | null }[];
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

/** A page of a list: `startIndex` 1-based (RFC 7644 3.4.2.4). */
export interface ListPage<W> {
  where: W;
  startIndex: number;
  count: number;
}

export type UserWhere = Prisma.ScimUserWhereInput;
export type GroupWhere = Prisma.ScimGroupWhereInput;

export interface Listed<T> {
  totalResults: number;
  resources: T[];
}
