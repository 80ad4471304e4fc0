/** Metrics under controller-runtime's names, fed by the work queue; the HTTP endpoints that serve them and the probes. */
import t from 'tap'
import http from 'node:http'
import { createMetrics } from '../operator/controller/metrics.ts'
import { WorkQueue } from '../operator/controller/queue.ts'
import { FakeClock } from '../operator/controller/clock.ts'
import { startEndpoints, parseBindAddress, BindAddressError } from '../operator/controller/health.ts'

function get(address: string, path: string, method = 'GET'): Promise<{ status: number; body: string; type: string | undefined }> {
  const [host, port] = [address.slice(0, address.lastIndexOf(':')).replace(/^\[|\]$/g, ''), Number(address.slice(address.lastIndexOf(':') + 1))]
  return new Promise((resolve, reject) => {
    const req = http.request({ host: host === '::' || host === '0.0.0.0' ? '127.0.0.1' : host, port, path, method, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), type: res.headers['content-type'] }))
    })
    req.on('error', reject)
    req.end()
  })
}

t.test('reconcile and queue metrics carry controller-runtime names and labels', async (t) => {
  const m = createMetrics({ defaultMetrics: false })
  m.initController('memcached')
  m.observeReconcile('memcached', 'success', 0.02)
  m.observeReconcile('memcached', 'error', 0.3)
  m.observeReconcile('memcached', 'requeue_after', 0.001)
  m.applies.inc({ kind: 'Deployment' })
  m.prunes.inc({ kind: 'PodDisruptionBudget' })
  m.skippedApplies.inc({ kind: 'Service' }, 2)
  m.reconcileFailures.inc({ reason: 'OwnershipConflict' })
  const clock = new FakeClock()
  const q = new WorkQueue({ name: 'memcached', clock, random: () => 0, hooks: m.queueHooks('memcached') })
  q.add('a')
  q.add('a')
  q.add('b')
  clock.advance(1_500)
  const key = await q.get()
  clock.advance(250)
  q.done(key ?? '')
  q.addRateLimited('a')
  const text = await m.registry.metrics()
  const has = (line: string): void => {
    t.ok(text.split('\n').includes(line), line)
  }
  has('controller_runtime_reconcile_total{controller="memcached",result="success"} 1')
  has('controller_runtime_reconcile_total{controller="memcached",result="error"} 1')
  has('controller_runtime_reconcile_total{controller="memcached",result="requeue"} 0')
  has('controller_runtime_reconcile_total{controller="memcached",result="requeue_after"} 1')
  has('controller_runtime_reconcile_errors_total{controller="memcached"} 1')
  has('controller_runtime_reconcile_time_seconds_count{controller="memcached"} 3')
  has('controller_runtime_reconcile_time_seconds_bucket{le="0.025",controller="memcached"} 2')
  has('workqueue_depth{name="memcached"} 1')
  has('workqueue_adds_total{name="memcached"} 2')
  has('workqueue_retries_total{name="memcached"} 1')
  has('workqueue_queue_duration_seconds_sum{name="memcached"} 1.5')
  has('workqueue_queue_duration_seconds_bucket{le="10",name="memcached"} 1')
  has('workqueue_work_duration_seconds_sum{name="memcached"} 0.25')
  has('memcached_operator_applies_total{kind="Deployment"} 1')
  has('memcached_operator_prunes_total{kind="PodDisruptionBudget"} 1')
  has('memcached_operator_skipped_applies_total{kind="Service"} 2')
  has('memcached_operator_reconcile_failures_total{reason="OwnershipConflict"} 1')
  t.notOk(text.includes('process_cpu_user_seconds_total'), 'no process metrics when disabled')
  q.shutdown()
})

t.test('bind addresses are parsed like controller-runtime flags', async (t) => {
  t.equal(parseBindAddress('0'), undefined)
  t.equal(parseBindAddress(''), undefined)
  t.same(parseBindAddress(':8080'), { host: undefined, port: 8080 })
  t.same(parseBindAddress('127.0.0.1:8081'), { host: '127.0.0.1', port: 8081 })
  t.same(parseBindAddress('[::1]:9090'), { host: '::1', port: 9090 })
  t.same(parseBindAddress('8443'), { host: undefined, port: 8443 })
  t.same(parseBindAddress('localhost:0'), { host: 'localhost', port: 0 })
  t.throws(() => parseBindAddress('localhost'), BindAddressError)
  t.throws(() => parseBindAddress(':99999'), BindAddressError)
  t.throws(() => parseBindAddress('a b:80'), BindAddressError)
  t.throws(() => parseBindAddress(':http'), BindAddressError)
})

t.test('health, readiness and metrics on separate addresses', async (t) => {
  const m = createMetrics()
  let synced = false
  const ep = await startEndpoints({
    metricsBindAddress: '127.0.0.1:0',
    healthProbeBindAddress: '127.0.0.1:0',
    registry: m.registry,
    readyz: { informers: () => synced, leader: async () => true },
  })
  t.teardown(() => ep.close())
  const probes = ep.healthProbeAddress ?? ''
  const metrics = ep.metricsAddress ?? ''
  t.not(probes, metrics, 'two servers')
  t.same(await get(probes, '/healthz'), { status: 200, body: 'ok', type: 'text/plain; charset=utf-8' })
  const notReady = await get(probes, '/readyz')
  t.equal(notReady.status, 500)
  t.match(notReady.body, /\[-\]informers failed/)
  t.match(notReady.body, /\[\+\]leader ok/)
  synced = true
  t.equal((await get(probes, '/readyz/')).status, 200)
  t.equal((await get(probes, '/readyz', 'HEAD')).body, '')
  t.equal((await get(probes, '/readyz', 'POST')).status, 405)
  t.equal((await get(probes, '/metrics')).status, 404, 'metrics are not on the probe address')
  t.equal((await get(metrics, '/healthz')).status, 404, 'probes are not on the metrics address')
  const scraped = await get(metrics, '/metrics')
  t.equal(scraped.status, 200)
  t.match(scraped.type, /^text\/plain; version=0\.0\.4/)
  t.match(scraped.body, /process_cpu_user_seconds_total/, 'default process metrics')
  t.match(scraped.body, /controller_runtime_reconcile_total/)
  t.equal((await get(metrics, '/other')).status, 404)
})

t.test('one address serves all endpoints; 0 disables; failing checks and a missing registry', async (t) => {
  const ep = await startEndpoints({
    metricsBindAddress: '127.0.0.1:0',
    healthProbeBindAddress: '0',
    healthz: { throws: () => { throw new Error('boom') } },
  })
  t.teardown(() => ep.close())
  t.equal(ep.healthProbeAddress, undefined)
  t.equal((await get(ep.metricsAddress ?? '', '/metrics')).status, 404, 'no registry, no metrics')
  t.equal((await get(ep.metricsAddress ?? '', '/healthz')).status, 404)

  const m = createMetrics({ defaultMetrics: false })
  const probe = await startEndpoints({ metricsBindAddress: '0', healthProbeBindAddress: '127.0.0.1:0', registry: m.registry, healthz: { throws: () => { throw new Error('boom') } } })
  t.teardown(() => probe.close())
  const failing = await get(probe.healthProbeAddress ?? '', '/healthz')
  t.equal(failing.status, 500)
  t.match(failing.body, /\[-\]throws failed/)
  t.equal((await get(probe.healthProbeAddress ?? '', '/readyz')).status, 200, 'readiness defaults to passing')

  const busy = await startEndpoints({ metricsBindAddress: '127.0.0.1:0', healthProbeBindAddress: '0', registry: m.registry })
  t.teardown(() => busy.close())
  const port = (busy.metricsAddress ?? '').split(':')[1] ?? ''
  // The metrics server starts, the probe server cannot: the start fails and closes the first
  // (a server left open would keep this test process from exiting).
  await t.rejects(startEndpoints({ metricsBindAddress: '127.0.0.1:0', healthProbeBindAddress: `127.0.0.1:${port}` }), /EADDRINUSE/)
  await busy.close()
  await busy.close()
})

t.test('equal addresses share one server', async (t) => {
  const m = createMetrics({ defaultMetrics: false })
  const first = await startEndpoints({ metricsBindAddress: '127.0.0.1:0', healthProbeBindAddress: '0', registry: m.registry })
  const port = (first.metricsAddress ?? '').split(':')[1] ?? ''
  await first.close()
  const ep = await startEndpoints({ metricsBindAddress: `127.0.0.1:${port}`, healthProbeBindAddress: `127.0.0.1:${port}`, registry: m.registry })
  t.teardown(() => ep.close())
  t.equal(ep.metricsAddress, ep.healthProbeAddress)
  t.equal((await get(ep.metricsAddress ?? '', '/metrics')).status, 200)
  t.equal((await get(ep.metricsAddress ?? '', '/healthz')).status, 200)
})
