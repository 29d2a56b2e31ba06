// CSV (RFC 4180) that a spreadsheet opens as text: a cell that starts like a formula (=, +, -, @, or a tab or
// carriage return before one) is prefixed with ' (OWASP's CSV injection advice), and a cell with a comma, quote
// or line break is quoted.
const FORMULA = /^[=+\-@\t\r]/;

export function csvCell(value: unknown): string {
	let text = value == null ? '' : typeof value === 'string' ? value : JSON.stringify(value);
	if (FORMULA.test(text)) text = `'${text}`;
	return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export const csvRow = (cells: unknown[]) => `${cells.map(csvCell).join(',')}\r\n`;
