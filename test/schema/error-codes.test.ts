// Each domain's mutations name the codes their UserError can carry (schema/mutation-errors.ts). Given: the
// error classes of every errors file, and the modules each domain's GraphQL files reach by import. Then: every
// UserError a domain's code can construct carries a code its enum lists, and every mutation's result union names
// its enum, with the same codes.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GraphQLEnumType, GraphQLNonNull, GraphQLUnionType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { schema } from '../../schema/index.ts';
import { USER_ERROR_CODES, type UserErrorCode } from '../../schema/errors/codes.ts';
import { UserError } from '../../schema/errors/index.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../schema');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const files = sourceFiles(root);
const sources = new Map(files.map((file) => [file, readFileSync(file, 'utf8')]));
const errorFiles = files.filter((file) => file.endsWith('.errors.ts') || file === join(root, 'errors/index.ts'));

type ErrorClass = (abstract new (...args: never[]) => UserError) & { code?: UserErrorCode };

/** Every UserError class an errors file exports, by name. */
async function userErrorClasses(): Promise<Map<string, ErrorClass>> {
  const classes = new Map<string, ErrorClass>();
  for (const file of errorFiles) {
    const exported = (await import(file)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(exported)) {
      if (typeof value !== 'function' || !(value.prototype instanceof UserError)) continue;
      expect(classes.has(name), `${name} is exported by two errors files`).toBe(false);
      classes.set(name, value as ErrorClass);
    }
  }
  return classes;
}

/** The files `from` reaches by static or dynamic import, itself included. */
function reached(from: string[]): Set<string> {
  const seen = new Set(from);
  const queue = [...from];
  for (let file = queue.pop(); file; file = queue.pop()) {
    for (const [, spec] of (sources.get(file) ?? '').matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)) {
      const target = resolve(dirname(file), spec!);
      if (!seen.has(target)) {
        seen.add(target);
        queue.push(target);
      }
    }
  }
  return seen;
}

/** Each domain folder with mutations: its GraphQL files and the codes its errors file declares. */
async function domains() {
  const modules = join(root, 'modules');
  const found: { domain: string; graphql: string[]; declared: readonly UserErrorCode[] }[] = [];
  for (const domain of readdirSync(modules)) {
    const exported = (await import(join(modules, domain, `${domain}.errors.ts`))) as Record<string, unknown>;
    const declared = Object.entries(exported).find(([name]) => name.endsWith('_ERROR_CODES'))?.[1];
    if (!declared) continue;
    const graphql = files.filter(
      (file) => file.startsWith(join(modules, domain) + '/') && file.endsWith('.graphql.ts'),
    );
    found.push({ domain, graphql, declared: declared as readonly UserErrorCode[] });
  }
  return found;
}

describe('UserError codes', () => {
  it('every UserError class carries a static code that UserErrorCode lists', async () => {
    const classes = await userErrorClasses();
    expect(classes.size).toBeGreaterThan(40);
    for (const [name, cls] of classes) {
      expect(cls.code, `${name} (or a class it extends) names no static code`).toBeDefined();
      expect(Object.keys(USER_ERROR_CODES), name).toContain(cls.code);
    }
  });

  it("lists, for each domain, every code a UserError its mutations' code constructs can carry", async () => {
    const classes = await userErrorClasses();
    const list = await domains();
    expect(list.map((d) => d.domain)).toContain('members');
    for (const { domain, graphql, declared } of list) {
      for (const file of reached(graphql)) {
        for (const [, name] of (sources.get(file) ?? '').matchAll(/new (\w+)\(/g)) {
          const code = classes.get(name!)?.code;
          if (!code) continue;
          expect(
            declared,
            `${relative(root, file)} constructs ${name} (${code}), which the ${domain} domain's mutations can answer: add it to its errors file's list`,
          ).toContain(code);
        }
      }
    }
  });

  it("names, on every mutation's result union, the enum of its codes, which has those codes", () => {
    const mutations = Object.values(schema.getMutationType()!.getFields());
    let checked = 0;
    for (const field of mutations) {
      const type = field.type instanceof GraphQLNonNull ? field.type.ofType : field.type;
      if (!(type instanceof GraphQLUnionType) || !type.getTypes().some((t) => t.name === 'UserError')) continue;
      const { userErrorCodes, userErrorCodeEnum } = type.extensions as {
        userErrorCodes?: readonly string[];
        userErrorCodeEnum?: string;
      };
      expect(userErrorCodeEnum, `${field.name} names no enum of its codes`).toBeDefined();
      const codes = schema.getType(userErrorCodeEnum!);
      expect(codes).toBeInstanceOf(GraphQLEnumType);
      expect(
        (codes as GraphQLEnumType)
          .getValues()
          .map((v) => v.value as string)
          .sort(),
      ).toEqual([...userErrorCodes!].sort());
      expect(type.description).toContain(userErrorCodeEnum);
      checked++;
    }
    expect(checked).toBeGreaterThan(60);
  });
});
