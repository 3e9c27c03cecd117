import { loadConfig } from './config';

describe('loadConfig: logging and tracing', () => {
  it('defaults to info logs and no tracing', () => {
    expect(loadConfig({})).toMatchObject({ logLevel: 'info', tracesExporter: 'none', otelServiceName: null, otelBatchDelayMs: 5000 });
  });

  it("reads LOG_LEVEL in pino's names and Nest's (log, verbose), any case", () => {
    expect(loadConfig({ LOG_LEVEL: 'debug' }).logLevel).toBe('debug');
    expect(loadConfig({ LOG_LEVEL: 'WARN' }).logLevel).toBe('warn');
    expect(loadConfig({ LOG_LEVEL: 'log' }).logLevel).toBe('info');
    expect(loadConfig({ LOG_LEVEL: 'verbose' }).logLevel).toBe('trace');
    expect(() => loadConfig({ LOG_LEVEL: 'loud' })).toThrow(/LOG_LEVEL must be one of/);
  });

  it('reads the OpenTelemetry names', () => {
    const config = loadConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SERVICE_NAME: 'interns-gw', OTEL_BSP_SCHEDULE_DELAY: '200' });
    expect(config).toMatchObject({ tracesExporter: 'otlp', otelServiceName: 'interns-gw', otelBatchDelayMs: 200 });
    expect(loadConfig({ OTEL_TRACES_EXPORTER: 'console' }).tracesExporter).toBe('console');
    expect(() => loadConfig({ OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/OTEL_TRACES_EXPORTER must be one of none, otlp, console/);
  });
});
