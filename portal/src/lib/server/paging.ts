// One page of a list as a page's load reads it: lists page by an opaque cursor (docs/architecture.md#rest-conventions),
// which the address carries as ?cursor= and the Pager component links to.
import type { RequestEvent } from '@sveltejs/kit';
import { errorPage } from './errors.ts';
import { gql } from './graphql.ts';

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
export async function listPage<T>(
	event: Pick<RequestEvent, 'platform' | 'cookies' | 'url'>,
	document: string,
	field: string,
	variables: Record<string, unknown>,
	what: string,
): Promise<ListPage<T>> {
	const cursor = event.url.searchParams.get('cursor');
	let data: Record<string, { items: T[]; nextCursor: string | null }>;
	try {
		data = await gql<typeof data>(event, document, { ...variables, cursor });
	} catch (err) {
		errorPage(err, { invalid_request: `That page of ${what} does not exist.` });
	}
	return { ...data[field]!, cursor };
}
