// Step 8: prompt holds known values (none alone), max_age is a number of seconds, and acr_values keeps the values
// we know (OIDC Core 3.1.2.1: a voluntary claim, so unknown ones are ignored).
import { InvalidRequest } from '../oauth.errors.ts';
import { ACR_VALUES } from '../acr.ts';

const PROMPTS = new Set(['none', 'login', 'consent', 'select_account']);

export function checkPrompt(p: Record<string, string>): {
  prompt: string[];
  maxAge: number | null;
  acrValues: string[];
} {
  const prompt = (p.prompt ?? '').split(' ').filter(Boolean);
  if (prompt.some((v) => !PROMPTS.has(v))) throw new InvalidRequest('prompt has an unknown value');
  if (prompt.includes('none') && prompt.length > 1)
    throw new InvalidRequest('prompt=none cannot be combined with other values');
  const acrValues = (p.acr_values ?? '')
    .slice(0, 1000)
    .split(' ')
    .filter((v) => (ACR_VALUES as readonly string[]).includes(v));
  if (p.max_age === undefined) return { prompt, maxAge: null, acrValues };
  if (!/^\d{1,10}$/.test(p.max_age)) throw new InvalidRequest('max_age must be a number of seconds');
  return { prompt, maxAge: Number(p.max_age), acrValues };
}
