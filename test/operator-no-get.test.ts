/**
 * A new Memcached costs its applies, its status writes and its event — no GET: whether an object
 * about to be created is somebody else's comes from a metadata-only cache of the declared kinds'
 * objects not labelled as the operator's, and an object that cache has not seen yet is caught by
 * the apply's answer (200, not 201) and reported like any ownership conflict.
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

t.test('a new Memcached is created with its applies, its status writes and an event: no GET', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  bed.sandbox.requests.reset()
  await bed.client.create({ ...MC, metadata: { name: 'fresh', namespace: 'default' }, spec: { size: 2 } })
  await eventually('status written', async () => (conditionOf(await bed.client.get({ ...MC, namespace: 'default', name: 'fresh' }), 'Available') ? true : undefined))
  t.same(operatorGets(bed.sandbox), [], 'no GET')
  const writes = operatorRequests(bed.sandbox).filter((r) => r.verb !== 'get' && r.verb !== 'list' && r.verb !== 'watch')
  t.same(writes.filter((w) => w.resource !== 'events' && !w.subresource).map((w) => `${w.verb} ${w.resource} ${w.code}`).sort(), ['patch deployments 201', 'patch poddisruptionbudgets 201', 'patch services 201'], 'one apply per object, each a creation')
  t.ok(writes.some((w) => w.resource === 'memcacheds' && w.subresource === 'status'), 'status written')
  t.ok(writes.some((w) => w.resource === 'events' && w.verb === 'create'), 'an event')
  t.same([...new Set(writes.map((w) => w.resource))].sort(), ['deployments', 'events', 'memcacheds', 'poddisruptionbudgets', 'services'], 'and nothing else')
})

t.test('an unlabelled object created before the CR is refused without a GET', async (t) => {
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
  t.same(operatorGets(bed.sandbox), [], 'no GET')
  const after = await bed.client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'theirs' })
  t.notOk(managers(after).includes('memcached-operator'), 'not written')
  t.same(operatorRequests(bed.sandbox).filter((r) => r.verb === 'patch' && !r.subresource && r.resource !== 'events'), [], 'nothing of the CR applied')
})

t.test('an object whose operator label is taken away while the operator runs is refused: it moves from one cache to the other', async (t) => {
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
  t.same(operatorGets(bed.sandbox), [], 'no GET')
  const after = await bed.client.get({ apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'moved' })
  t.notOk(managers(after).includes('memcached-operator'), 'not written')
})

const nothing: Cache = { get: () => undefined, byIndex: () => [] }

/**
 * A sandbox without controllers, a Memcached `name` created by somebody else's client, and a
 * Reconciler whose caches show that CR and nothing else (the caches of a watch that is behind),
 * except the caches given by kind.
 */
async function blindReconciler(t: Test, name: string, opts: { children?: Record<string, Cache>; foreign?: Record<string, Cache>; metrics?: CountingMetrics; now?: () => Date } = {}) {
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
    foreign: new Map(chart.kinds.map((k) => [kindKey(k), opts.foreign?.[k.kind] ?? nothing])),
    pods: nothing,
    memory: new AppliedMemory(),
    events: new ApiEventRecorder(client, new EventAggregator(), log),
    metrics: opts.metrics ?? new CountingMetrics(),
    ...(opts.now ? { now: opts.now } : {}),
  })
  return { sb, user, cr, reconciler, log }
}

/**
 * The window: an object created so shortly before the CR's first apply that the metadata watch
 * has not delivered it. Simulated by a reconciler whose caches have not seen it (the caches of a
 * watch that is behind), against a real API server.
 */
t.test('an object the caches have not seen yet when the apply lands on it is reported as an ownership conflict, and stays reported', async (t) => {
  let deploymentCache = nothing
  const metrics = new CountingMetrics()
  const { sb, user, cr, reconciler, log } = await blindReconciler(t, 'raced', { children: { Deployment: { get: (ns, name) => deploymentCache.get(ns, name), byIndex: () => [] } }, metrics })
  // Its selector is the chart's: the forced apply can change it, so it does.
  await user.create(theirDeployment('raced', { 'app.kubernetes.io/instance': 'raced', 'app.kubernetes.io/name': 'memcached' }), { fieldManager: 'someone-else' })
  await t.rejects(reconciler.reconcile('default', 'raced', log), { name: 'ReconcileError', message: /Deployment default\/raced existed before this Memcached first applied it/ })
  const reported = await user.get({ ...MC, namespace: 'default', name: 'raced' })
  t.equal(conditionOf(reported, 'Degraded')?.reason, 'OwnershipConflict', 'Degraded OwnershipConflict')
  t.match(conditionOf(reported, 'Degraded')?.message, /the apply changed it/)
  const events = await user.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })
  t.ok(events.items.some((e) => (e as { reason?: string; type?: string }).reason === 'OwnershipConflict' && (e as { type?: string }).type === 'Warning'), 'a Warning event')
  t.equal(metrics.counts['failed:OwnershipConflict'], 1, 'a metric')
  t.same(operatorGets(sb), [], 'no GET')

  // The apply gave it this CR's labels and controller reference, so the operator's cache now
  // shows it as the CR's own: it is still refused, nothing more is applied to it.
  const landed = await user.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'raced' })
  t.equal(landed.metadata.ownerReferences?.[0]?.uid, cr.metadata.uid, 'the apply did land (the window the docs describe)')
  deploymentCache = { get: (_ns, name) => (name === 'raced' ? landed : undefined), byIndex: () => [] }
  const before = sb.requests.log().filter((r) => r.userAgent === UA && r.resource === 'deployments' && r.verb === 'patch').length
  t.same(await reconciler.reconcile('default', 'raced', log), { requeueAfterMs: 60_000 }, 'an ownership conflict, looked at again later')
  t.equal(sb.requests.log().filter((r) => r.userAgent === UA && r.resource === 'deployments' && r.verb === 'patch').length, before, 'not applied again')
  t.equal(conditionOf(await user.get({ ...MC, namespace: 'default', name: 'raced' }), 'Degraded')?.reason, 'OwnershipConflict')
})

t.test('an object this CR created that its cache has not delivered yet is its own: applied again, no conflict', async (t) => {
  const { sb, user, reconciler, log } = await blindReconciler(t, 'mine')
  t.same(await reconciler.reconcile('default', 'mine', log), {})
  t.same(await reconciler.reconcile('default', 'mine', log), {}, 'the caches still show nothing: the applies answer 200 for objects this CR created')
  const codes = sb.requests.log().filter((r) => r.userAgent === UA && r.verb === 'patch' && r.resource === 'deployments').map((r) => r.code)
  t.same(codes, [201, 200])
  t.not(conditionOf(await user.get({ ...MC, namespace: 'default', name: 'mine' }), 'Degraded')?.status, 'True', 'not Degraded')
})

t.test('an apply the server refuses because the object exists (an immutable field) is an ownership conflict too, and nothing is written', async (t) => {
  const { user, reconciler, log } = await blindReconciler(t, 'other')
  await user.create(theirDeployment('other'), { fieldManager: 'someone-else' })
  await t.rejects(reconciler.reconcile('default', 'other', log), { name: 'ReconcileError', message: /Deployment default\/other exists though the operator's caches did not show it yet \(the server refused the apply: .*spec\.selector.*field is immutable\): it was not created by this Memcached and is left alone/ })
  t.equal(conditionOf(await user.get({ ...MC, namespace: 'default', name: 'other' }), 'Degraded')?.reason, 'OwnershipConflict')
  const after = await user.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'other' })
  t.notOk(managers(after).includes('memcached-operator'), 'not written')
  t.equal(after.metadata.ownerReferences, undefined)
})

t.test('a kind whose caches have not synced yet (discovery has just found it served) is waited for, at most 30 s', async (t) => {
  const listing: Cache = { ...nothing, hasSynced: () => false }
  let clock = Date.parse('2026-01-01T00:00:00Z')
  const { sb, reconciler, log } = await blindReconciler(t, 'early', { foreign: { Deployment: listing }, now: () => new Date(clock) })
  const writes = () => operatorRequests(sb).filter((r) => r.verb === 'patch' || r.verb === 'create')
  t.same(await reconciler.reconcile('default', 'early', log), { requeueAfterMs: 1000 }, 'looked at again in a second')
  clock += 29_000
  t.same(await reconciler.reconcile('default', 'early', log), { requeueAfterMs: 1000 })
  t.same(writes(), [], 'nothing written meanwhile')
  clock += 2_000
  t.same(await reconciler.reconcile('default', 'early', log), {}, 'after 30 s, applied without it (a failure would be reported as any failed apply)')
  t.ok(writes().some((r) => r.resource === 'deployments'))
})

t.test('when the object that kept a CR from being applied goes, the CR is applied at once', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const other = clientFor(bed.sandbox, 'someone-else/v1', 'someone-else')
  t.teardown(() => other.close())
  const svc = { apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'blocked' }
  await other.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'blocked', namespace: 'default' }, spec: { ports: [{ port: 80 }] } }, { fieldManager: 'someone-else' })
  await bed.client.create({ ...MC, metadata: { name: 'blocked', namespace: 'default' }, spec: { size: 1 } })
  await degraded(bed.client, 'blocked', 'OwnershipConflict')
  await other.delete(svc)
  // The conflict is otherwise looked at again a minute later: well past this wait.
  const cr = await degraded(bed.client, 'blocked', 'AsExpected')
  t.equal(conditionOf(cr, 'Degraded')?.status, 'False')
  t.ok(managers(await bed.client.get(svc)).includes('memcached-operator'), 'the Service is the operator\'s now')
})
