/**
 * The operator process SIGKILLed in the middle of reconciling — after 1, 6 and 15 of its writes
 * have reached the API server — and restarted: it converges with no duplicate or orphaned object,
 * and the restarted process makes no write at all for a CR that was already done when the
 * previous one died.
 */
import t from 'tap'
import type { KubeObject } from '../operator/controller/client.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox, type Sandbox } from '../operator/sandbox/index.ts'
import { clientFor } from './support/operator.ts'
import { memcached, notConverged, problems, sleep, snapshot, spawnOperator, waitConverged, type OperatorProcess } from './fixtures/reliability/support.ts'

const WRITES = new Set(['create', 'update', 'patch', 'delete', 'deletecollection'])
const isOperator = (ua: string | undefined) => ua?.startsWith('memcached-operator/') === true

/** The operator's writes in the request log, each as the CR name it is about. */
function operatorWriteNames(sb: Sandbox): string[] {
  return sb.requests
    .log()
    .filter((r) => isOperator(r.userAgent) && WRITES.has(r.verb))
    // Events are named `<cr>.<suffix>`; everything else is named after the CR.
    .map((r) => (r.resource === 'events' ? (r.name ?? '').replace(/\.[^.]*$/, '') : (r.name ?? '')))
}

t.test('SIGKILL mid-reconcile at several points, then restart: converges, nothing duplicated or orphaned, no write for CRs already done', async (t) => {
  const chart = loadChart()
  // Latency stretches each reconcile so that the kill lands inside one.
  const sb = await startSandbox({ podReadyDelayMs: 20, requestLogSize: 100_000, faults: { latencyMs: 15 }, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  t.teardown(() => sb.close())
  const c = clientFor(sb, 'test-user/1', 'test-user')
  t.teardown(() => c.close())
  let proc: OperatorProcess | undefined
  t.teardown(() => proc?.kill())

  // A foreign object with a CR of its name (in its own namespace, apart from the convergence check):
  // no process, killed or not, may ever write it.
  await c.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'foreign' } })
  const other = clientFor(sb, 'someone-else/v1', 'someone-else')
  t.teardown(() => other.close())
  await other.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'taken', namespace: 'foreign', labels: { 'app.kubernetes.io/managed-by': 'memcached-operator' } }, spec: { ports: [{ port: 80 }] } }, { fieldManager: 'someone-else' })
  await c.create(memcached('taken', { size: 2 }, 'foreign'))

  const done = new Set<string>()
  // A first process brings some CRs all the way and is killed idle: those are done.
  for (let i = 0; i < 5; i++) await c.create(memcached(`d-${i}`, { size: 1 + (i % 3) }))
  proc = spawnOperator(sb.kubeconfigPath)
  await waitConverged(c, chart, 30_000)
  await proc.kill('SIGKILL')
  for (let i = 0; i < 5; i++) done.add(`d-${i}`)
  let batch = 0
  for (const killAfter of [1, 6, 15]) {
    for (let i = 0; i < 5; i++) await c.create(memcached(`k${batch}-${i}`, { size: 1 + (i % 3) }))
    batch++
    sb.requests.reset()
    proc = spawnOperator(sb.kubeconfigPath)
    const started = Date.now()
    while (operatorWriteNames(sb).length < killAfter) {
      if (Date.now() - started > 30_000) throw new Error(`the operator made no ${killAfter} writes: ${proc.lines.slice(-5).join('\n')}`)
      await sleep(2)
    }
    await proc.kill('SIGKILL')
    const written = operatorWriteNames(sb)
    t.same(written.filter((n) => done.has(n)), [], `restarted process killed after ${killAfter} writes wrote nothing for CRs already done`)
    t.ok(written.length >= killAfter, `killed mid-reconcile after ${written.length} writes`)
    // What is done now must stay untouched by the next process.
    const { crs, children, pods } = await snapshot(c)
    for (const cr of crs) if (!(await notConverged(c, chart, cr, pods, children))) done.add(cr.metadata.name!)
  }
  t.ok(done.size < 20, `some CRs were left half-done by the kills (${20 - done.size} of 20)`)

  sb.requests.reset()
  proc = spawnOperator(sb.kubeconfigPath)
  const ms = await waitConverged(c, chart, 40_000)
  await sleep(300)
  t.same(await problems(c, chart), [], 'every CR converged: no duplicate, no orphan')
  t.same(operatorWriteNames(sb).filter((n) => done.has(n)), [], `the final process wrote nothing for the ${done.size} CRs already done`)
  const taken = await c.get({ apiVersion: 'v1', kind: 'Service', namespace: 'foreign', name: 'taken' })
  t.notOk(((taken.metadata.managedFields ?? []) as { manager: string }[]).some((m) => m.manager === 'memcached-operator'), 'the foreign Service was never written by our field manager across the kills')
  t.same(sb.requests.log().filter((r) => isOperator(r.userAgent) && WRITES.has(r.verb) && r.namespace === 'foreign' && r.resource !== 'events' && r.subresource !== 'status'), [], 'nor anything else of its CR')
  t.comment(`figures: final convergence after restart ${ms} ms, ${done.size} CRs already done`)
  await proc.kill('SIGTERM')
  t.equal((await proc.exited).code, 0, 'a SIGTERM after convergence exits 0')
})
