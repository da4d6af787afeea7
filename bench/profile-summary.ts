import { readFileSync } from 'node:fs';

/**
 * `node dist/bench/profile-summary.js <file.cpuprofile> [top]`: where the time went in a
 * V8 CPU profile (`node --cpu-prof`, or `npm run bench -- --cpu-prof`): self time by package
 * (node_modules/<name>, our src/, node internals) and the top functions, in % of samples.
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

const [file, top = '25'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[] };
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfSamples = new Map<number, number>();
for (const id of profile.samples) selfSamples.set(id, (selfSamples.get(id) ?? 0) + 1);
const total = profile.samples.length;

/** node_modules/<package>, src/<dir>, or the runtime. */
function packageOf(url: string): string {
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dependency) return dependency[1];
  const own = /\/dist\/(src\/[^/]+|bench)/.exec(url);
  if (own) return own[1];
  return url.startsWith('node:') ? 'node internals' : url ? url : '(native, GC, idle)';
}

const byPackage = new Map<string, number>();
const byFunction = new Map<string, number>();
for (const [id, count] of selfSamples) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  const name = packageOf(url);
  byPackage.set(name, (byPackage.get(name) ?? 0) + count);
  const key = `${functionName || '(anonymous)'} ${name}:${lineNumber + 1}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + count);
}
const percent = (count: number) => `${((100 * count) / total).toFixed(1).padStart(5)} %`;
const print = (title: string, entries: Map<string, number>, limit: number) => {
  process.stdout.write(`${title}\n`);
  for (const [key, count] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, limit)) process.stdout.write(`  ${percent(count)}  ${key}\n`);
};
print(`Self time by package (${total} samples)`, byPackage, 30);
print('Top functions by self time', byFunction, Number(top));
