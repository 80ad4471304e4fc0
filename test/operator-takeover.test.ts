/**
 * A new leader (or a restarted process) whose children's cache has not yet delivered what the
 * previous leader created a moment before — watch delivery under load, or an RV=0 list served by
 * a lagging apiserver's watch cache — takes the CR's own objects for its own: it finds them with
 * the 422 its uid-guarded applies get (a uid may not change: apiserver registry/rest/update.go
 * `BeforeUpdate`, `ValidateObjectMetaUpdate`), reads them and judges their controller reference, never reports an
 * OwnershipConflict for them, and converges once its cache catches up. Two Reconcilers with their
 * own memories on one sandbox stand for the two processes.
 */
import pino from 'pino'
import t, { type Test } from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { AppliedMemory } from '../operator/reconcile/applied.ts'
import { childSummary } from '../operator/reconcile/cache-summary.ts'
import { EventAggregator } from '../operator/reconcile/events.ts'
import { kindKey, Reconciler, type Cache, type MemcachedObject } from '../operator/reconcile/reconciler.ts'
import { ApiEventRecorder } from '../operator/reconcile/recorder.ts'
import { startSandbox, type Sandbox } from '../operator/sandbox/index.ts'
import { clientFor, CountingMetrics } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const empty: Cache = { get: () => undefined, byIndex: () => [] }
const log = pino({ level: 'silent' })
type Condition = { type: string; status: string; reason: string; message: string }

async function bed(t: Test) {
  const chart = loadChart()
  const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  t.teardown(() => sb.close())
  const user = clientFor(sb, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  const cr = (await user.create({ ...MC, metadata: { name: 'c', namespace: 'default' }, spec: { size: 2 } })) as MemcachedObject
  /** A process: its own client, memory and metrics, and a children's cache that shows what `shown` holds. */
  const process = (userAgent: string, shown: Map<string, KubeObject>) => {
    const client = clientFor(sb, userAgent)
    t.teardown(() => client.close())
    const metrics = new CountingMetrics()
    const reconciler = new Reconciler({
      client,
      chart: () => chart,
      memcacheds: { get: () => cr, byIndex: () => [cr] },
      children: new Map(chart.kinds.map((k) => [kindKey(k), { get: (_ns: unknown, name: string) => (name === 'c' ? shown.get(k.kind) : undefined), byIndex: () => [] } as Cache])),
      pods: empty,
      memory: new AppliedMemory(),
      events: new ApiEventRecorder(client, new EventAggregator(), log),
      metrics,
    })
    return { reconcile: () => reconciler.reconcile('default', 'c', log), metrics }
  }
  /** What the watch would deliver: every child as the server has it now. */
  const catchUp = async (shown: Map<string, KubeObject>) => {
    for (const k of chart.kinds.filter((k) => !k.optional)) {
      const live = await user.get({ apiVersion: k.apiVersion, kind: k.kind, namespace: 'default', name: 'c' }).catch(() => undefined)
      if (live) shown.set(k.kind, childSummary({ ...live, apiVersion: k.apiVersion, kind: k.kind }))
    }
  }
  const degraded = async () => (((await user.get({ ...MC, namespace: 'default', name: 'c' })).status as { conditions?: Condition[] } | undefined)?.conditions ?? []).find((c) => c.type === 'Degraded')
  return { sb, user, cr, process, catchUp, degraded }
}

const writesBy = (sb: Sandbox, userAgent: string) => sb.requests.log().filter((r) => r.userAgent === userAgent && ['create', 'patch', 'update', 'delete'].includes(r.verb) && r.resource !== 'events' && !r.subresource)

t.test('a new leader whose cache lags behind the previous leader\'s creates reports no OwnershipConflict and converges', async (t) => {
  const b = await bed(t)
  // Leader A creates the CR's objects (and at its next reconcile, its cache still empty, finds
  // them as it created them).
  const a = b.process('leader-a/1', new Map())
  t.same(await a.reconcile(), {})
  t.same(await a.reconcile(), {})
  const created = await b.user.get({ apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'c' })

  // Leader B takes over before its cache has delivered any of them.
  const shown = new Map<string, KubeObject>()
  const leader = b.process('leader-b/1', shown)
  t.same(await leader.reconcile(), {}, 'no conflict, nothing to retry')
  t.equal((await b.degraded())?.status, 'False', 'not Degraded')
  t.same(writesBy(b.sb, 'leader-b/1').map((r) => `${r.verb} ${r.resource} ${r.code}`), ['patch services 422', 'patch deployments 422', 'patch poddisruptionbudgets 422'], 'its uid-guarded applies found the objects; nothing written to them')
  t.equal((await b.user.get({ apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'c' })).metadata.resourceVersion, created.metadata.resourceVersion, 'the Service untouched')

  // Its cache catches up: the CR's own objects, controlled by it.
  await b.catchUp(shown)
  const before = writesBy(b.sb, 'leader-b/1').length
  t.same(await leader.reconcile(), {})
  t.same(await leader.reconcile(), {})
  t.equal((await b.degraded())?.status, 'False', 'still not Degraded')
  t.equal(writesBy(b.sb, 'leader-b/1').length, before, 'and nothing more to write: converged')
  t.equal(leader.metrics.counts['failed:OwnershipConflict'], undefined, 'no OwnershipConflict counted')
})

t.test('a restarted process whose first list lags (an RV=0 list from a watch cache behind) takes a half-created CR\'s objects for its own and creates the rest', async (t) => {
  const b = await bed(t)
  // The previous process created the Service and died before the rest (stood for by deleting them).
  const a = b.process('first/1', new Map())
  await a.reconcile()
  await b.user.delete({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'c' })
  await b.user.delete({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', namespace: 'default', name: 'c' })
  const restarted = b.process('restarted/1', new Map())
  t.same(await restarted.reconcile(), {})
  t.equal((await b.degraded())?.status, 'False', 'not Degraded')
  t.same(writesBy(b.sb, 'restarted/1').map((r) => `${r.verb} ${r.resource} ${r.code}`), ['patch services 422', 'patch deployments 201', 'patch poddisruptionbudgets 201'], 'the Service found, nothing written to it; the rest created')
  const deployment = await b.user.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'c' })
  t.equal(deployment.metadata.ownerReferences?.[0]?.uid, b.cr.metadata.uid, 'the Deployment created again, the CR\'s')
})
