/** The logger: JSON lines, levels from flag or environment, reconcile fields, secrets redacted. */
import t from 'tap'
import { Writable } from 'node:stream'
import { createLogger, reconcileLogger, resolveLevel, LogLevelError, REDACT_PATHS } from '../operator/controller/log.ts'

function capture(): { stream: Writable; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = []
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk.toString('utf8'))
      cb()
    },
  })
  return { stream, lines: () => chunks.join('').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>) }
}

t.test('the level comes from the flag, else LOG_LEVEL, else info', async (t) => {
  t.equal(resolveLevel('DEBUG', { LOG_LEVEL: 'error' }), 'debug')
  t.equal(resolveLevel(undefined, { LOG_LEVEL: 'warn' }), 'warn')
  t.equal(resolveLevel(undefined, {}), 'info')
  t.throws(() => resolveLevel('verbose', {}), LogLevelError)
})

t.test('JSON lines with a string level, an ISO time and the reconcile fields', async (t) => {
  const { stream, lines } = capture()
  const log = createLogger({ level: 'debug', name: 'memcached-operator', destination: stream, base: { version: '0.1.0' } })
  const r = reconcileLogger(log, { controller: 'memcached', key: 'default/cache', reconcileID: 'r-1' })
  r.info({ generation: 2 }, 'reconciling')
  r.debug('details')
  reconcileLogger(log, { controller: 'memcached', key: 'default/other' }).warn('slow')
  log.trace('not at debug')
  const [a, b, c, ...rest] = lines()
  t.same(rest, [])
  t.match(a, { level: 'info', msg: 'reconciling', logger: 'memcached-operator', version: '0.1.0', controller: 'memcached', key: 'default/cache', reconcileID: 'r-1', generation: 2 })
  t.match(a?.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.match(b, { level: 'debug', msg: 'details', reconcileID: 'r-1' })
  t.match(c, { level: 'warn', key: 'default/other' })
  t.match(c?.reconcileID, /^[0-9a-f-]{36}$/, 'a fresh reconcile ID by default')
})

t.test('secrets are redacted at any of the first three levels', async (t) => {
  const { stream, lines } = capture()
  const log = createLogger({ level: 'info', destination: stream })
  log.info({
    token: 't0',
    obj: { kind: 'Secret', data: { password: 'cGFzcw==' }, stringData: { key: 'plain' } },
    request: { headers: { Authorization: 'Bearer abc', accept: 'json' } },
    user: { 'client-key-data': 'KEY', password: 'pw', name: 'ok' },
    deep: { cfg: { token: 't2' } },
  }, 'request')
  const [line] = lines()
  const text = JSON.stringify(line)
  for (const secret of ['t0', 'cGFzcw==', 'plain', 'Bearer abc', 'KEY', 'pw', 't2']) t.notOk(text.includes(secret), `${secret} is not logged`)
  t.match(line, { token: '[REDACTED]', obj: { kind: 'Secret', data: '[REDACTED]', stringData: '[REDACTED]' }, request: { headers: { Authorization: '[REDACTED]', accept: 'json' } }, user: { name: 'ok' } })
  t.ok(REDACT_PATHS.includes('*.data'))
})

t.test('the default logger writes to stdout at the environment level', async (t) => {
  const before = process.env.LOG_LEVEL
  process.env.LOG_LEVEL = 'error'
  t.teardown(() => {
    if (before === undefined) delete process.env.LOG_LEVEL
    else process.env.LOG_LEVEL = before
  })
  const log = createLogger()
  t.equal(log.level, 'error')
})
