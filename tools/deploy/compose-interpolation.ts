/**
 * Compose's variable interpolation (Compose Specification, "Interpolation"): `$NAME`, `${NAME}`,
 * `${NAME:-default}`, `${NAME-default}`, `${NAME:?error}`, `${NAME?error}`, `${NAME:+other}`, `${NAME+other}`,
 * nested inside the default, error or other text, and `$$` for a literal `$`. A `$` that starts none of
 * these is kept. Applied to values only, never to keys, as Compose does.
 */
export type ComposeEnvironment = Readonly<Record<string, string | undefined>>;

const NAME = /^[_a-zA-Z][_a-zA-Z0-9]*/;
const BRACED = /^([_a-zA-Z][_a-zA-Z0-9]*)(?:(:?[-?+])([\s\S]*))?$/;

/** The index of the `}` closing a `${` whose body starts at `from`; nested `${...}` count, `$$` does not. */
function closingBrace(text: string, from: number): number {
  let depth = 1;
  for (let index = from; index < text.length; index++) {
    if (text[index] === '$' && (text[index + 1] === '$' || text[index + 1] === '{')) {
      if (text[index + 1] === '{') depth++;
      index++;
    } else if (text[index] === '}' && --depth === 0) {
      return index;
    }
  }
  throw new Error(`unclosed "\${" in "${text}"`);
}

function substitute(expression: string, env: ComposeEnvironment): string {
  const match = BRACED.exec(expression);
  if (match === null) throw new Error(`invalid interpolation format "\${${expression}}"`);
  const [, name, operator, argument = ''] = match;
  const value = env[name];
  // With a colon, an empty value counts as missing; without one, only an unset variable does.
  const missing = operator?.startsWith(':') ? value === undefined || value === '' : value === undefined;
  switch (operator?.slice(-1)) {
    case '-':
      return missing ? interpolateString(argument, env) : (value ?? '');
    case '?':
      if (missing) throw new Error(`required variable ${name} is missing a value: ${interpolateString(argument, env)}`);
      return value ?? '';
    case '+':
      return missing ? '' : interpolateString(argument, env);
    default:
      return value ?? '';
  }
}

export function interpolateString(text: string, env: ComposeEnvironment): string {
  let result = '';
  let index = 0;
  while (index < text.length) {
    const dollar = text.indexOf('$', index);
    if (dollar === -1) return result + text.slice(index);
    result += text.slice(index, dollar);
    const next = text[dollar + 1];
    if (next === '$') {
      result += '$';
      index = dollar + 2;
    } else if (next === '{') {
      const end = closingBrace(text, dollar + 2);
      result += substitute(text.slice(dollar + 2, end), env);
      index = end + 1;
    } else {
      const name = NAME.exec(text.slice(dollar + 1))?.[0];
      result += name === undefined ? '$' : (env[name] ?? '');
      index = dollar + 1 + (name?.length ?? 0);
    }
  }
  return result;
}

/** Every string value of a parsed document, interpolated; keys and other scalars are left as they are. */
export function interpolate(value: unknown, env: ComposeEnvironment): unknown {
  if (typeof value === 'string') return interpolateString(value, env);
  if (Array.isArray(value)) return value.map((item) => interpolate(item, env));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolate(item, env)]));
  }
  return value;
}
