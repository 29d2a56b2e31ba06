// The browser's own calls to the REST interface under /api/v1, for what a form post cannot carry (a WebAuthn
// ceremony runs in the page). Same origin, so the session cookie goes along and the API's origin check passes.

export interface RestAnswer<T = unknown> {
	ok: boolean;
	status: number;
	body: T;
	/** What went wrong, in the API's words (error_description), with each field problem after it. */
	message: string | null;
}

interface ErrorBody {
	error?: string;
	error_description?: string;
	details?: { path: string; message: string }[];
}

/** Sends `body` as JSON (none for undefined) and reads the JSON answer; a network failure is an answer too. */
export async function rest<T = unknown>(method: string, path: string, body?: unknown): Promise<RestAnswer<T>> {
	let response: Response;
	try {
		response = await fetch(path, {
			method,
			credentials: 'same-origin',
			headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
			body: body === undefined ? undefined : JSON.stringify(body),
		});
	} catch {
		return {
			ok: false,
			status: 0,
			body: null as T,
			message: 'The service could not be reached. Check your connection and try again.',
		};
	}
	const text = await response.text();
	let parsed: unknown = null;
	try {
		parsed = text ? JSON.parse(text) : null;
	} catch {
		// not JSON: only the status says anything
	}
	if (response.ok) return { ok: true, status: response.status, body: parsed as T, message: null };
	return {
		ok: false,
		status: response.status,
		body: parsed as T,
		message: messageOf(parsed as ErrorBody | null, response.status),
	};
}

function messageOf(error: ErrorBody | null, status: number): string {
	if (status === 429) return 'Too many attempts. Please wait a while and try again.';
	const lines = [error?.error_description ?? `The request failed (${status}).`];
	for (const problem of error?.details ?? [])
		if (problem.path !== 'response')
			lines.push(`${problem.path.charAt(0).toUpperCase()}${problem.path.slice(1)} ${problem.message}.`);
	return lines.join(' ');
}
