// Pushes lines to svclog through one real JavaScript log shipper, then exits once they are sent.
// Usage: node ship.js '{"client": "...", "url": "http://...", "tenant": "...", "run": "...", "lines": [...]}'
// Prints one JSON line: {"client", "contentType"} (what the shipper sent), or exits 1 with the error.
'use strict'

const config = JSON.parse(process.argv[2])
const headers = { 'X-Scope-OrgID': config.tenant }
const labels = { app: config.client, run: config.run }

async function winstonLoki () {
  const winston = require('winston')
  const LokiTransport = require('winston-loki')
  const errors = []
  // batching with a long interval: every line goes in the final push on close(), in log order
  const transport = new LokiTransport({
    host: config.url, headers, labels, interval: 60, json: false, gracefulShutdown: false,
    onConnectionError: (err) => errors.push(err)
  })
  const logger = winston.createLogger({ transports: [transport] })
  for (const line of config.lines) logger.info(line)
  await new Promise((resolve) => setImmediate(resolve)) // let winston hand the records to the transport
  await transport.close()
  if (errors.length) throw errors[0]
  return transport.batcher.contentType
}

async function pinoLoki () {
  const pino = require('pino')
  const transport = pino.transport({
    target: 'pino-loki',
    options: { host: config.url, headers, labels, batching: { interval: 60 }, timeout: 10000 }
  })
  // pino unrefs the worker once it is ready: wait for that, so the ref() below is the last word
  await new Promise((resolve) => transport.once('ready', resolve))
  const logger = pino({ base: null }, transport) // no pid/hostname: the line is level, time and msg
  for (const line of config.lines) logger.info(line)
  // ending the transport runs pino-loki's close() in the worker, which pushes the buffered batch;
  // ref() keeps this process alive until the worker is done and 'close' fires
  await new Promise((resolve, reject) => {
    transport.on('close', resolve)
    transport.on('error', reject)
    transport.ref()
    transport.end()
  })
  return 'application/json'
}

async function openTelemetry (format) {
  const { LoggerProvider, BatchLogRecordProcessor } = require('@opentelemetry/sdk-logs')
  const { resourceFromAttributes } = require('@opentelemetry/resources')
  const { OTLPLogExporter } = require(format === 'json'
    ? '@opentelemetry/exporter-logs-otlp-http' : '@opentelemetry/exporter-logs-otlp-proto')
  const exporter = new OTLPLogExporter({ url: config.url + '/otlp/v1/logs', headers, timeoutMillis: 10000 })
  const results = []
  const realExport = exporter.export.bind(exporter)
  exporter.export = (records, done) => realExport(records, (result) => { results.push(result); done(result) })
  // one batch processor: the records leave in one export, in emit order
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': `${config.client}-${config.run}` }),
    processors: [new BatchLogRecordProcessor({ exporter, scheduledDelayMillis: 60000 })]
  })
  const logger = provider.getLogger('svclog-e2e')
  for (const line of config.lines) logger.emit({ body: line, severityText: 'INFO', attributes: { run: config.run } })
  await provider.shutdown()
  const failed = results.find((r) => r.code !== 0)
  if (failed || !results.length) throw failed ? failed.error : new Error('nothing was exported')
  return format === 'json' ? 'application/json' : 'application/x-protobuf'
}

const clients = {
  'winston-loki': winstonLoki,
  'pino-loki': pinoLoki,
  'otel-json': () => openTelemetry('json'),
  'otel-proto': () => openTelemetry('proto')
}

let finished = false
process.on('exit', (code) => { // an emptied event loop must not pass for a finished send
  if (!finished && code === 0) {
    process.stderr.write(`${config.client}: exited before the lines were sent\n`)
    process.exitCode = 1
  }
})
clients[config.client]().then(
  (contentType) => {
    finished = true
    process.stdout.write(JSON.stringify({ client: config.client, contentType }) + '\n')
  },
  (err) => { process.stderr.write(`${config.client}: ${err && err.stack ? err.stack : err}\n`); process.exit(1) }
)
