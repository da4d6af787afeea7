import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import GithubSlugger from 'github-slugger';
import MarkdownIt from 'markdown-it';

const ROOT = path.resolve(__dirname, '..', '..');
const markdown = new MarkdownIt({ html: true });

/** The documentation: the Markdown files at the top, in bench/, and everywhere under docs/. */
function documentation(): string[] {
  const inFolder = (folder: string, recursive: boolean): string[] =>
    readdirSync(path.join(ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
      const relative = path.join(folder, entry.name);
      if (entry.isDirectory()) return recursive ? inFolder(relative, true) : [];
      return entry.name.endsWith('.md') ? [relative] : [];
    });
  return [...inFolder('.', false), ...inFolder('bench', false), ...inFolder('docs', true)].sort();
}

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

/** The anchors GitHub gives the headings of a Markdown text: each heading's text, slugged, numbered when repeated. */
function anchorsIn(text: string): Set<string> {
  const slugger = new GithubSlugger();
  const tokens = markdown.parse(text, {});
  const headings = tokens.flatMap((token, index) => (token.type === 'heading_open' ? [tokens[index + 1]] : []));
  return new Set(
    headings.map((inline) =>
      slugger.slug(
        (inline.children ?? [])
          .filter((child) => child.type === 'text' || child.type === 'code_inline')
          .map((child) => child.content)
          .join(''),
      ),
    ),
  );
}

/** The targets of the links and images of a Markdown text that are not absolute URLs, as written. */
function relativeLinksIn(text: string): string[] {
  return markdown
    .parse(text, {})
    .flatMap((token) => token.children ?? [])
    .map((token) => (token.type === 'link_open' ? token.attrGet('href') : token.type === 'image' ? token.attrGet('src') : null))
    .filter((target): target is string => target !== null && !/^([a-z][a-z0-9+.-]*:|\/\/)/i.test(target));
}

/** What is wrong with `target`, a link written in `file`; null when it resolves. */
function problemOf(file: string, target: string): string | null {
  const [pathPart, fragment] = target.split('#', 2) as [string, string | undefined];
  const resolved = pathPart === '' ? path.join(ROOT, file) : path.resolve(ROOT, path.dirname(file), decodeURIComponent(pathPart));
  if (path.relative(ROOT, resolved).startsWith('..')) return 'outside the repository';
  if (!existsSync(resolved)) return 'no such file';
  if (fragment === undefined) return null;
  if (statSync(resolved).isDirectory() || !resolved.endsWith('.md')) return 'an anchor into a file that is not Markdown';
  return anchorsIn(read(path.relative(ROOT, resolved))).has(decodeURIComponent(fragment)) ? null : 'no heading has this anchor';
}

/** The files of code that may cite the documentation: sources, the bench, the tests, the Dockerfile and CI. */
function code(): string[] {
  const skipped = new Set(['generated', 'output', 'results', 'node_modules']);
  const inFolder = (folder: string): string[] =>
    readdirSync(path.join(ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
      const relative = path.join(folder, entry.name);
      if (entry.isDirectory()) return skipped.has(entry.name) ? [] : inFolder(relative);
      return entry.name.endsWith('.md') ? [] : [relative];
    });
  // This file's own examples of links aside.
  const own = path.relative(ROOT, __filename);
  return [...inFolder('src'), ...inFolder('bench'), ...inFolder('test'), 'Dockerfile', path.join('.ci', 'run'), path.join('.ci', 'production-install')].filter(
    (file) => file !== own,
  );
}

/**
 * A citation of the documentation in code, as comments and messages write it: a file, then maybe
 * a section in quotes (`docs/security.md "Limits"`, `README "Two commands"`), across a comment's line break.
 */
const CITATION = /\b((?:docs\/[\w/.-]+|bench\/README|CONTRIBUTING)\.md|README)(?:\s*(?:\*|\/\/|#)?\s*\(?"([^"\n]+)")?/g;

/** The headings of a Markdown text, as written (inline code keeps its backticks). */
function headingsIn(text: string): string[] {
  const tokens = markdown.parse(text, {});
  return tokens.flatMap((token, index) => (token.type === 'heading_open' ? [tokens[index + 1].content] : []));
}

describe('the links of the documentation', () => {
  test('when the documentation is listed, then it has the entry, the changelog, the contributing guide, the bench and docs/', () => {
    expect(documentation()).toEqual(
      expect.arrayContaining(['README.md', 'CHANGELOG.md', 'CONTRIBUTING.md', path.join('bench', 'README.md'), path.join('docs', 'README.md')]),
    );
  });

  test('when every relative link and anchor is followed, then each reaches an existing file, and a heading of it', () => {
    const broken = documentation().flatMap((file) =>
      relativeLinksIn(read(file)).flatMap((target) => {
        const problem = problemOf(file, target);
        return problem === null ? [] : [`${file}: ${target} (${problem})`];
      }),
    );
    expect(broken).toEqual([]);
  });

  test('when code cites the documentation, then the file exists, and has a heading of the section it names', () => {
    const broken = code().flatMap((file) =>
      [...read(file).matchAll(CITATION)].flatMap(([, cited, heading]) => {
        const target = cited === 'README' ? 'README.md' : cited;
        if (!existsSync(path.join(ROOT, target))) return [`${file}: ${target} (no such file)`];
        return heading === undefined || headingsIn(read(target)).includes(heading) ? [] : [`${file}: ${target} "${heading}" (no such heading)`];
      }),
    );
    expect(broken).toEqual([]);
  });

  test('when headings are read, then they get the anchors GitHub gives them, and code blocks have none', () => {
    const text =
      '# Pet Store\n\n## Why `ID` and `SafeInt`\n\n### docker compose: two replicas behind a proxy\n\n## Logs\n\n## Logs\n\n```bash\n# a comment\n```\n';
    expect([...anchorsIn(text)]).toEqual(['pet-store', 'why-id-and-safeint', 'docker-compose-two-replicas-behind-a-proxy', 'logs', 'logs-1']);
  });

  test('when links are read, then absolute URLs and links inside code are left out', () => {
    const text = '[a](docs/a.md#b) ![c](c.png) [d](https://example.com) [e](#e) `[f](f.md)`\n\n```md\n[g](g.md)\n```\n';
    expect(relativeLinksIn(text)).toEqual(['docs/a.md#b', 'c.png', '#e']);
  });
});
