/**
 * Under faults: many CRs and a seeded stream of random spec changes while the sandbox injects
 * 500/503, 409, 429 with Retry-After, 504 after a write was carried out, latency, dropped watches
 * and 410 on resume. When the faults stop, every CR converges (children equal its current render, status.nodes its pods,
 * observedGeneration its generation), with no unhandled rejection, no duplicate or orphaned
 * object, a bounded number of operator requests per CR, and a foreign object of a CR's name never
 * written by our field manager.
 */
import t from 'tap'
import { ApiError, type KubeClient, type KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { clientFor, startBed } from './support/operator.ts'
import { MC, memcached, problems, randomSpecPatch, seeded, sleep, statusOf, waitConverged } from './fixtures/reliability/support.ts'

const CRS = Number(process.env.RELIABILITY_CRS ?? 40)
const CHURN_MS = Number(process.env.RELIABILITY_CHURN_MS ?? 12_000)
const SEED = Number(process.env.RELIABILITY_SEED ?? 7)
const FAULTS = { errorRate: 0.05, conflictRate: 0.02, throttleRate: 0.01, timeoutRate: 0.01, retryAfterS: 1, latencyMs: 5, watchDropS: 3, expireOnResume: true, seed: SEED }

/**
 * The test's own requests meet the same faults: retried until the server answers. A create
 * answered 504 may have been carried out: its retry's AlreadyExists is the creation's success.
 */
async function persist<T>(fn: () => Promise<T>): Promise<T | undefined> {
  let timedOut = false
  for (let i = 0; ; i++) {
    try {
      return await fn()
    } catch (err) {
      if (timedOut && err instanceof ApiError && err.reason === 'AlreadyExists') return undefined
      timedOut ||= err instanceof ApiError && err.status === 504
      const retriable = err instanceof ApiError && [409, 429, 500, 503, 504].includes(err.status)
      if (!retriable || i > 50) throw err
      await sleep(20)
    }
  }
}

t.test(`${CRS} CRs and random spec changes under injected faults all converge once the faults stop`, async (t) => {
  const unhandled: unknown[] = []
  const onUnhandled = (err: unknown) => unhandled.push(err)
  process.on('unhandledRejection', onUnhandled)
  t.teardown(() => void process.off('unhandledRejection', onUnhandled))

  const chart = loadChart()
  // What is proved here is convergence under faults: no damage budget holds the churn's pod-template
  // changes (operator-budget.test.ts holds it), and a cluster without pods/resize, so that a larger
  // memoryMB rolls its pods as any change does (the sandbox's pods have no memcached to resize).
  const bed = await startBed({ concurrency: 4, budget: { deletes: 0, restarts: 0, windowMs: 600_000 }, sandbox: { requestLogSize: 500_000, podReadyDelayMs: 20, podResize: false } })
  t.teardown(() => bed.stop())
  const c: KubeClient = bed.client
  const rand = seeded(SEED)

  // A foreign Service of a CR's name, in its own namespace so that the convergence check of
  // `default` is not about it; it must never be written by our field manager.
  await c.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'foreign' } })
  const other = clientFor(bed.sandbox, 'someone-else/v1', 'someone-else')
  t.teardown(() => other.close())
  await other.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'taken', namespace: 'foreign', labels: { 'app.kubernetes.io/managed-by': 'memcached-operator' } }, spec: { ports: [{ port: 80 }] } }, { fieldManager: 'someone-else' })

  bed.sandbox.faults.set(FAULTS)
  bed.sandbox.requests.reset()
  const faultStart = Date.now()
  const names = Array.from({ length: CRS }, (_, i) => `f-${i}`)
  for (const n of names) await persist(() => c.create(memcached(n, { size: 1 + Math.floor(rand() * 3) })))
  await persist(() => c.create(memcached('taken', { size: 2 }, 'foreign')))

  let changes = 0
  while (Date.now() - faultStart < CHURN_MS) {
    const name = names[Math.floor(rand() * names.length)]!
    await persist(() => c.patch({ ...MC, namespace: 'default', name }, { spec: randomSpecPatch(rand) }, { type: 'merge' }))
    changes++
    await sleep(25)
  }
  const faultSeconds = (Date.now() - faultStart) / 1000
  const counts = bed.sandbox.requests.counts()
  const operatorRequests = counts.byUserAgent['memcached-operator/test'] ?? 0
  const injected = Object.entries(counts.byCode).filter(([code]) => ['409', '429', '500', '503', '504'].includes(code)).reduce((a, [, n]) => a + n, 0)
  bed.sandbox.faults.set({})

  const convergeMs = await waitConverged(c, chart, 60_000)
  t.same(await problems(c, chart), [], 'every CR equals its render, status.nodes its pods, no orphan or duplicate')
  t.ok(injected > 20, `faults were injected (${injected} error responses)`)
  t.ok(changes >= CRS, `the spec changed under faults (${changes} changes)`)
  t.same(unhandled, [], 'no unhandled rejection')
  t.ok(bed.controller.hasSynced(), 'the operator is alive')

  // No hot loop: a failed key waits its backoff (and 429's Retry-After) before the next try.
  const perCrPerSecond = operatorRequests / (CRS + 1) / faultSeconds
  // Each spec change costs a few requests (apply, status, event); a hot loop would cost hundreds.
  t.ok(perCrPerSecond < 5, `operator requests per CR per second of faults bounded (${perCrPerSecond.toFixed(2)}; ${operatorRequests} requests, ${CRS + 1} CRs, ${faultSeconds.toFixed(1)} s)`)
  const perChange = operatorRequests / (changes + CRS + 1)
  t.ok(perChange < 8, `operator requests per spec change or creation bounded (${perChange.toFixed(2)})`)
  const writes = bed.sandbox.requests.log().filter((r) => r.userAgent === 'memcached-operator/test' && ['patch', 'create', 'update', 'delete'].includes(r.verb) && r.resource !== 'events')
  const perName = new Map<string, number>()
  for (const w of writes) if (w.name) perName.set(w.name, (perName.get(w.name) ?? 0) + 1)
  const worst = Math.max(...perName.values())
  t.ok(worst < 10 * (changes / CRS + 4) + 20, `no CR's writes run away (worst ${worst}, ${changes} changes over ${CRS} CRs)`)
  // An object is created by an apply carrying a fresh uid (201); a POST is never sent.
  t.same(writes.filter((w) => w.verb === 'create').map((w) => w.resource), [], 'no POST of a child')
  const creates = writes.filter((w) => w.verb === 'patch' && w.code === 201).length
  t.ok(creates < 3 * (changes + CRS + 1) + 20, `creates bounded (${creates}: about three objects per CR, and what spec changes add or re-create)`)

  const taken = await c.get({ apiVersion: 'v1', kind: 'Service', namespace: 'foreign', name: 'taken' })
  t.notOk(((taken.metadata.managedFields ?? []) as { manager: string }[]).some((m) => m.manager === 'memcached-operator'), 'the foreign Service was never written by our field manager')
  t.same(taken.spec && (taken.spec as { ports: { port: number }[] }).ports.map((p) => p.port), [80], 'and is unchanged')
  const foreignCr = await c.get({ ...MC, namespace: 'foreign', name: 'taken' })
  t.equal(statusOf(foreignCr).conditions?.find((x) => x.type === 'Degraded')?.reason, 'OwnershipConflict', 'its CR reports the conflict')
  const deps = await c.list({ apiVersion: 'apps/v1', kind: 'Deployment' }, { namespace: 'foreign' })
  t.same(deps.items.map((d: KubeObject) => d.metadata.name), [], 'and nothing of it was applied')
  t.comment(`figures: CRs=${CRS} changes=${changes} faultSeconds=${faultSeconds.toFixed(1)} injected=${injected} operatorRequests=${operatorRequests} perCrPerSecond=${perCrPerSecond.toFixed(2)} perChange=${perChange.toFixed(2)} worstWritesPerCr=${worst} convergeMs=${convergeMs}`)
})
