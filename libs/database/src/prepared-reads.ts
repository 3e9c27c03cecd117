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
    // TypeORM's Postgres driver keeps its pg.Pool as `master` (the only pool without replication).
    const pool = (dataSource.driver as unknown as { master?: pg.Pool }).master;
    if (pool === undefined) throw new Error('PreparedReads needs an initialized PostgreSQL data source');
    this.pool = pool;
  }

  async rows<Row extends pg.QueryResultRow>(name: string, text: string, values: unknown[]): Promise<Row[]> {
    const result = await this.pool.query<Row>({ name, text, values });
    return result.rows;
  }
}
