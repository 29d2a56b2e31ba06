/**
 * A form field as posted, untrimmed (passwords keep their spaces): `absent` when it is missing or is a file, the
 * first value when it is repeated.
 */
export function formText(form: FormData, name: string, absent = ''): string {
	const value = form.get(name);
	return typeof value === 'string' ? value : absent;
}
