import type pg from 'pg';
import type { DataSource } from 'typeorm';

/**
 * Hot reads as named prepared statements on the data source's own pg pool (same connections, same
 * `statement_timeout`), past TypeORM's per-query runner: each connection parses and plans a statement once,
 * later calls only bind and execute. A name stands for exactly one SQL text; statements with a variable
 * shape need one name per shape.
 */
export class PreparedReads {
  private readonly pool: pg.Pool;

  constructor(dataSource: DataSource) {
    this.pool = poolOf(dataSource);
  }

  async rows<Row extends pg.QueryResultRow>(name: string, text: string, values: unknown[]): Promise<Row[]> {
    const result = await this.pool.query<Row>({ name, text, values });
    return result.rows;
  }
}

/**
 * The pg.Pool TypeORM's postgres driver keeps as `master` (its only pool without replication), for what goes
 * past TypeORM on the same connections (hot reads, the gateway's limiters). Taken once: after the DataSource
 * is destroyed the ended pool rejects every query, which is what we want.
 */
export function poolOf(dataSource: DataSource): pg.Pool {
  if (dataSource.options.type !== 'postgres') throw new Error(`needs a postgres DataSource, got ${dataSource.options.type}`);
  const pool = (dataSource.driver as unknown as { master?: pg.Pool }).master;
  if (pool === undefined) throw new Error('needs an initialized DataSource');
  return pool;
}
