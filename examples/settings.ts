import { readFileSync } from 'node:fs';

/**
 * Where the examples send their requests: `API_URL` (default http://127.0.0.1:3000), with `API_KEY`
 * (default: the development key that `npm start` wrote to data/dev-api-key, read from the working directory).
 */
export function settings(): { apiUrl: string; apiKey: string } {
  const apiUrl = (process.env.API_URL ?? 'http://127.0.0.1:3000').replace(/\/$/, '');
  if (process.env.API_KEY) return { apiUrl, apiKey: process.env.API_KEY };
  try {
    return { apiUrl, apiKey: readFileSync('data/dev-api-key', 'utf8').trim() };
  } catch {
    throw new Error('set API_KEY, or run from the folder where `npm start` wrote data/dev-api-key');
  }
}
