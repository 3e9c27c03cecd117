/**
 * No import cycle among the TypeScript files of apps/ and libs/ (type-only imports included: a cycle of types
 * still ties two modules into one). Nx's boundary rule sees cycles between projects only, so this walks the
 * relative imports inside each project; aliases (`@interns/...`) are project edges and are left to Nx.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

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

  it('has none in apps/ and libs/', () => {
    const graph = importGraph(['apps', 'libs']);
    // The walk must really see the imports: a graph without edges would pass vacuously.
    expect([...graph.values()].filter((targets) => targets.length > 0).length).toBeGreaterThan(100);
    expect(cyclesOf(graph).map((cycle) => cycle.map((file) => relative(ROOT, file)).join(' -> '))).toEqual([]);
  });
});
