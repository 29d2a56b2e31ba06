export * from './params.ts';
export * from './responses.ts';
