export * from './health.module';
export * from './health.options';
export * from './health.indicators';
export * from './nats-readiness';
export * from './metrics';
export * from './service-bootstrap';
export * from './ping.nats.controller';
