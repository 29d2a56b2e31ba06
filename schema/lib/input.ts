// One validation step for every input, GraphQL or REST: a zod schema per input, problems reported per field.
import { z } from 'zod';
import { ValidationError } from '../errors/index.ts';

export function parseInput<S extends z.ZodType>(schema: S, input: unknown, message = 'The request is invalid'): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const details = result.error.issues.map((issue) => ({
    path: issue.path.map(String).join('.') || '(body)',
    message: issue.message,
  }));
  throw new ValidationError(message, details);
}

/** Shared field rules, so that an e-mail or a name means the same thing everywhere. */
export const fields = {
  email: z
    .string()
    .trim()
    .max(254)
    .pipe(z.email('must be an e-mail address'))
    .transform((v) => v.toLowerCase()),
  password: z.string().min(12, 'must be at least 12 characters').max(256, 'must be at most 256 characters'),
  name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
  httpsUrl: z.url({ protocol: /^https$/, message: 'must be an https URL' }).max(2048),
  id: z.string().min(1).max(100),
  role: z.enum(['owner', 'admin', 'member'], { message: 'must be owner, admin or member' }),
};

/** GraphQL gives absent input fields as undefined and explicit nulls as null; services decide what null means. */
export const present = (input: object) => Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
