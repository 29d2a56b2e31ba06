// Small helpers of the accessible forms and panels the pages share (docs/architecture.md#portals).

/**
 * An attachment (`{@attach focus}`) that gives the element the focus when it appears: a confirmation's or a shown
 * secret's heading, so that keyboard and screen reader users land on it.
 */
export const focus = (node: HTMLElement) => {
	node.focus();
};

/**
 * An attachment (`{@attach reveal(() => page.form)}`) that brings the element into view and gives it the focus when
 * it appears, and again whenever what `again` reads changes (the form's next answer): a form's error summary, which
 * screen readers then read out, after a submission the page answered with a refusal.
 */
export const reveal =
	(again: () => unknown = () => undefined) =>
	(node: HTMLElement) => {
		again();
		node.scrollIntoView({ block: 'center' });
		node.focus({ preventScroll: true });
	};

/** An aria-describedby naming the ids given (false and undefined skipped), or none when there are none. */
export const describedBy = (...ids: (string | false | undefined)[]) => ids.filter(Boolean).join(' ') || undefined;
