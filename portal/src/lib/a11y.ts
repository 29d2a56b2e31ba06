// Two small helpers of the accessible forms and panels the admin pages share (docs/architecture.md#portals).

/**
 * An attachment (`{@attach focus}`) that gives the element the focus when it appears: a confirmation's or a shown
 * secret's heading, so that keyboard and screen reader users land on it.
 */
export const focus = (node: HTMLElement) => {
	node.focus();
};

/** An aria-describedby naming the ids given (false and undefined skipped), or none when there are none. */
export const describedBy = (...ids: (string | false | undefined)[]) => ids.filter(Boolean).join(' ') || undefined;
