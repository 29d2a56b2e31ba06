import type { SubmitFunction } from '$app/forms';

/** Which of a page's forms is being sent, so that only its button says so. */
export class Sending {
	key = $state<string | null>(null);

	/** Whether any form of the page is being sent. */
	get busy() {
		return this.key !== null;
	}

	/**
	 * The `use:enhance` callback of the form `key`: marked from submit until the page has updated. `reset: false`
	 * keeps what was typed or chosen in the page's other forms.
	 */
	as =
		(key: string, options: { reset?: boolean } = {}): SubmitFunction =>
		() => {
			this.key = key;
			return async ({ update }) => {
				await update(options);
				this.key = null;
			};
		};
}
