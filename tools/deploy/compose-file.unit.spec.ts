import { ComposeValidationError, parseComposeFile, readComposeFile } from './compose-file';
import { interpolateString } from './compose-interpolation';

const BASE_DIR = '/srv/project';
const read = (text: string, env: Record<string, string> = {}) => parseComposeFile(text, { env, baseDir: BASE_DIR });

describe('compose file validation (Compose Specification schema)', () => {
  it("accepts the repository's docker-compose.yml", () => {
    expect(Object.keys(readComposeFile('docker-compose.yml').services)).toContain('gateway');
  });

  it('refuses an unknown key, naming it and where it is', () => {
    expect(() => read('services:\n  web:\n    image: nginx\n    imagee: nginx\n')).toThrow(ComposeValidationError);
    expect(() => read('services:\n  web:\n    image: nginx\n    imagee: nginx\n')).toThrow('/services/web must NOT have additional properties ("imagee")');
    expect(() => read('services:\n  web:\n    image: nginx\nservice:\n  db: {}\n')).toThrow('/ must NOT have additional properties ("service")');
  });

  it('refuses a value of the wrong type', () => {
    expect(() => read('services:\n  web:\n    image: nginx\n    cap_add: SETUID\n')).toThrow('/services/web/cap_add must be array');
    expect(() => read('services:\n  web:\n    image: nginx\n    restart: 5\n')).toThrow('/services/web/restart must be string');
    expect(() => read('services:\n  web:\n    image: nginx\n    depends_on: db\n')).toThrow(ComposeValidationError);
  });

  it('accepts extension fields (x-) at the top level', () => {
    expect(read('x-env: &env\n  A: "1"\nservices:\n  web:\n    image: nginx\n    environment: *env\n').services.web.environment).toEqual({ A: '1' });
  });
});

describe('compose file reading', () => {
  it('resolves merge keys, the mapping’s own keys winning', () => {
    const compose = read(
      [
        'x-app: &app',
        '  restart: unless-stopped',
        '  user: "1000"',
        'services:',
        '  web:',
        '    <<: *app',
        '    image: nginx',
        '    user: "0:0"',
      ].join('\n'),
    );
    expect(compose.services.web).toEqual({ restart: 'unless-stopped', user: '0:0', image: 'nginx' });
  });

  it('interpolates values (never keys) from the given environment only', () => {
    const compose = read(
      [
        'services:',
        '  web:',
        '    image: ${IMAGE:-nginx}',
        '    environment:',
        '      ${KEY}: kept',
        '      LEVEL: ${LOG_LEVEL:-info}',
        '      EMPTY: ${UNSET:-}',
        '      PORT: 8080',
        '      FROM_ENV: ~',
      ].join('\n'),
      { FROM_ENV: 'yes' },
    );
    expect(compose.services.web.image).toBe('nginx');
    expect(compose.services.web.environment).toEqual({ '${KEY}': 'kept', LEVEL: 'info', EMPTY: '', PORT: '8080', FROM_ENV: 'yes' });
  });

  it('expands the short forms the deployment tests read to the long ones', () => {
    const compose = read(
      [
        'services:',
        '  web:',
        '    build: ./web',
        '    ports: ["8081", "8080:80", "127.0.0.1:9000:90/udp"]',
        '    environment: ["A=1=2", "B"]',
        '    depends_on: [db]',
        '  db:',
        '    image: postgres',
      ].join('\n'),
      { B: 'from env' },
    );
    const web = compose.services.web;
    expect(web.build).toEqual({ context: '/srv/project/web', dockerfile: 'Dockerfile' });
    expect(web.ports).toEqual([
      { target: 8081 },
      { target: 80, published: '8080' },
      { target: 90, published: '9000', host_ip: '127.0.0.1', protocol: 'udp' },
    ]);
    expect(web.environment).toEqual({ A: '1=2', B: 'from env' });
    expect(web.depends_on).toEqual({ db: { condition: 'service_started' } });
  });
});

describe('compose interpolation', () => {
  const env = { SET: 'value', EMPTY: '', OTHER: 'other' };

  it.each([
    ['plain text', 'plain text'],
    ['$SET and ${SET}', 'value and value'],
    ['${UNSET}|$UNSET|', '||'],
    ['${EMPTY:-default}|${EMPTY-default}|${UNSET-default}', 'default||default'],
    ['${SET:+alt}|${EMPTY:+alt}|${EMPTY+alt}|${UNSET+alt}', 'alt||alt|'],
    ['${UNSET:-${OTHER}}|${UNSET:-${ALSO_UNSET:-deep}}', 'other|deep'],
    ['$$SET costs $$5, 100$ and $-', '$SET costs $5, 100$ and $-'],
  ])('%s', (text, expected) => {
    expect(interpolateString(text, env)).toBe(expected);
  });

  it('fails on a required variable that is missing, with its message', () => {
    expect(() => interpolateString('${UNSET:?set UNSET first}', env)).toThrow('required variable UNSET is missing a value: set UNSET first');
    expect(() => interpolateString('${EMPTY:?empty}', env)).toThrow('required variable EMPTY');
    expect(interpolateString('${EMPTY?unset only}', env)).toBe('');
  });

  it('fails on a malformed reference', () => {
    expect(() => interpolateString('${SET', env)).toThrow('unclosed');
    expect(() => interpolateString('${1A}', env)).toThrow('invalid interpolation format');
  });
});
