// The tree's existing style; of widths 120, 140, 150 and 160, 160 reformats the fewest files and lines.
/** @type {import('prettier').Config} */
export default {
  printWidth: 160,
  singleQuote: true,
  trailingComma: 'all',
  // docker-compose.yml quotes its strings with double quotes, as Compose's documentation does.
  overrides: [{ files: ['*.yml', '*.yaml'], options: { singleQuote: false } }],
};
