/**
 * An object the operator's own cache does not show is created by a server-side apply carrying a
 * fresh random uid: on a missing object it takes the create-on-update path of apiserver
 * registry/generic/registry/store.go `Update` (the server's uid, only our Apply entry); on
 * somebody else's object of the name it is refused 422 `metadata.uid … field is immutable`
 * (registry/rest/update.go `BeforeUpdate`, `ValidateObjectMetaUpdate`) and changes nothing, and
 * only then is the object read (GET) and judged as it is. A new Memcached thus costs one apply per
 * object, its status writes and its event, and the operator lists and watches nothing but its own
 * objects.
 */
import pino from 'pino'
import t, { type Test } from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import type { KubeClient, KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { AppliedMemory } from '../operator/reconcile/applied.ts'
import { EventAggregator } from '../operator/reconcile/events.ts'
import { kindKey, Reconciler, type Cache, type MemcachedObject } from '../operator/reconcile/reconciler.ts'
import { ApiEventRecorder } from '../operator/reconcile/recorder.ts'
import { startSandbox, type Sandbox } from '../operator/sandbox/index.ts'
import { clientFor, CountingMetrics, eventually, startBed } from './support/operator.ts'
import { MANAGED_BY_SELECTOR } from '../operator/reconcile/controller.ts'
import { INPUT_SELECTOR } from '../operator/render/secrets.ts'
import { FAILED_CREATE_SELECTOR } from '../operator/reconcile/workload-events.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const UA = 'memcached-operator/test'
type Condition = { type: string; status: string; reason: string; message: string }
const conditionOf = (o: KubeObject, type: string) => ((o.status ?? {}) as { conditions?: Condition[] }).conditions?.find((c) => c.type === type)
const managers = (o: KubeObject) => ((o.metadata.managedFields ?? []) as { manager: string }[]).map((m) => m.manager)
const operatorRequests = (sb: Sandbox) => sb.requests.log().filter((r) => r.userAgent === UA)
/** The operator's reads of objects by name (discovery, which has no resource, aside). */
const operatorGets = (sb: Sandbox) => operatorRequests(sb).filter((r) => r.verb === 'get' && r.resource !== '').map((r) => `${r.resource}/${r.name ?? ''}`)

async function degraded(c: KubeClient, name: string, reason: string): Promise<KubeObject> {
  return eventually(`${name} Degraded ${reason}`, async () => {
    const cr = await c.get({ ...MC, namespace: 'default', name })
    return conditionOf(cr, 'Degraded')?.reason === reason ? cr : undefined
  })
}

/** Somebody else's Deployment; `labels`, its pods' labels (the selector of the chart's is immutable). */
const theirDeployment = (name: string, labels: Record<string, string> = { app: name }): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'default' },
  spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'app', image: 'their/app:1' }] } } },
})

t.test('a new Memcached is created with one uid-guarded apply per object (store.go Update create path), its status writes and an event: no GET, no POST', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  bed.sandbox.requests.reset()
  await bed.client.create({ ...MC, metadata: { name: 'fresh', namespace: 'default' }, spec: { size: 2 } })
  await eventually('status written', async () => (conditionOf(await bed.client.get({ ...MC, namespace: 'default', name: 'fresh' }), 'Available') ? true : undefined))
  t.same(operatorGets(bed.sandbox), [], 'no GET')
  const writes = operatorRequests(bed.sandbox).filter((r) => r.verb !== 'get' && r.verb !== 'list' && r.verb !== 'watch')
  t.same(writes.filter((w) => w.resource !== 'events' && !w.subresource).map((w) => `${w.verb} ${w.patchType} ${w.resource} ${w.code}`).sort(), ['patch apply deployments 201', 'patch apply poddisruptionbudgets 201', 'patch apply services 201'], 'one apply per object, which created it: no POST, no other patch')
  const dep = await bed.client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'fresh' })
  t.same(((dep.metadata.managedFields ?? []) as { manager: string; operation: string }[]).filter((e) => e.manager === 'memcached-operator').map((e) => e.operation), ['Apply'], 'the operator\'s Apply entry alone')
  t.ok(writes.some((w) => w.resource === 'memcacheds' && w.subresource === 'status'), 'status written')
  t.ok(writes.some((w) => w.resource === 'events' && w.verb === 'create'), 'an event')
  t.same([...new Set(writes.map((w) => w.resource))].sort(), ['deployments', 'events', 'memcacheds', 'poddisruptionbudgets', 'services'], 'and nothing else')
})

t.test('an object that is not the operator\'s is found by its apply\'s 422 (uid immutable: rest/update.go BeforeUpdate), read once and refused: nothing is written to it', async (t) => {
  // Created before the operator starts, so that its caches hold it when the CR comes (one created
  // just before the CR may still be on its way through the watch: the tests below).
  const bed = await startBed({ before: async (sandbox) => {
    const other = clientFor(sandbox, 'someone-else/v1', 'someone-else')
    await other.create(theirDeployment('theirs'), { fieldManager: 'someone-else' })
    other.close()
  } })
  t.teardown(() => bed.stop())
  bed.sandbox.requests.reset()
  await bed.client.create({ ...MC, metadata: { name: 'theirs', namespace: 'default' }, spec: { size: 2 } })
  const cr = await degraded(bed.client, 'theirs', 'OwnershipConflict')
  t.match(conditionOf(cr, 'Degraded')?.message, /^Deployment default\/theirs exists and has no controller/)
  const creates = operatorRequests(bed.sandbox).filter((r) => r.resource === 'deployments' && (r.verb === 'create' || r.verb === 'patch')).map((r) => `${r.verb} ${r.patchType} ${r.code}`)
  t.ok(creates.length >= 1 && creates.every((c) => c === 'patch apply 422'), `its apply refused for its uid: ${creates.join(', ')}`)
  t.same([...new Set(operatorGets(bed.sandbox))], ['deployments/theirs'], 'then read: the only GET')
  const after = await bed.client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'theirs' })
  t.notOk(managers(after).includes('memcached-operator'), 'not written')
  t.equal(after.metadata.ownerReferences, undefined, 'no owner added')
  const applies = operatorRequests(bed.sandbox).filter((r) => r.patchType === 'apply' && !r.subresource)
  t.same(applies.filter((r) => r.resource === 'deployments' && r.code !== 422), [], 'nothing applied to it')
  t.same(applies.filter((r) => r.code !== 201 && r.code !== 422), [], 'every apply created its object or was refused: no object changed')
  t.notOk(operatorRequests(bed.sandbox).some((r) => r.resource === 'poddisruptionbudgets'), 'nothing after it created')
})

t.test('an object whose operator label is taken away is refused: it leaves the cache, and the uid-guarded apply finds it', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const other = clientFor(bed.sandbox, 'someone-else/v1', 'someone-else')
  t.teardown(() => other.close())
  const svc = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'moved', namespace: 'default', labels: { 'app.kubernetes.io/managed-by': 'memcached-operator' } }, spec: { ports: [{ port: 80 }] } }
  await other.create(svc, { fieldManager: 'someone-else' })
  await other.patch({ apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'moved' }, { metadata: { labels: { 'app.kubernetes.io/managed-by': 'helm' } } }, { type: 'merge', fieldManager: 'someone-else' })
  bed.sandbox.requests.reset()
  await bed.client.create({ ...MC, metadata: { name: 'moved', namespace: 'default' }, spec: { size: 2 } })
  const cr = await degraded(bed.client, 'moved', 'OwnershipConflict')
  t.match(conditionOf(cr, 'Degraded')?.message, /Service default\/moved exists and has no controller/)
  t.same([...new Set(operatorGets(bed.sandbox))], ['services/moved'], 'read once its create found it')
  const after = await bed.client.get({ apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'moved' })
  t.notOk(managers(after).includes('memcached-operator'), 'not written')
})

const nothing: Cache = { get: () => undefined, byIndex: () => [] }

/**
 * A sandbox without controllers, a Memcached `name` created by somebody else's client, and a
 * Reconciler whose caches show that CR and nothing else (the caches of a watch that is behind),
 * except the caches given by kind.
 */
async function blindReconciler(t: Test, name: string, opts: { children?: Record<string, Cache>; metrics?: CountingMetrics; now?: () => Date } = {}) {
  const chart = loadChart()
  const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  t.teardown(() => sb.close())
  const client = clientFor(sb)
  const user = clientFor(sb, 'someone-else/v1', 'someone-else')
  t.teardown(() => (client.close(), user.close()))
  const cr = (await user.create({ ...MC, metadata: { name, namespace: 'default' }, spec: { size: 1 } })) as MemcachedObject
  const log = pino({ level: 'silent' })
  const reconciler = new Reconciler({
    client,
    chart: () => chart,
    memcacheds: { get: () => cr, byIndex: () => [cr] },
    children: new Map(chart.kinds.map((k) => [kindKey(k), opts.children?.[k.kind] ?? nothing])),
    pods: nothing,
    memory: new AppliedMemory(),
    events: new ApiEventRecorder(client, new EventAggregator(), log),
    metrics: opts.metrics ?? new CountingMetrics(),
    ...(opts.now ? { now: opts.now } : {}),
  })
  return { sb, user, cr, reconciler, log }
}

/**
 * The window: an object created so shortly before the CR's first reconcile that no watch has
 * delivered it — or one the operator's caches never list at all, being somebody else's.
 * Simulated by a reconciler whose caches have not seen it, against a real API server.
 */
t.test('an object the caches do not show is found by the apply\'s 422 (uid immutable): an ownership conflict, and nothing is written to it', async (t) => {
  const metrics = new CountingMetrics()
  const { sb, user, reconciler, log } = await blindReconciler(t, 'raced', { metrics })
  // Its selector is the chart's: a forced apply could have changed it.
  await user.create(theirDeployment('raced', { 'app.kubernetes.io/instance': 'raced', 'app.kubernetes.io/name': 'memcached' }), { fieldManager: 'someone-else' })
  t.same(await reconciler.reconcile('default', 'raced', log), { requeueAfterMs: 60_000 }, 'an ownership conflict, looked at again later')
  const reported = await user.get({ ...MC, namespace: 'default', name: 'raced' })
  t.equal(conditionOf(reported, 'Degraded')?.reason, 'OwnershipConflict', 'Degraded OwnershipConflict')
  t.match(conditionOf(reported, 'Degraded')?.message, /^Deployment default\/raced exists and has no controller; it was not created by this Memcached and is left alone$/)
  const events = await user.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })
  t.ok(events.items.some((e) => (e as { reason?: string; type?: string }).reason === 'OwnershipConflict' && (e as { type?: string }).type === 'Warning'), 'a Warning event')
  t.equal(metrics.counts['failed:OwnershipConflict'], 1, 'a metric')
  const theirs = await user.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'raced' })
  t.notOk(managers(theirs).includes('memcached-operator'), 'not written')
  t.equal(theirs.metadata.ownerReferences, undefined, 'no owner added')

  t.same(await reconciler.reconcile('default', 'raced', log), { requeueAfterMs: 60_000 }, 'still refused at the next look')
  t.same(sb.requests.log().filter((r) => r.userAgent === UA && r.resource === 'deployments').map((r) => `${r.verb} ${r.code}`), ['patch 422', 'get 200', 'patch 422', 'get 200'], 'a refused apply and a read each time, no other write')
})

t.test('an object this CR created that its cache has not delivered yet is its own: found by its apply\'s 422, no conflict', async (t) => {
  const { sb, user, reconciler, log } = await blindReconciler(t, 'mine')
  t.same(await reconciler.reconcile('default', 'mine', log), {})
  t.same(await reconciler.reconcile('default', 'mine', log), {}, 'the caches still show nothing')
  const requests = sb.requests.log().filter((r) => r.userAgent === UA && r.resource === 'deployments').map((r) => `${r.verb} ${r.code}`)
  t.same(requests, ['patch 201', 'patch 422', 'get 200'], 'created, then found as the create left it: nothing to apply')
  t.not(conditionOf(await user.get({ ...MC, namespace: 'default', name: 'mine' }), 'Degraded')?.status, 'True', 'not Degraded')
})

t.test('a kind whose caches have not synced yet (discovery has just found it served) is waited for, at most 30 s', async (t) => {
  const listing: Cache = { ...nothing, hasSynced: () => false }
  let clock = Date.parse('2026-01-01T00:00:00Z')
  const { sb, reconciler, log } = await blindReconciler(t, 'early', { children: { Deployment: listing }, now: () => new Date(clock) })
  const writes = () => operatorRequests(sb).filter((r) => r.verb === 'patch' || r.verb === 'create')
  t.same(await reconciler.reconcile('default', 'early', log), { requeueAfterMs: 1000 }, 'looked at again in a second')
  clock += 29_000
  t.same(await reconciler.reconcile('default', 'early', log), { requeueAfterMs: 1000 })
  t.same(writes(), [], 'nothing written meanwhile')
  clock += 2_000
  t.same(await reconciler.reconcile('default', 'early', log), {}, 'after 30 s, applied without it (a failure would be reported as any failed apply)')
  t.ok(writes().some((r) => r.resource === 'deployments'))
})

t.test('when the object that kept a CR from being applied goes, the CR is applied at its next look: at any change of the CR (or a minute later)', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const other = clientFor(bed.sandbox, 'someone-else/v1', 'someone-else')
  t.teardown(() => other.close())
  const svc = { apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'blocked' }
  await other.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'blocked', namespace: 'default' }, spec: { ports: [{ port: 80 }] } }, { fieldManager: 'someone-else' })
  await bed.client.create({ ...MC, metadata: { name: 'blocked', namespace: 'default' }, spec: { size: 1 } })
  await degraded(bed.client, 'blocked', 'OwnershipConflict')
  await other.delete(svc)
  await bed.client.patch({ ...MC, namespace: 'default', name: 'blocked' }, { spec: { size: 2 } }, { type: 'merge' })
  const cr = await degraded(bed.client, 'blocked', 'AsExpected')
  t.equal(conditionOf(cr, 'Degraded')?.status, 'False')
  t.ok(managers(await bed.client.get(svc)).includes('memcached-operator'), 'the Service is the operator\'s now')
})

t.test('the operator lists and watches only its own objects: every list and watch of a child kind or of pods selects the operator\'s label', async (t) => {
  const bed = await startBed({ sandbox: { requestLogSize: 100_000 } })
  t.teardown(() => bed.stop())
  await bed.client.create({ ...MC, metadata: { name: 'watched', namespace: 'default' }, spec: { size: 1 } })
  await eventually('status written', async () => (conditionOf(await bed.client.get({ ...MC, namespace: 'default', name: 'watched' }), 'Available') ? true : undefined))
  const reads = operatorRequests(bed.sandbox).filter((r) => r.verb === 'list' || r.verb === 'watch')
  const kinds = new Set(reads.map((r) => r.resource))
  for (const resource of ['services', 'deployments', 'poddisruptionbudgets', 'pods']) t.ok(kinds.has(resource), `${resource} watched`)
  const unselected = reads.filter((r) => {
    if (r.resource === 'memcacheds') return false
    // The StatefulSet controller's FailedCreate Events, the only place it says why a pod is missing.
    if (r.resource === 'events') return r.fieldSelector !== FAILED_CREATE_SELECTOR
    const terms = (r.labelSelector ?? '').split(',')
    return !(terms.includes(MANAGED_BY_SELECTOR) || (r.resource === 'secrets' && terms.includes(INPUT_SELECTOR)))
  })
  t.same(unselected.map((r) => `${r.verb} ${r.resource} ${r.labelSelector ?? r.fieldSelector ?? '(no selector)'}`), [], 'nobody else\'s objects: no list or watch without the operator\'s label')
})
