// kube-apiserver's --event-ttl: every write of an Event renews its etcd lease
// (pkg/registry/core/event/storage/storage.go: TTLFunc answers the TTL for creates and updates
// alike); when the lease runs out etcd deletes the key — no request, no admission, no finalizers.
// And client-go's EventCorrelator (tools/record/events_cache.go) only forgets what its LRU evicts.
import t from 'tap'
import { Client } from '../operator/sandbox/controllers/client.ts'
import { EventSink } from '../operator/sandbox/controllers/events.ts'
import { createCluster } from '../operator/sandbox/index.ts'
import type { ApiRequest, KubeObject, WatchEvent } from '../operator/sandbox/types.ts'
import { until } from './support/controllers-bed.ts'

type Obj = Record<string, any>
const req = (r: Partial<ApiRequest> & Pick<ApiRequest, 'verb'>): ApiRequest => ({ group: '', version: 'v1', resource: 'events', namespace: 'default', query: new URLSearchParams(), ...r }) as ApiRequest
const event = (name: string, extra: Obj = {}): Obj => ({
  apiVersion: 'v1',
  kind: 'Event',
  metadata: { name, namespace: 'default', ...extra },
  involvedObject: { kind: 'Pod', namespace: 'default', name: 'p', apiVersion: 'v1' },
  reason: 'Test',
  message: name,
  type: 'Normal',
  source: { component: 'test' },
  count: 1,
})

t.test('an Event is deleted --event-ttl after its last write: a patch renews the lease; finalizers do not hold it; watchers see DELETED', async (t) => {
  const ttl = 600
  const cluster = createCluster({ eventTtlMs: ttl })
  t.teardown(() => cluster.close())
  const deletedAt = new Map<string, number>()
  const deleted: Obj[] = []
  const stop = cluster.watch(req({ verb: 'watch', namespace: undefined }), (e: WatchEvent) => {
    if (e.type !== 'DELETED') return
    const o = e.object as Obj
    deletedAt.set(o.metadata.name, Date.now())
    deleted.push(o)
  })
  t.teardown(stop)
  const created = Date.now()
  for (const body of [event('kept-by-patch'), event('plain'), event('with-finalizer', { finalizers: ['example.com/keep'] })]) {
    t.equal((await cluster.handle(req({ verb: 'create', body }))).status, 201, `${body.metadata.name} created`)
  }
  await new Promise((r) => setTimeout(r, ttl / 2))
  const patched = Date.now()
  const patch = await cluster.handle(req({ verb: 'patch', name: 'kept-by-patch', contentType: 'application/merge-patch+json', body: { count: 2 } }))
  t.equal(patch.status, 200)

  await until('every Event gone', async () => deletedAt.size === 3, 15_000)
  // Timers never fire early: each went no sooner than its lease allowed.
  t.ok((deletedAt.get('plain') as number) >= created + ttl, 'the plain Event lived its TTL')
  t.ok((deletedAt.get('with-finalizer') as number) >= created + ttl, 'a finalizer does not hold an expired Event')
  t.ok((deletedAt.get('kept-by-patch') as number) >= patched + ttl, 'the patched Event lived a TTL from its patch')
  // By the order of the DELETED events: a stalled event loop may remove both in one pass, in one millisecond.
  const order = deleted.map((o) => o.metadata.name)
  t.ok(order.indexOf('kept-by-patch') > order.indexOf('plain'), 'and went after the one written with it and not patched', { order })
  t.equal(deleted.find((o) => o.metadata.name === 'kept-by-patch')?.count, 2, 'the DELETED event carries the last state')
  const list = (await cluster.handle(req({ verb: 'list' }))).body as Obj
  t.same(list.items, [], 'nothing left')
})

t.test('an Event deleted and created again under its name gets a new lease', async (t) => {
  const ttl = 400
  const cluster = createCluster({ eventTtlMs: ttl })
  t.teardown(() => cluster.close())
  t.equal((await cluster.handle(req({ verb: 'create', body: event('again') }))).status, 201)
  t.equal((await cluster.handle(req({ verb: 'delete', name: 'again' }))).status, 200)
  await new Promise((r) => setTimeout(r, ttl / 2))
  const recreated = Date.now()
  t.equal((await cluster.handle(req({ verb: 'create', body: event('again') }))).status, 201)
  let goneAt = 0
  await until('the second Event gone', async () => {
    const got = await cluster.handle(req({ verb: 'get', name: 'again' }))
    if (got.status === 404) goneAt = Date.now()
    return got.status === 404
  }, 15_000)
  t.ok(goneAt >= recreated + ttl, 'it lived a whole TTL from its own creation')
})

t.test('events_cache.go: an Event the correlator\'s LRU forgot stays stored, and its repeat is a new Event rather than a count', async (t) => {
  const cluster = createCluster()
  t.teardown(() => cluster.close())
  const sink = new EventSink(3)
  const recorder = sink.recorder('replicaset-controller', new Client(cluster, 'test'))
  const rs = { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'rs', namespace: 'default', uid: 'u1', resourceVersion: '1' } } as KubeObject
  for (let i = 0; i < 5; i++) recorder.event(rs, 'Normal', `Reason${i}`, `message ${i}`)
  // The LRU of 3 now holds Reason2-4.
  recorder.event(rs, 'Normal', 'Reason0', 'message 0')
  recorder.event(rs, 'Normal', 'Reason4', 'message 4')
  await sink.stop()
  const after = ((await cluster.handle(req({ verb: 'list' }))).body as Obj).items as Obj[]
  t.same([...new Set(after.map((e) => e.reason))].sort(), ['Reason0', 'Reason1', 'Reason2', 'Reason3', 'Reason4'], 'the forgotten ones stay stored')
  t.same(after.filter((e) => e.reason === 'Reason0').map((e) => e.count), [1, 1], 'a repeat the LRU forgot is a new Event')
  t.same(after.filter((e) => e.reason === 'Reason4').map((e) => e.count), [2], 'a repeat it remembers is a count on its Event')
  t.equal(after.length, 6)
})

t.test('an expired Event leaves the namespace\'s quota usage as a deletion does: the next Event is admitted', async (t) => {
  const cluster = createCluster({ eventTtlMs: 150 })
  t.teardown(() => cluster.close())
  const quota = { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q', namespace: 'default' }, spec: { hard: { 'count/events': '1' } } }
  t.equal((await cluster.handle(req({ verb: 'create', resource: 'resourcequotas', body: quota }))).status, 201)
  t.equal((await cluster.handle(req({ verb: 'create', body: event('first') }))).status, 201)
  t.equal((await cluster.handle(req({ verb: 'create', body: event('refused') }))).status, 403, 'the quota is used up')
  await until('the first Event gone', async () => (await cluster.handle(req({ verb: 'get', name: 'first' }))).status === 404, 15_000)
  const used = ((await cluster.handle(req({ verb: 'get', resource: 'resourcequotas', name: 'q' }))).body as Obj).status.used
  t.same(used, { 'count/events': '0' })
  t.equal((await cluster.handle(req({ verb: 'create', body: event('second') }))).status, 201)
})

t.test('a TTL of 0 grants no lease and an infinite one never runs out: Events stay, and no timer overflows', async (t) => {
  const warnings: string[] = []
  // Only the timers' own warning: any other the process emits meanwhile is not this test's.
  const onWarning = (w: Error) => void (w.name === 'TimeoutOverflowWarning' && warnings.push(w.message))
  process.on('warning', onWarning)
  t.teardown(() => process.off('warning', onWarning))
  for (const eventTtlMs of [Number.POSITIVE_INFINITY, 0]) {
    const cluster = createCluster({ eventTtlMs })
    t.teardown(() => cluster.close())
    t.equal((await cluster.handle(req({ verb: 'create', body: event('stays') }))).status, 201)
    await new Promise((r) => setTimeout(r, 100))
    t.equal((await cluster.handle(req({ verb: 'get', name: 'stays' }))).status, 200, `eventTtlMs ${eventTtlMs}`)
  }
  t.same(warnings, [], 'no timer overflow')
})
