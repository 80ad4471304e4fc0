/**
 * In-request retries held to client-go's REST client (k8s.io/client-go/rest/with_retry.go:
 * `checkWait`, `IsNextRetry`, maxRetries 10; rest/request.go `isErrRetryableFunc`): a 429 or a 5xx
 * with an integer Retry-After is sent again after that wait, any method; a reset GET is sent again;
 * nothing else is; the wait ends with the request's signal. Every attempt is counted
 * (`rest_client_requests_total`) and waits for the client's rate limiter.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { KubeConfig } from '@kubernetes/client-node'
import t, { type Test } from 'tap'
import { ApiError, KubeClient, type KubeClientOptions } from '../operator/controller/client.ts'
import { FakeClock } from '../operator/controller/clock.ts'
import { createMetrics } from '../operator/controller/metrics.ts'
import { checkWait, isRetryableError, MAX_RETRIES, withRetry } from '../operator/controller/retry.ts'

const REF = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'c' }
const CM = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' } }

type Answer = { status: number; headers?: Record<string, string> } | 'reset'

/** A fake API server answering the n-th request (0-based) with `script(n)`; it records the requests. */
async function server(t: Test, script: (n: number) => Answer): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = []
  const srv = http.createServer((req, res) => {
    const n = seen.length
    seen.push(`${req.method} ${req.url}`)
    req.resume()
    req.on('end', () => {
      const a = script(n)
      if (a === 'reset') {
        req.socket.resetAndDestroy()
        return
      }
      const ok = a.status < 300
      res.writeHead(a.status, { 'Content-Type': 'application/json', ...a.headers })
      res.end(JSON.stringify(ok ? CM : { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: a.status, reason: a.status === 429 ? 'TooManyRequests' : 'InternalError', message: a.status === 429 ? 'Too many requests, please try again later.' : 'boom' }))
    })
  })
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => {
    srv.close(() => r())
    srv.closeAllConnections()
  }))
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, seen }
}

function clientOf(t: Test, url: string, opts: Partial<KubeClientOptions> = {}): KubeClient {
  const kc = new KubeConfig()
  kc.loadFromOptions({ clusters: [{ name: 'c', server: url }], users: [{ name: 'u', token: 't' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' })
  const c = new KubeClient(kc, { userAgent: 'retry-test', fieldManager: 'retry-test', ...opts })
  t.teardown(() => c.close())
  return c
}

const shed = (seconds = '0'): Answer => ({ status: 429, headers: { 'Retry-After': seconds } })

t.test('a 429 with Retry-After is sent again, every attempt counted and rate limited', async (t) => {
  const s = await server(t, (n) => (n < 2 ? shed() : { status: 200 }))
  const counted: string[] = []
  let waits = 0
  const c = clientOf(t, s.url, { onRequestResult: (r) => counted.push(`${r.code} ${r.method} ${r.host}`), rateLimiter: { wait: async () => ((waits += 1), 0) } })
  t.equal((await c.get(REF)).metadata.name, 'c')
  t.equal(s.seen.length, 3)
  const host = new URL(s.url).host
  t.same(counted, [`429 GET ${host}`, `429 GET ${host}`, `200 GET ${host}`])
  t.equal(waits, 3, 'the rate limiter is asked before each attempt, retries included')
})

t.test('writes are retried on Retry-After too (the server did not carry them out)', async (t) => {
  const s = await server(t, (n) => (n === 0 ? shed() : n === 1 ? { status: 503, headers: { 'Retry-After': '0' } } : { status: 200 }))
  const c = clientOf(t, s.url)
  await c.apply(CM, { force: true })
  t.same(s.seen.map((r) => r.split(' ')[0]), ['PATCH', 'PATCH', 'PATCH'])
})

t.test('what client-go does not retry is answered at once', async (t) => {
  for (const [what, answer] of [
    ['a 500 without Retry-After', { status: 500 }],
    ['a 429 without Retry-After (checkWait needs the header)', { status: 429 }],
    ['a Retry-After that is a date', { status: 429, headers: { 'Retry-After': new Date(Date.now() + 1000).toUTCString() } }],
    ['a 404', { status: 404, headers: { 'Retry-After': '0' } }],
  ] as const) {
    const s = await server(t, () => answer)
    const err = await clientOf(t, s.url).get(REF).catch((e: unknown) => e)
    t.ok(err instanceof ApiError && err.status === answer.status, what)
    t.equal(s.seen.length, 1, `${what}: sent once`)
  }
})

t.test('at most 10 retries; the last answer is the error, with its Retry-After', async (t) => {
  const s = await server(t, () => shed())
  const err = await clientOf(t, s.url).get(REF).catch((e: unknown) => e)
  t.equal(s.seen.length, 1 + MAX_RETRIES)
  t.equal(MAX_RETRIES, 10)
  t.ok(err instanceof ApiError && err.status === 429 && err.retryAfterSeconds === 0)
  const once = await server(t, () => shed())
  await t.rejects(clientOf(t, once.url, { maxRetries: 0 }).get(REF), /Too many requests/)
  t.equal(once.seen.length, 1, 'maxRetries 0: no retry')
})

t.test('the wait for Retry-After ends with the request\'s signal, and nothing more is sent', async (t) => {
  const s = await server(t, () => shed('3600'))
  const ac = new AbortController()
  const c = clientOf(t, s.url)
  const pending = c.get(REF, { signal: ac.signal })
  while (s.seen.length === 0) await new Promise((r) => setTimeout(r, 5))
  await new Promise((r) => setTimeout(r, 20))
  ac.abort()
  await t.rejects(pending, /GET \/api\/v1\/namespaces\/default\/configmaps\/c: aborted/)
  t.equal(s.seen.length, 1, 'waiting an hour, not retrying at once')
  // The shared signal of a process (leadership lost) ends a write's wait the same way.
  const work = new AbortController()
  const w = clientOf(t, s.url, { requestSignal: () => work.signal })
  const write = w.apply(CM, { force: true })
  while (s.seen.length === 1) await new Promise((r) => setTimeout(r, 5))
  work.abort()
  await t.rejects(write, /PATCH .*: aborted/)
  t.equal(s.seen.length, 2)
})

t.test('Retry-After is waited for as given, on the clock', async (t) => {
  const clock = new FakeClock()
  let attempts = 0
  const done = withRetry(async () => ((attempts += 1), attempts < 3 ? { status: 429, headers: { 'retry-after': '5' } } : { status: 200, headers: {} }), { method: 'GET', clock })
  await new Promise((r) => setImmediate(r))
  t.equal(attempts, 1)
  clock.advance(4_999)
  await new Promise((r) => setImmediate(r))
  t.equal(attempts, 1, 'not before 5 s')
  clock.advance(1)
  await new Promise((r) => setImmediate(r))
  t.equal(attempts, 2)
  clock.advance(5_000)
  t.equal((await done).status, 200)
  t.equal(attempts, 3)
})

t.test('a GET on a reset connection is sent again; a write is not', async (t) => {
  const s = await server(t, (n) => (n === 0 ? 'reset' : { status: 200 }))
  const counted: string[] = []
  t.equal((await clientOf(t, s.url, { onRequestResult: (r) => counted.push(r.code) }).get(REF)).metadata.name, 'c')
  t.equal(s.seen.length, 2)
  t.same(counted, ['<error>', '200'], 'an attempt without an answer is counted as <error>')
  const w = await server(t, (n) => (n === 0 ? 'reset' : { status: 200 }))
  await t.rejects(clientOf(t, w.url).apply(CM, { force: true }), /ECONNRESET|socket hang up/)
  t.equal(w.seen.length, 1, 'a PATCH the server received may have been carried out: not sent again')
  // The same on a reused keep-alive connection: the PATCH was written, so it is not sent again.
  const reused = await server(t, (n) => (n === 1 ? 'reset' : { status: 200 }))
  const rc = clientOf(t, reused.url)
  await rc.get(REF)
  await t.rejects(rc.apply(CM, { force: true }), /ECONNRESET|socket hang up/)
  t.equal(reused.seen.length, 2)
})

t.test('checkWait and isRetryableError as client-go has them', async (t) => {
  t.equal(checkWait(429, { 'retry-after': '2' }), 2)
  t.equal(checkWait(503, { 'retry-after': ' 7 ' }), 7)
  t.equal(checkWait(500, { 'retry-after': '-3' }), 0, 'a negative wait is no wait')
  t.equal(checkWait(504, {}), undefined)
  t.equal(checkWait(409, { 'retry-after': '1' }), undefined)
  t.equal(checkWait(429, { 'retry-after': '1.5' }), undefined, 'strconv.Atoi: no fractions')
  const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })
  t.ok(isRetryableError('GET', reset))
  t.notOk(isRetryableError('PATCH', reset))
  t.ok(isRetryableError('GET', new Error('socket hang up')))
  t.notOk(isRetryableError('GET', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })))
})

t.test('rest_client_requests_total is client-go\'s series, fed by the client', async (t) => {
  const metrics = createMetrics({ defaultMetrics: false })
  const s = await server(t, (n) => (n === 0 ? shed() : { status: 200 }))
  await clientOf(t, s.url, { onRequestResult: metrics.requestResult }).get(REF)
  const text = await metrics.registry.metrics()
  const host = new URL(s.url).host
  t.match(text, '# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.')
  t.match(text, `rest_client_requests_total{code="429",method="GET",host="${host}"} 1`)
  t.match(text, `rest_client_requests_total{code="200",method="GET",host="${host}"} 1`)
})

t.test('a write on a reused connection the server reset is sent again when none of it was written (Go\'s nothingWrittenError)', async (t) => {
  const seen: string[] = []
  const sockets: import('node:net').Socket[] = []
  const srv = http.createServer((req, res) => {
    seen.push(req.method ?? '')
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json' })
      res.end(JSON.stringify(CM))
    })
  })
  srv.on('connection', (s) => sockets.push(s))
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => {
    srv.close(() => r())
    srv.closeAllConnections()
  }))
  const c = clientOf(t, `http://127.0.0.1:${(srv.address() as AddressInfo).port}`)
  await c.get(REF)
  t.equal(sockets.length, 1)
  // The server resets the idle keep-alive connection; the client writes before it has read the reset.
  sockets[0]!.resetAndDestroy()
  await c.apply(CM, { force: true })
  t.same(seen, ['GET', 'PATCH'], 'the PATCH reached the server once, on a new connection')
  t.equal(sockets.length, 2)
})
