// Refusals as the portal answers them, with the status the API gives their code (the one table,
// server/errors/http.ts): a top-level GraphQL error the caller caused (the role does not allow it, the thing is
// gone, the session ended, input the service refuses), and a mutation's UserError. A top-level error that is not
// the caller's (the service failing) goes on to the error page as a 500.
import { error, fail } from '@sveltejs/kit';
import { STATUS_BY_CODE } from '../../../../server/errors/http.ts';
import { problemLines, type FieldLabels } from '../field-errors.ts';
import { GraphQLRequestError, type UserError } from './graphql.ts';

/** What a page says for some codes instead of the service's message (which is written to be shown). */
export type Messages = Partial<Record<string, string>>;

const clientMistake = (err: unknown): err is GraphQLRequestError =>
	err instanceof GraphQLRequestError && err.status < 500;

const messageOf = (err: GraphQLRequestError, messages: Messages) => (err.code && messages[err.code]) || err.message;

/** As the form's failure, with `data` and the message. */
export function refused<T extends object>(err: unknown, data: T, messages: Messages = {}) {
	if (clientMistake(err)) return fail(err.status, { ...data, message: messageOf(err, messages) });
	throw err;
}

/** As the error page of its status. */
export function errorPage(err: unknown, messages: Messages = {}): never {
	if (clientMistake(err)) error(err.status, messageOf(err, messages));
	throw err;
}

/** The status the API gives a mutation's UserError: conflict 409, a wrong password 401, the rest 400. */
export const userErrorStatus = (result: { code: string }) => STATUS_BY_CODE[result.code] ?? 400;

/**
 * A mutation's UserError as the form's failure: its status, its message, and each field problem as a line named by
 * the form's label for it (`labels`, keyed as GraphQL names the fields), never by the GraphQL name.
 */
export function userErrorFailure<T extends object>(result: UserError, data: T, labels: FieldLabels = {}) {
	const problems = problemLines(result.details, labels);
	return fail(userErrorStatus(result), { ...data, message: result.message, problems });
}

/**
 * The page's words for the stable reason a refusal sent in the address (?sso_error=, ?test_error=, ?link_error=):
 * the address bar's own text is never shown, so a reason without words here gets `fallback`. No reason, null.
 */
export function reasonMessage(reason: string | null, messages: Messages, fallback: string): string | null {
	if (reason === null) return null;
	return (Object.hasOwn(messages, reason) && messages[reason]) || fallback;
}
