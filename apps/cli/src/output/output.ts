/**
 * What a command prints. With `--json` stdout holds only the API's JSON (one document, or one per line for
 * streams) and everything for people goes to stderr; without it, compact lines and tables on stdout.
 */
export interface CliIo {
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
}

export type Column<T> = [header: string, cell: (row: T) => string | number | null | undefined];

export class Output {
  constructor(
    readonly io: CliIo,
    readonly json: boolean,
  ) {}

  /** The command's result: the JSON under `--json`, else what `human` prints. */
  result(value: unknown, human: () => void): void {
    if (this.json) this.jsonLine(value);
    else human();
  }

  /** One JSON document on its own line (a stream under `--json` prints one per event). */
  jsonLine(value: unknown): void {
    this.io.stdout.write(`${JSON.stringify(value)}\n`);
  }

  /** A line for people on stdout (nothing under `--json`). */
  line(text = ''): void {
    if (!this.json) this.io.stdout.write(`${text}\n`);
  }

  /** Raw text for people, as it streams (nothing under `--json`). */
  text(text: string): void {
    if (!this.json) this.io.stdout.write(text);
  }

  /** A remark that is not the result (progress, hints): stderr, so it never mixes into piped output. */
  note(text: string): void {
    this.io.stderr.write(`${text}\n`);
  }

  table<T>(rows: readonly T[], columns: readonly Column<T>[]): void {
    this.line(formatTable(rows, columns));
  }
}

/** Columns padded to their widest cell, two spaces apart, headers first; `-` for a missing value. */
export function formatTable<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = [columns.map(([header]) => header), ...rows.map((row) => columns.map(([, cell]) => cellText(cell(row))))];
  const widths = columns.map((_column, index) => Math.max(...cells.map((line) => line[index].length)));
  return cells.map((line) => line.map((cell, index) => (index === line.length - 1 ? cell : cell.padEnd(widths[index]))).join('  ').trimEnd()).join('\n');
}

function cellText(value: string | number | null | undefined): string {
  if (value === null || value === undefined || value === '') return '-';
  return String(value).replace(/\s+/g, ' ');
}

/** `2030-01-02T03:04:05.678Z` -> `2030-01-02 03:04:05`: a table's time. */
export function shortTime(iso: string | null | undefined): string {
  return iso ? iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, '') : '-';
}
