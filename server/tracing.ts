// OpenTelemetry tracing (docs/architecture.md#tracing), only when OTEL_EXPORTER_OTLP_ENDPOINT is set: a span per HTTP
// request named after its route, a span per GraphQL operation, and a span per database statement, sent over OTLP/HTTP.
// Without the variable nothing of OpenTelemetry is loaded here: every import below is a type or a dynamic import.
import { createRequire } from 'node:module';
import type { DocumentNode, ExecutionArgs, ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';

export interface Tracing {
  /** `trace_id` and `span_id` of the span in progress, for pino's mixin: every log line written in a request carries them. */
  logFields: () => { trace_id?: string; span_id?: string };
  /** Names the request's server span after its route's template (`POST /oauth/token`), never the raw path. */
  nameRequest(route: string): void;
  /** The yoga plugin that wraps each GraphQL operation's execution in a span. */
  graphqlPlugin: Plugin;
  /** Runs an in-process operation (the REST shims' and the portal's, server/graphql/executor.ts) in the same span. */
  traceOperation(document: DocumentNode, execute: () => Promise<ExecutionResult>): Promise<ExecutionResult>;
  /** Sends the spans still buffered; called once the server has stopped. */
  shutdown(): Promise<void>;
}

/** Health probes and scrapes would be most of the traces and tell nothing. */
const UNTRACED = /^\/(healthz|readyz|metrics)(\?|$)/;

/**
 * Starts the SDK when OTEL_EXPORTER_OTLP_ENDPOINT is set; does nothing otherwise. Must run before `pg` is loaded: the
 * pg instrumentation patches `pg/lib/client.js` as node-postgres requires it. The OpenTelemetry packages read their
 * variables from the environment themselves: the exporter OTEL_EXPORTER_OTLP_* (the endpoint, headers, a traces-only
 * endpoint, certificates), the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
 */
export async function startTracing(): Promise<Tracing | undefined> {
  if (!process.env.OTEL_EXPORTER_OTLP_ENDPOINT) return undefined;
  const [
    api,
    core,
    { AsyncLocalStorageContextManager },
    resources,
    { TracerProvider, BatchSpanProcessor },
    { OTLPTraceExporter },
    { registerInstrumentations },
    { HttpInstrumentation },
    { PgInstrumentation },
    { getOperationAST },
  ] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/instrumentation'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-pg'),
    import('graphql'),
  ]);

  // OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES over our default name.
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': 'tessera' }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new TracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
  });
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  api.propagation.setGlobalPropagator(
    new core.CompositePropagator({
      propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()],
    }),
  );
  api.trace.setGlobalTracerProvider(provider);

  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED.test(req.url ?? ''),
        requireParentforOutgoingSpans: true,
      }),
      // Statements of a request only: the worker's polling would otherwise be a trace every few seconds. No values
      // (enhancedDatabaseReporting): they hold codes, tokens and hashes. A prepared statement's span would be named
      // by its hash (schema/db.ts statementName): it is named by its verb instead.
      new PgInstrumentation({
        requireParentSpan: true,
        requestHook: (span, { query, connection }) => {
          if (!query.name) return;
          const [verb = ''] = query.text.trimStart().split(/\s/, 1);
          span.updateName(`pg.query:${verb.toUpperCase()} ${connection.database ?? ''}`.trimEnd());
        },
      }),
    ],
  });
  // The hooks above see `require` calls. The server imports node:http as an ES module, which never passes through
  // them: requiring it here patches the one http.Server prototype both share. (pg is CommonJS and requires its
  // client file, which the hooks see.)
  createRequire(import.meta.url)('node:http');

  const tracer = api.trace.getTracer('tessera');
  /** An operation's span, under the request's: the context to execute in, and its end with the errors it answered. */
  const operationSpan = (document: DocumentNode, operationName?: string | null) => {
    const operation = getOperationAST(document, operationName);
    const type = operation?.operation ?? 'query';
    const name = operation?.name?.value;
    // Semantic conventions: "{type} {name}"; the document itself is left out (its literals may be secrets).
    const span = tracer.startSpan(name ? `${type} ${name}` : type, {
      attributes: { 'graphql.operation.type': type, ...(name ? { 'graphql.operation.name': name } : {}) },
    });
    return {
      context: api.trace.setSpan(api.context.active(), span),
      end(errors?: readonly { message: string }[]) {
        const [first] = errors ?? [];
        if (first) span.setStatus({ code: api.SpanStatusCode.ERROR, message: first.message });
        span.end();
      },
    };
  };
  const graphqlPlugin: Plugin = {
    onExecute({ args, executeFn, setExecuteFn }) {
      // envelop types the arguments and the result of execute as `any`, to depend on no version of graphql: these are
      // graphql's, and the result is passed on unread.
      const { document, operationName } = args as Pick<ExecutionArgs, 'document' | 'operationName'>;
      const span = operationSpan(document, operationName);
      setExecuteFn((executeArgs): unknown => api.context.with(span.context, (): unknown => executeFn(executeArgs)));
      return {
        onExecuteDone({ result }) {
          span.end('errors' in result ? result.errors : undefined);
        },
      };
    },
  };
  const traceOperation = async (document: DocumentNode, execute: () => Promise<ExecutionResult>) => {
    const span = operationSpan(document);
    try {
      const result = await api.context.with(span.context, execute);
      span.end(result.errors);
      return result;
    } catch (error) {
      span.end([{ message: error instanceof Error ? error.message : String(error) }]);
      throw error;
    }
  };

  return {
    logFields() {
      const span = api.trace.getActiveSpan();
      if (!span) return {};
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
    nameRequest(route) {
      const metadata = core.getRPCMetadata(api.context.active());
      if (metadata?.type === core.RPCType.HTTP) metadata.route = route;
    },
    graphqlPlugin,
    traceOperation,
    shutdown: () => provider.shutdown(),
  };
}
