// How an entry's actor is named on the page and in the CSV export.

const KINDS: Record<string, string> = {
	user: 'User',
	api_key: 'API key',
	oauth_client: 'OAuth client',
	anonymous: 'Anonymous',
	system: 'System',
};

/** "API key", "OAuth client"...: what kind of actor, in words. */
export const actorKind = (type: string) => KINDS[type] ?? type;
