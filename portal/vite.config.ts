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
			csrf: { trustedOrigins: [] },
			// Only our own scripts run: Kit adds a per-response nonce for its inline start-up script (hashes on a
			// prerendered page), so an injected <script> or inline handler does not run. Styles may be inline
			// (Svelte's transitions and style directives write style attributes). No form-action: browsers apply
			// it to the redirect after a form post, and consent's redirect goes to the application's origin.
			csp: {
				mode: 'auto',
				directives: {
					'default-src': ['self'],
					'script-src': ['self'],
					'style-src': ['self', 'unsafe-inline'],
					'img-src': ['self', 'data:'],
					'connect-src': ['self'],
					'object-src': ['none'],
					'base-uri': ['self'],
					'frame-ancestors': ['none'],
				},
			},
		}),
	],
});
