import pino from 'pino'
import t from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { runCli } from '../operator/cli/program.ts'
import { parseDuration, runOperator, startOperator } from '../operator/cli/run.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { captureIO } from './support/io.ts'
import { clientFor, eventually, runOptions as base } from './support/operator.ts'


t.test('run: probes, metrics, a leader Lease released on stop', async (t) => {
  const sandbox = await startSandbox({ podReadyDelayMs: 10, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const op = await startOperator({ ...base(sandbox.kubeconfigPath), leaderElect: true, leaderElectionNamespace: 'default' }, captureIO(), pino({ level: 'silent' }))
  const probes = `http://${op.endpoints.healthProbeAddress}`
  const metrics = `http://${op.endpoints.metricsAddress}`
  t.equal((await fetch(`${probes}/healthz`)).status, 200)
  t.equal((await fetch(`${probes}/readyz`)).status, 200, 'ready once the caches synced')
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  await user.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'm', namespace: 'default' }, spec: { size: 1 } })
  const text = await eventually('a reconcile in the metrics', async () => {
    const body = await (await fetch(`${metrics}/metrics`)).text()
    return /controller_runtime_reconcile_total\{controller="memcached",result="success"\} [1-9]/.test(body) ? body : undefined
  })
  for (const name of ['controller_runtime_reconcile_errors_total', 'controller_runtime_reconcile_time_seconds_bucket', 'workqueue_depth', 'workqueue_adds_total', 'workqueue_retries_total', 'workqueue_queue_duration_seconds_bucket', 'memcached_operator_applies_total']) {
    t.match(text, new RegExp(`^${name}\\{`, 'm'), name)
  }
  t.match(text, /^memcached_operator_kind_served\{kind="apps\/v1\/Deployment"\} 1$/m, 'discovery found each declared kind served')
  const lease = await user.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: 'default', name: 'memcached-operator-leader' })
  t.ok((lease.spec as { holderIdentity?: string }).holderIdentity, 'held')
  await op.stop()
  const released = await user.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: 'default', name: 'memcached-operator-leader' })
  t.notOk((released.spec as { holderIdentity?: string }).holderIdentity, 'released on shutdown')
  await t.rejects(fetch(`${probes}/healthz`), 'endpoints closed')
})

t.test('run exits 0 on SIGTERM after draining', async (t) => {
  const sandbox = await startSandbox({ installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const controller = new AbortController()
  const running = runOperator({ ...base(sandbox.kubeconfigPath), logLevel: 'silent' }, captureIO(), controller.signal)
  await new Promise((r) => setTimeout(r, 300))
  controller.abort()
  t.equal(await running, 0)
})

t.test('run: flags are checked (exit 2)', async (t) => {
  for (const args of [
    ['run', '--concurrency', '0'],
    ['run', '--resync-period', '10 minutes'],
    ['run', '--log-level', 'loud'],
    ['run', '--metrics-bind-address', 'nonsense'],
    ['run', '--leader-elect-renew-deadline', '20s'],
    ['run', '--graceful-shutdown-timeout', 'soon'],
    ['run', '--max-concurrent-recreations', '-1'],
    ['run', '--max-concurrent-recreations', 'one'],
    ['run', '--recreation-timeout', '10'],
    ['run', '--platform', 'openshift4'],
    ['diff', '--all', '--platform', 'openshift4'],
  ]) {
    const io = captureIO()
    t.equal(await runCli([...args, '--kubeconfig', '/dev/null'], io), 2, `${args.join(' ')}: ${io.err()}`)
  }
  const io = captureIO()
  t.equal(await runCli(['run', '--kubeconfig', '/dev/null'], io), 1, 'an unusable kubeconfig is invalid input')
  t.match(io.err(), /kubeconfig \/dev\/null: /)
})

t.test('durations are Go durations', async (t) => {
  t.equal(parseDuration('10m'), 600_000)
  t.equal(parseDuration('1h30m'), 5_400_000)
  t.equal(parseDuration('500ms'), 500)
  t.equal(parseDuration('1.5s'), 1500)
  t.throws(() => parseDuration('10'))
  t.throws(() => parseDuration('m10'))
})

t.test('run exits 0 on SIGTERM while the caches cannot sync (no CRD installed)', async (t) => {
  const sandbox = await startSandbox()
  t.teardown(() => sandbox.close())
  const controller = new AbortController()
  const running = runOperator({ ...base(sandbox.kubeconfigPath), logLevel: 'silent' }, captureIO(), controller.signal)
  // The Memcached informer keeps retrying its list: the caches never sync.
  await eventually('the operator listing', () => (sandbox.requests.log().some((r) => r.userAgent?.startsWith('memcached-operator/') && r.verb === 'list') ? true : undefined))
  controller.abort()
  const hung = new Promise<string>((r) => setTimeout(() => r('still running'), 10_000).unref())
  t.equal(await Promise.race([running, hung]), 0, 'ends on the signal')
})
