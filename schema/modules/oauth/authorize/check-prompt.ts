// Step 8: prompt holds known values (none alone), and max_age is a number of seconds (OIDC Core 3.1.2.1).
import { InvalidRequest } from '../oauth.errors.ts';

const PROMPTS = new Set(['none', 'login', 'consent', 'select_account']);

export function checkPrompt(p: Record<string, string>): { prompt: string[]; maxAge: number | null } {
  const prompt = (p.prompt ?? '').split(' ').filter(Boolean);
  if (prompt.some((v) => !PROMPTS.has(v))) throw new InvalidRequest('prompt has an unknown value');
  if (prompt.includes('none') && prompt.length > 1) throw new InvalidRequest('prompt=none cannot be combined with other values');
  if (p.max_age === undefined) return { prompt, maxAge: null };
  if (!/^\d{1,10}$/.test(p.max_age)) throw new InvalidRequest('max_age must be a number of seconds');
  return { prompt, maxAge: Number(p.max_age) };
}
