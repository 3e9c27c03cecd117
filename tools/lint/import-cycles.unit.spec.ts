/**
 * No import cycle among the TypeScript files of apps/ and libs/ (type-only imports included: a cycle of types
 * still ties two modules into one), and no pair of sibling folders importing each other (two folders that need
 * each other are one folder, or a third is missing). Nx's boundary rule sees cycles between projects only, so
 * this walks the relative imports inside each project; aliases (`@interns/...`) are project edges and are left to Nx.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ROOT = process.cwd();
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'coverage']);
/** `import ... from './x'`, `export ... from './x'`, `import('./x')`, `import './x'`. */
const RELATIVE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g;

function typescriptFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return SKIPPED_DIRS.has(name) ? [] : typescriptFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The file a relative specifier names (ESM `.js` suffixes point at `.ts` sources), or null when it is not ours. */
function resolveImport(from: string, specifier: string, known: Set<string>): string | null {
  const base = resolve(dirname(from), specifier).replace(/\.js$/, '');
  for (const candidate of [`${base}.ts`, join(base, 'index.ts'), base]) if (known.has(candidate)) return candidate;
  return null;
}

export function importGraph(roots: string[]): Map<string, string[]> {
  const files = roots.flatMap((root) => typescriptFiles(join(ROOT, root)));
  const known = new Set(files);
  return new Map(
    files.map((file) => {
      const source = readFileSync(file, 'utf8');
      const targets = [...source.matchAll(RELATIVE_IMPORT)].flatMap(([, specifier]) => resolveImport(file, specifier as string, known) ?? []);
      return [file, [...new Set(targets)]];
    }),
  );
}

/** Every cycle's files, each found once from its first file (depth-first search with an on-path set). */
export function cyclesOf(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const onPath = new Set<string>();
  const visit = (file: string): void => {
    path.push(file);
    onPath.add(file);
    for (const next of graph.get(file) ?? []) {
      if (onPath.has(next)) cycles.push(path.slice(path.indexOf(next)));
      else if (!done.has(next)) visit(next);
    }
    path.pop();
    onPath.delete(file);
    done.add(file);
  };
  for (const file of graph.keys()) if (!done.has(file)) visit(file);
  return cycles;
}

/**
 * The two sibling folders an import crosses between, or null when it stays in one folder or goes up or down a
 * branch: a parent composing its folders (a module wiring controllers that import its tokens) is not a pair.
 */
function crossedFolders(from: string, to: string): [string, string] | null {
  const fromParts = dirname(from).split(sep);
  const toParts = dirname(to).split(sep);
  let common = 0;
  while (common < fromParts.length && common < toParts.length && fromParts[common] === toParts[common]) common += 1;
  if (common === fromParts.length || common === toParts.length) return null;
  return [fromParts.slice(0, common + 1).join(sep), toParts.slice(0, common + 1).join(sep)];
}

/** Specs and test helpers reach across folders to set up what they test; the folder rule is about shipped code. */
const TEST_CODE = /\.spec\.ts$|\.fixture\.ts$|(^|\/)testing\//;

/** Two sibling folders whose shipped code imports each other, with one import each way as the evidence. */
export interface FolderPair {
  folders: [string, string];
  evidence: [string, string];
}

export function folderPairsOf(graph: Map<string, string[]>): FolderPair[] {
  const crossings = new Map<string, string>();
  for (const [from, targets] of graph) {
    if (TEST_CODE.test(from)) continue;
    for (const to of targets) {
      if (TEST_CODE.test(to)) continue;
      const folders = crossedFolders(from, to);
      if (folders && !crossings.has(folders.join('\0'))) crossings.set(folders.join('\0'), `${from} -> ${to}`);
    }
  }
  const pairs: FolderPair[] = [];
  for (const [key, evidence] of crossings) {
    const [a, b] = key.split('\0') as [string, string];
    const back = crossings.get(`${b}\0${a}`);
    if (back !== undefined && a < b) pairs.push({ folders: [a, b], evidence: [evidence, back] });
  }
  return pairs;
}

describe('import cycles', () => {
  it('finds a cycle when there is one (the check can fail)', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(cyclesOf(graph)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });

  it('finds two sibling folders importing each other without a file cycle (the check can fail)', () => {
    const graph = new Map([
      [join('app', 'a', 'one.ts'), [join('app', 'b', 'two.ts')]],
      [join('app', 'b', 'three.ts'), [join('app', 'a', 'deep', 'four.ts')]],
      [join('app', 'b', 'two.ts'), []],
      [join('app', 'a', 'deep', 'four.ts'), []],
    ]);
    expect(cyclesOf(graph)).toEqual([]);
    expect(folderPairsOf(graph)).toEqual([
      {
        folders: [join('app', 'a'), join('app', 'b')],
        evidence: [`${join('app', 'a', 'one.ts')} -> ${join('app', 'b', 'two.ts')}`, `${join('app', 'b', 'three.ts')} -> ${join('app', 'a', 'deep', 'four.ts')}`],
      },
    ]);
  });

  it('lets a folder and the folder above it import each other (a parent composes its folders)', () => {
    const graph = new Map([
      [join('app', 'app.module.ts'), [join('app', 'a', 'one.ts')]],
      [join('app', 'a', 'one.ts'), [join('app', 'app.tokens.ts')]],
      [join('app', 'app.tokens.ts'), []],
    ]);
    expect(folderPairsOf(graph)).toEqual([]);
  });

  it('has none in apps/ and libs/', () => {
    const graph = importGraph(['apps', 'libs']);
    // The walk must really see the imports: a graph without edges would pass vacuously.
    expect([...graph.values()].filter((targets) => targets.length > 0).length).toBeGreaterThan(100);
    expect(cyclesOf(graph).map((cycle) => cycle.map((file) => relative(ROOT, file)).join(' -> '))).toEqual([]);
  });

  it('lets no test code make a pair (specs and helpers reach across folders to set up what they test)', () => {
    const graph = new Map([
      [join('app', 'a', 'one.ts'), [join('app', 'b', 'two.ts')]],
      [join('app', 'b', 'two.int.spec.ts'), [join('app', 'a', 'one.ts')]],
      [join('app', 'b', 'two.ts'), []],
    ]);
    expect(folderPairsOf(graph)).toEqual([]);
  });

  it('has no sibling folders importing each other in apps/ and libs/', () => {
    const graph = importGraph(['apps', 'libs']);
    const shown = (evidence: string): string => evidence.split(' -> ').map((file) => relative(ROOT, file)).join(' -> ');
    const pairs = folderPairsOf(graph).map(
      ({ folders, evidence }) => `${folders.map((folder) => relative(ROOT, folder)).join(' <-> ')}: ${evidence.map(shown).join(' | ')}`,
    );
    expect(pairs).toEqual([]);
  });
});
