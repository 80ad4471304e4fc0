/**
 * The reconciler against a children's cache that lags behind the operator's own applies (a watch
 * that is behind, or dropped and relisted): whatever versions the cache shows in between, once it
 * catches up the reconcile makes the live objects what the CR renders now. Against a real API
 * server (the sandbox, whose managedFields are structured-merge-diff's), with a cache the test
 * moves by hand, as an informer would, from the server's objects.
 */
import pino from 'pino'
import t, { type Test } from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import { ApiError, type KubeClient, type KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { AppliedMemory } from '../operator/reconcile/applied.ts'
import { childSummary } from '../operator/reconcile/cache-summary.ts'
import { EventAggregator } from '../operator/reconcile/events.ts'
import { kindKey, Reconciler, type Cache, type MemcachedObject } from '../operator/reconcile/reconciler.ts'
import { ApiEventRecorder } from '../operator/reconcile/recorder.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { clientFor, CountingMetrics } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const NAME = 'lag'
const empty: Cache = { get: () => undefined, byIndex: () => [] }

/** A sandbox, a CR, a reconciler whose CR cache is the CR as the test last read it and whose children's cache shows what the test put in it. */
async function laggingBed(t: Test) {
  const chart = loadChart()
  const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  t.teardown(() => sb.close())
  const client = clientFor(sb)
  // A write (apply or create) whose answer is lost: the server carried it out, the operator hears a timeout.
  let loseNextAnswer = false
  // A write refused with a 503 before it reached storage: the operator cannot tell it from a lost answer.
  let failNextWrite = false
  const failing = () => {
    if (!failNextWrite) return
    failNextWrite = false
    throw new ApiError(503, 'ServiceUnavailable', 'the server is currently unable to handle the request')
  }
  const lost = <R>(result: R): R => {
    if (!loseNextAnswer) return result
    loseNextAnswer = false
    throw new ApiError(504, 'Timeout', 'Timeout: request did not complete within requested timeout - context deadline exceeded')
  }
  const applyObject = client.applyObject.bind(client)
  client.applyObject = (async (...args: Parameters<KubeClient['applyObject']>) => {
    failing()
    return lost(await applyObject(...args))
  }) as KubeClient['applyObject']
  const apply = client.apply.bind(client)
  client.apply = (async (...args: Parameters<KubeClient['apply']>) => {
    if (args[1]?.subresource !== 'status') failing()
    return lost(await apply(...args))
  }) as KubeClient['apply']
  const create = client.create.bind(client)
  client.create = (async (...args: Parameters<KubeClient['create']>) => {
    failing()
    return lost(await create(...args))
  }) as KubeClient['create']
  const user = clientFor(sb, 'test-user/1', 'test-user')
  t.teardown(() => (client.close(), user.close()))
  let cr = (await user.create({ ...MC, metadata: { name: NAME, namespace: 'default' }, spec: { size: 1, image: { tag: '1.6.38-alpine' } } })) as MemcachedObject
  /** The children's cache: by kind, the summary of the version the test last showed it. */
  const shown = new Map<string, KubeObject>()
  const cacheOf = (kind: string): Cache => ({ get: (_ns, name) => (name === NAME ? shown.get(kind) : undefined), byIndex: () => [] })
  const log = pino({ level: 'silent' })
  const metrics = new CountingMetrics()
  const reconciler = new Reconciler({
    client,
    chart: () => chart,
    memcacheds: { get: () => cr, byIndex: () => [cr] },
    children: new Map(chart.kinds.map((k) => [kindKey(k), cacheOf(k.kind)])),
    pods: empty,
    memory: new AppliedMemory(),
    events: new ApiEventRecorder(client, new EventAggregator(), log),
    metrics,
  })
  const deployment = () => user.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: NAME })
  return {
    reconcile: () => reconciler.reconcile('default', NAME, log),
    loseNextAnswer: () => void (loseNextAnswer = true),
    failNextWrite: () => void (failNextWrite = true),
    /** Changes the CR's spec on the server and in the CR cache. */
    async setTag(tag: string) {
      await this.setSpec({ image: { tag } })
    },
    /** Merges `spec` into the CR's spec on the server and in the CR cache. */
    async setSpec(spec: Record<string, unknown>) {
      cr = (await user.patch({ ...MC, namespace: 'default', name: NAME }, { spec }, { type: 'merge' })) as MemcachedObject
    },
    /** The cache has delivered the deletion of the kind's object, and nothing since. */
    hide: (kind: string) => void shown.delete(kind),
    /** The cache catches up with the server: every child as it is now. */
    async catchUp() {
      // The optional kinds (CRDs such as ServiceMonitor) are not served by this sandbox.
      for (const k of chart.kinds.filter((k) => !k.optional)) {
        const live = await user.get({ apiVersion: k.apiVersion, kind: k.kind, namespace: 'default', name: NAME }).catch(() => undefined)
        if (live) shown.set(k.kind, childSummary({ ...live, apiVersion: k.apiVersion, kind: k.kind }))
        else shown.delete(k.kind)
      }
    },
    /** The image the server's Deployment runs. */
    image: async () => ((await deployment()).spec as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers[0]!.image,
    metrics,
    user,
    /** The CR's conditions on the server, as [type, status, reason]. */
    conditions: async () => (((await user.get({ ...MC, namespace: 'default', name: NAME })).status as { conditions?: { type: string; status: string; reason: string }[] } | undefined)?.conditions ?? []).map((c) => [c.type, c.status, c.reason]),
  }
}

t.test('a spec changed and changed back while the cache still shows the first apply: once the cache catches up, the Deployment is what the CR renders now', async (t) => {
  const bed = await laggingBed(t)
  await bed.reconcile()
  await bed.catchUp()
  t.match(await bed.image(), /:1\.6\.38-alpine$/, 'first apply')

  // The cache stays at the first apply's version from here on, until catchUp.
  await bed.setTag('1.6.39')
  await bed.reconcile()
  t.match(await bed.image(), /:1\.6\.39$/, 'the change is applied')

  await bed.setTag('1.6.38-alpine')
  // The cache shows 1.6.38-alpine, which is what the CR says again: nothing to apply yet, as far as this reconcile can tell.
  await bed.reconcile()

  // The watch delivers the second apply's version (1.6.39, our own apply: our managedFields entry
  // has the same fields as the version the cache showed before); its event brings a reconcile.
  await bed.catchUp()
  await bed.reconcile()
  t.match(await bed.image(), /:1\.6\.38-alpine$/, 'the Deployment runs the image the CR names now')
  await bed.catchUp()
  await bed.reconcile()
  t.match(await bed.image(), /:1\.6\.38-alpine$/, 'and keeps it')
})

t.test('a reconcile on a cache still behind the operator\'s own apply sends nothing again: the apply\'s answer vouches for the versions after it', async (t) => {
  const bed = await laggingBed(t)
  await bed.reconcile()
  await bed.catchUp()
  // The reconcile the creates' arrival brings moves their fields to the Apply entry (create.ts).
  await bed.reconcile()
  await bed.catchUp()
  await bed.setTag('1.6.39')
  await bed.reconcile()
  const applied = bed.metrics.counts['applied:Deployment'] ?? 0
  t.ok(applied >= 1, 'the change was applied')
  // The cache still shows the version before that apply (1.6.38-alpine); the spec is unchanged.
  await bed.reconcile()
  t.equal(bed.metrics.counts['applied:Deployment'] ?? 0, applied, 'nothing applied again while the cache lags')
  t.match(await bed.image(), /:1\.6\.39$/, 'the apply stands')
  await bed.catchUp()
  await bed.reconcile()
  t.equal(bed.metrics.counts['applied:Deployment'] ?? 0, applied, 'nor once it has caught up')
})

t.test('an apply whose answer was lost (applied all the same) is not taken for the apply before it', async (t) => {
  const bed = await laggingBed(t)
  await bed.reconcile()
  await bed.catchUp()
  await bed.setTag('1.6.39')
  bed.loseNextAnswer()
  await t.rejects(bed.reconcile(), /Timeout/, 'the reconcile fails')
  t.match(await bed.image(), /:1\.6\.39$/, 'though the server applied it')
  // Changed back before a retry; the cache shows the lost apply's version.
  await bed.setTag('1.6.38-alpine')
  await bed.catchUp()
  await bed.reconcile()
  t.match(await bed.image(), /:1\.6\.38-alpine$/, 'the Deployment runs the image the CR names now')
})

const ownershipConflict = async (bed: Awaited<ReturnType<typeof laggingBed>>) => (await bed.conditions()).some(([type, status, reason]) => type === 'Degraded' && status === 'True' && reason === 'OwnershipConflict')
const serviceOf = (bed: Awaited<ReturnType<typeof laggingBed>>) => bed.user.get({ apiVersion: 'v1', kind: 'Service', namespace: 'default', name: NAME })
const managersOf = (o: KubeObject) => ((o.metadata.managedFields ?? []) as { manager: string }[]).map((m) => m.manager)
/** Somebody else's Service of the CR's name. */
const theirService = { apiVersion: 'v1', kind: 'Service', metadata: { name: NAME, namespace: 'default' }, spec: { clusterIP: 'None', ports: [{ name: 'memcache', port: 11211 }] } }

t.test('a create that created an object but whose answer was lost: the next reconcile, its cache still showing nothing, finds it by its uid-guarded apply\'s 422 (uid immutable: apiserver rest/update.go BeforeUpdate) and takes it for the CR\'s own', async (t) => {
  const bed = await laggingBed(t)
  bed.loseNextAnswer()
  await t.rejects(bed.reconcile(), /Timeout/, 'the first create times out')
  t.ok(await serviceOf(bed), 'though the server created the Service')
  // The cache has not delivered it yet.
  await bed.reconcile()
  t.notOk(await ownershipConflict(bed), 'no ownership conflict')
  t.match(await bed.image(), /:1\.6\.38-alpine$/, 'and the reconcile went on to the Deployment')
})

t.test('an object somebody else created is an ownership conflict whatever the clocks say, and nothing is written to it', async (t) => {
  const bed = await laggingBed(t)
  await bed.user.create(theirService)
  bed.loseNextAnswer()
  // The uid-guarded apply is refused (422) before its answer could be lost: the lost answer is the next write's.
  t.same(await bed.reconcile(), { requeueAfterMs: 60_000 }, 'looked at again later')
  t.ok(await ownershipConflict(bed), 'Degraded OwnershipConflict')
  t.notOk(managersOf(await serviceOf(bed)).includes('memcached-operator'), 'not written')
})

t.test('an object the cache still shows after its deletion, applied again with the answer lost: the next reconcile, its cache showing nothing, finds it and takes it for the CR\'s own', async (t) => {
  const bed = await laggingBed(t)
  await bed.reconcile()
  await bed.catchUp()
  // Deleted (a user, a namespace cleanup); the cache has not delivered the deletion yet.
  await bed.user.delete({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: NAME })
  await bed.setTag('1.6.39')
  bed.loseNextAnswer()
  await t.rejects(bed.reconcile(), /Timeout/, 'the apply times out')
  t.match(await bed.image(), /:1\.6\.39$/, 'though the server created the Deployment again')
  const created = await bed.user.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: NAME })
  // The deletion arrives; the new Deployment's creation not yet.
  bed.hide('Deployment')
  await bed.reconcile()
  t.notOk(await ownershipConflict(bed), 'no ownership conflict')
  const after = await bed.user.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: NAME })
  t.equal(after.metadata.uid, created.metadata.uid, 'the Deployment is kept')
  t.equal(after.metadata.resourceVersion, created.metadata.resourceVersion, 'and needs nothing more')
})

t.test('an object re-created for an immutable field, whose creating apply\'s answer was lost: the next reconcile, its cache showing nothing, finds it and takes it for the CR\'s own', async (t) => {
  const bed = await laggingBed(t)
  await bed.reconcile()
  await bed.catchUp()
  const before = await serviceOf(bed)
  // A Service with a cluster IP cannot become headless in place: it is deleted and created again.
  await bed.setSpec({ service: { headless: false } })
  bed.loseNextAnswer()
  await t.rejects(bed.reconcile(), /Timeout/, 'the creating apply times out')
  const after = await serviceOf(bed)
  t.not(after.metadata.uid, before.metadata.uid, 'though the server created the Service again')
  bed.hide('Service')
  await bed.reconcile()
  t.notOk(await ownershipConflict(bed), 'no ownership conflict')
  t.equal((await serviceOf(bed)).metadata.uid, after.metadata.uid, 'the re-created Service is kept')
})

t.test('a create that failed without an answer, then somebody else\'s object of the name: an ownership conflict (the object is judged, not the time)', async (t) => {
  const bed = await laggingBed(t)
  bed.failNextWrite()
  await t.rejects(bed.reconcile(), /unable to handle the request/, 'the first create fails without a definite answer, having created nothing')
  await t.rejects(serviceOf(bed), /not found/, 'no Service')
  await bed.user.create(theirService)
  t.same(await bed.reconcile(), { requeueAfterMs: 60_000 })
  t.ok(await ownershipConflict(bed), 'Degraded OwnershipConflict')
  t.notOk(managersOf(await serviceOf(bed)).includes('memcached-operator'), 'not written')
})

t.test('failed creates, then one whose answer was lost: the object it created is the CR\'s own', async (t) => {
  const bed = await laggingBed(t)
  bed.failNextWrite()
  await t.rejects(bed.reconcile(), /unable to handle the request/, 'a create fails, having created nothing')
  bed.loseNextAnswer()
  await t.rejects(bed.reconcile(), /Timeout/, 'the retry creates the Service, its answer lost')
  bed.failNextWrite()
  await t.rejects(bed.reconcile(), /unable to handle the request/, 'the next create fails before reaching storage')
  await bed.reconcile()
  t.notOk(await ownershipConflict(bed), 'no ownership conflict')
  t.match(await bed.image(), /:1\.6\.38-alpine$/, 'and the reconcile went on to the Deployment')
})

t.test('a failed update of an object the cache showed does not vouch for an object somebody else created since', async (t) => {
  const bed = await laggingBed(t)
  await bed.reconcile()
  await bed.catchUp()
  // An update whose answer was lost, carried out all the same; the cache shows it.
  await bed.setTag('1.6.39')
  bed.loseNextAnswer()
  await t.rejects(bed.reconcile(), /Timeout/)
  await bed.catchUp()
  await bed.reconcile()
  // The Deployment is deleted, somebody else creates one of the name; the cache shows neither.
  await bed.user.delete({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: NAME })
  // With the selector the chart renders, which a forced apply could change.
  const labels = { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': NAME }
  await bed.user.create({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: NAME, namespace: 'default' }, spec: { selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'theirs:1' }] } } } })
  bed.hide('Deployment')
  bed.loseNextAnswer()
  t.same(await bed.reconcile(), { requeueAfterMs: 60_000 })
  t.ok(await ownershipConflict(bed), 'Degraded OwnershipConflict')
  const theirs = await bed.user.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: NAME })
  t.notOk(managersOf(theirs).includes('memcached-operator'), 'not written')
  t.match(await bed.image(), /^theirs:1$/)
})
