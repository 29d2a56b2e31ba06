import adapter from '@sveltejs/adapter-node';
import { sveltekit } from '@sveltejs/kit/vite';
import { defineConfig } from 'vite';

export default defineConfig({
	plugins: [
		sveltekit({
			// Koa serves build/handler.js as its last middleware: one process, one origin for API and portal.
			adapter: adapter({ out: 'build' }),
			// Kit's CSRF origin check on form actions stays on: no trusted origins besides our own. The portal
			// is same-origin with the API (both behind Koa), so no other origin needs to post forms here.
			csrf: { trustedOrigins: [] }
		})
	]
});
