// Each domain's mutations say which codes their UserError can carry (docs/architecture.md#errors). GraphQL gives
// a type one shape, and every mutation's refusal stays the one `UserError` type that clients already read by its
// `__typename`; so the domain's codes are an enum of its own (MembersErrorCode), which each of its result unions
// names in its description and carries in its extensions (test/schema/error-codes.test.ts reads them there).
// Beside the builder it registers the enums on, as page-type.ts is: errors/ lies below the builder, which imports it.
import { builder } from './builder.ts';
import { USER_ERROR_CODES, type UserErrorCode } from './errors/codes.ts';

const registered = new Map<string, readonly UserErrorCode[]>();

/**
 * The `errors` option of a domain's mutations, after registering the enum `enumName` of their codes (once, however
 * many of the domain's files ask for it).
 */
export function mutationErrors(enumName: `${string}ErrorCode`, codes: readonly UserErrorCode[]) {
  const known = registered.get(enumName);
  if (known && known !== codes) throw new Error(`${enumName} is registered with other codes`);
  if (!known) registerEnum(enumName, codes);
  registered.set(enumName, codes);
  return {
    union: {
      description: `The result, or a UserError whose code is one of ${enumName}.`,
      extensions: { userErrorCodes: codes, userErrorCodeEnum: enumName },
    },
  };
}

function registerEnum(enumName: string, codes: readonly UserErrorCode[]) {
  builder.enumType(enumName, {
    description: `The codes a UserError of these mutations can carry (UserErrorCode has them all).`,
    values: Object.fromEntries(codes.map((code) => [code, { value: code, description: USER_ERROR_CODES[code] }])),
  });
}
