/**
 * The README's configuration reference names every environment variable the services read, so an operator
 * never meets a setting only the code knows about.
 */
import { readFileSync } from 'node:fs';
import { configEnvNames } from './app-facts';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The rows of the table under `## Configuration`: every backticked name in their first cell. */
function documentedNames(): Set<string> {
  const section = readme.split(/^## Configuration$/m)[1]?.split(/^## /m)[0] ?? '';
  const names = new Set<string>();
  for (const row of section.split('\n').filter((line) => line.startsWith('| `'))) {
    const firstCell = row.split('|')[1] ?? '';
    for (const match of firstCell.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) names.add(match[1]);
  }
  return names;
}

describe('README configuration reference', () => {
  it('has a table under "## Configuration"', () => {
    expect(documentedNames().size).toBeGreaterThan(10);
  });

  it('documents every variable the services read', () => {
    const documented = documentedNames();
    const undocumented = [...configEnvNames()].filter((name) => !documented.has(name));
    expect(undocumented).toEqual([]);
  });

  it('documents no variable the services do not read, besides the OpenTelemetry exporter endpoints', () => {
    // The exporter reads its endpoint variables itself, outside loadConfig.
    const readByExporter = new Set(['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
    const read = configEnvNames();
    const unknown = [...documentedNames()].filter((name) => !read.has(name) && !readByExporter.has(name));
    expect(unknown).toEqual([]);
  });
});
