// One page of a list as a page's load reads it: lists page by an opaque cursor (docs/architecture.md#rest-conventions),
// which the address carries as ?cursor= and the Pager component links to.
import type { RequestEvent } from '@sveltejs/kit';
import { errorPage } from './errors.ts';
import { execute, isRecord, type AnyDocument, type ResultOf, type VariablesOf } from './graphql.ts';

export interface ListPage<T> {
	items: T[];
	nextCursor: string | null;
	/** The cursor of the page shown: null on the first page. */
	cursor: string | null;
}

/**
 * The page that ?cursor= names of the list `field`, selected by `document` (which takes `$cursor`). A cursor the
 * service refuses is the 400 page "That page of `what` does not exist."; other refusals are their error page.
 */
export async function listPage<Document extends AnyDocument, Field extends ListField<Document>>(
	event: ListEvent,
	document: Document,
	field: Field,
	variables: Omit<VariablesOf<Document>, 'cursor'>,
	what: string,
): Promise<ListPage<ItemOf<ResultOf<Document>[Field]>>>;
// The items are the document's (gql() trusts the executor so); what is checked here is that `field` is a page.
export async function listPage(
	event: ListEvent,
	document: AnyDocument,
	field: string,
	variables: Record<string, unknown>,
	what: string,
): Promise<ListPage<unknown>> {
	const cursor = event.url.searchParams.get('cursor');
	let data: unknown;
	try {
		data = await execute(event, document, { ...variables, cursor });
	} catch (err) {
		errorPage(err, { invalid_request: `That page of ${what} does not exist.` });
	}
	const page = isRecord(data) ? data[field] : undefined;
	if (
		!isRecord(page) ||
		!Array.isArray(page.items) ||
		!(typeof page.nextCursor === 'string' || page.nextCursor === null)
	)
		throw new Error(`The list's data has no page at ${field}`);
	return { items: page.items, nextCursor: page.nextCursor, cursor };
}

type ListEvent = Pick<RequestEvent, 'platform' | 'cookies' | 'url'>;

/** The item type of a page of a list. */
type ItemOf<Page> = Page extends { items: (infer Item)[] } ? Item : never;

/** The fields of an operation's data that are a page of a list. */
type ListField<Document extends AnyDocument> = {
	[K in keyof ResultOf<Document>]: ResultOf<Document>[K] extends { items: unknown[]; nextCursor: string | null }
		? K
		: never;
}[keyof ResultOf<Document>] &
	string;
