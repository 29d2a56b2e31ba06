import type { LayoutServerLoad } from './$types.js';

export const load: LayoutServerLoad = ({ locals }) => ({ user: locals.user });
