/**
 * `run` around leadership, in-process against the sandbox: the standby queues nothing, shutdown
 * is bounded inside the pod's termination grace period, and /healthz notices wedged informers.
 */
import pino from 'pino'
import t from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { startOperator, type Operator, type RunOptions } from '../operator/cli/run.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { captureIO } from './support/io.ts'
import { clientFor, eventually, runOptions as base } from './support/operator.ts'
import { stallingProxy } from './support/stalling-proxy.ts'
import { kubeconfigFor } from './fixtures/reliability/support.ts'

const LEASE = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: 'default', name: 'memcached-operator-leader' }

const elect: Partial<RunOptions> = { leaderElect: true, leaderElectionNamespace: 'default', leaderElectLeaseDuration: '3s', leaderElectRenewDeadline: '2s', leaderElectRetryPeriod: '200ms' }

const mc = (name: string): KubeObject => ({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name, namespace: 'default' }, spec: { size: 1 } })

/** A sample of the operator's metrics, e.g. `workqueue_adds_total{name="memcached"}`. */
async function metric(op: Operator, sample: string): Promise<number> {
  const body = await (await fetch(`http://${op.endpoints.metricsAddress}/metrics`)).text()
  const line = body.split('\n').find((l) => l.startsWith(`${sample} `))
  return line === undefined ? NaN : Number(line.slice(sample.length + 1))
}

t.test('the standby builds its caches but queues nothing; once elected it queues every Memcached once (controller-runtime starts controllers when elected)', async (t) => {
  const sandbox = await startSandbox({ podReadyDelayMs: 10, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  const a = await startOperator({ ...base(sandbox.kubeconfigPath), ...elect }, captureIO(), pino({ level: 'silent' }))
  t.teardown(() => a.stop())
  await eventually('a to lead', async () => a.elector?.isLeader() || undefined)
  const b = await startOperator({ ...base(sandbox.kubeconfigPath), ...elect }, captureIO(), pino({ level: 'silent' }))
  t.teardown(() => b.stop())
  for (let i = 0; i < 5; i++) await user.create(mc(`standby-${i}`))
  await eventually('the leader to reconcile all five', async () => ((await metric(a, 'controller_runtime_reconcile_total{controller="memcached",result="success"}')) >= 5 ? true : undefined))
  await eventually('the standby to cache all five', async () => (b.controller.hasSynced() && (await user.list({ apiVersion: 'apps/v1', kind: 'Deployment' }, { namespace: 'default' })).items.length === 5) || undefined)
  t.notOk(b.elector?.isLeader(), 'b is the standby')
  t.equal(await metric(b, 'workqueue_depth{name="memcached"}'), 0, 'the standby\'s queue is empty')
  t.equal(await metric(b, 'workqueue_adds_total{name="memcached"}'), 0, 'nothing was ever queued on the standby')

  await a.stop()
  await eventually('b to lead', async () => b.elector?.isLeader() || undefined)
  await eventually('b to reconcile every Memcached', async () => ((await metric(b, 'controller_runtime_reconcile_total{controller="memcached",result="success"}')) >= 5 ? true : undefined))
  t.ok((await metric(b, 'workqueue_adds_total{name="memcached"}')) >= 5, 'on election every Memcached was queued')
})

t.test('shutdown aborts in-flight reconciles after the graceful shutdown timeout, then releases the Lease, within the pod\'s grace period', async (t) => {
  const sandbox = await startSandbox({ podReadyDelayMs: 10, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  const proxy = await stallingProxy(sandbox.url, 'op')
  t.teardown(() => proxy.close())
  const op = await startOperator({ ...base(kubeconfigFor(sandbox.kubeconfigPath, proxy.url)), ...elect, gracefulShutdownTimeout: '1s' }, captureIO(), pino({ level: 'silent' }))
  await eventually('to lead', async () => op.elector?.isLeader() || undefined)
  // Every apply of a Deployment hangs, far longer than the client's 30 s request timeout.
  proxy.hold((method, path) => method === 'PATCH' && path.includes('/deployments/'))
  await user.create(mc('stuck'))
  await eventually('a reconcile to be in flight (its ConfigMap or Service applied, the Deployment hanging)', async () => (sandbox.requests.log().some((r) => r.verb === 'patch' && r.userAgent?.endsWith('(op)')) ? true : undefined))
  // The kubelet's stand-in: SIGKILL after a grace period shorter than one request timeout.
  let killed: NodeJS.Timeout | undefined
  const outcome = await Promise.race([op.stop().then(() => 'stopped'), new Promise<string>((r) => (killed = setTimeout(() => r('killed'), 10_000)))])
  clearTimeout(killed)
  t.equal(outcome, 'stopped', 'the drain ended by itself before the grace period')
  const lease = await user.get(LEASE)
  t.equal((lease.spec as { holderIdentity?: string }).holderIdentity, '', 'the Lease was released')
})

t.test('/healthz fails when the informers are wedged (no list, event, bookmark or watch restart for the threshold); /readyz still says synced', async (t) => {
  // A quiet cluster sends no bookmark on a type nobody writes, as a real server: what shows such
  // an informer alive is its watch, ended by the server at its timeout and resumed (here every
  // second; 5–10 minutes in production, inside the 15-minute threshold).
  const sandbox = await startSandbox({ podReadyDelayMs: 10, bookmarkIntervalMs: 200, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const proxy = await stallingProxy(sandbox.url, 'op')
  t.teardown(() => proxy.close())
  const op = await startOperator({ ...base(kubeconfigFor(sandbox.kubeconfigPath, proxy.url)), informerStallMs: 3_000, watchTimeoutSeconds: 1, gracefulShutdownTimeout: '1s' }, captureIO(), pino({ level: 'silent' }))
  // A request sent while the connection was frozen never gets its answer: the teardown's stop
  // would wait the default 20 s drain for it, which is not what this test is about.
  t.teardown(async () => {
    proxy.freeze(false)
    await op.stop()
  })
  const probe = async (path: string): Promise<{ status: number; body: string }> => {
    const res = await fetch(`http://${op.endpoints.healthProbeAddress}${path}`)
    return { status: res.status, body: await res.text() }
  }
  // Longer than the threshold, which is three watch timeouts long: a test process starved of CPU
  // for a moment does not pass for wedged informers.
  await new Promise((r) => setTimeout(r, 3_500))
  t.equal((await probe('/healthz')).status, 200, 'alive in a quiet cluster: watches end at their timeout and are resumed')
  // The connection goes dead: open watches deliver nothing more, and nothing new gets through.
  proxy.freeze(true)
  const failed = await eventually('/healthz to fail', async () => {
    const r = await probe('/healthz')
    return r.status === 500 ? r : undefined
  })
  t.match(failed.body, /\[-\]informers failed/)
  t.equal((await probe('/readyz')).status, 200, 'readiness still means synced caches')
  proxy.freeze(false)
  await eventually('/healthz to pass again', async () => ((await probe('/healthz')).status === 200 ? true : undefined))
})
