import { hrefOf, internRoute, routeOf } from './routes';

describe('console routes', () => {
  it('reads every page from its path and writes it back', () => {
    for (const route of [
      { page: 'interns' } as const,
      { page: 'webhooks' } as const,
      { page: 'analytics' } as const,
      internRoute('0b7c2d4e-0000-4000-8000-000000000001'),
      internRoute('0b7c2d4e-0000-4000-8000-000000000001', 'files'),
      internRoute('0b7c2d4e-0000-4000-8000-000000000001', 'runs', 'ab12'),
    ]) {
      expect(routeOf(hrefOf(route))).toEqual(route);
    }
  });

  it('has no dot in the last segment of any page path, so the gateway answers index.html for each on a reload', () => {
    const id = '0b7c2d4e-0000-4000-8000-000000000001';
    const pages = [{ page: 'interns' } as const, { page: 'webhooks' } as const, internRoute(id, 'vault'), internRoute(id, 'runs', id)];
    for (const route of pages) expect(hrefOf(route).split('/').at(-1)).not.toContain('.');
  });

  it('answers not-found for an unknown page and the interns list for the root', () => {
    expect(routeOf('/console/')).toEqual({ page: 'interns' });
    expect(routeOf('/console/nope')).toEqual({ page: 'not-found' });
    expect(routeOf('/console/interns/x/unknown-tab')).toEqual({ page: 'not-found' });
  });
});
