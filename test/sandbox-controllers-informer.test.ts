import t from 'tap'
import { Client } from '../operator/sandbox/controllers/client.ts'
import { Informer, WorkQueue, keyOf, splitKey } from '../operator/sandbox/controllers/informer.ts'
import { Kubelet } from '../operator/sandbox/controllers/kubelet.ts'
import { podTemplateHash, generateName } from '../operator/sandbox/controllers/names.ts'
import { createCluster } from '../operator/sandbox/index.ts'
import type { ApiRequest, ApiResponse, ClusterAccess, KubeObject, WatchEvent } from '../operator/sandbox/types.ts'
import { tick, until } from './support/sandbox-requests.ts'

/** A scripted API: lists answer from `items`, watches are captured so the test can drive them. */
class FakeAccess implements ClusterAccess {
  items: KubeObject[] = []
  rv = 10
  failLists = 0
  requests: ApiRequest[] = []
  respond: (req: ApiRequest) => ApiResponse = () => ({ status: 200, body: {} })
  watches: { req: ApiRequest; onEvent: (e: WatchEvent) => void; onClose?: () => void; stopped: boolean }[] = []

  async handle(req: ApiRequest): Promise<ApiResponse> {
    this.requests.push(req)
    if (req.verb === 'list') {
      if (this.failLists > 0) {
        this.failLists--
        return { status: 500, body: { kind: 'Status', reason: 'InternalError', message: 'boom' } }
      }
      return { status: 200, body: { items: structuredClone(this.items), metadata: { resourceVersion: String(this.rv) } } }
    }
    return this.respond(req)
  }

  watch(req: ApiRequest, onEvent: (e: WatchEvent) => void, onClose?: () => void): () => void {
    const w = { req, onEvent, onClose, stopped: false }
    this.watches.push(w)
    return () => {
      w.stopped = true
    }
  }

  get current() {
    const w = this.watches.at(-1)
    if (!w) throw new Error('no watch')
    return w
  }
}

const cm = (name: string, rv: number, owner?: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: String(rv), ...(owner ? { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'o', uid: owner }] } : {}) } })

t.test('keys', async (t) => {
  t.equal(keyOf(cm('a', 1)), 'ns/a')
  t.equal(keyOf({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } }), 'x')
  t.same(splitKey('ns/a'), { namespace: 'ns', name: 'a' })
  t.same(splitKey('x'), { namespace: undefined, name: 'x' })
})

t.test('an informer lists, follows the watch, indexes owners and relists after an error or a closed watch', async (t) => {
  const access = new FakeAccess()
  access.items = [cm('a', 5), cm('b', 6, 'owner-1')]
  access.failLists = 1
  const inf = new Informer(new Client(access, 'test/1'), { group: '', version: 'v1', resource: 'configmaps' })
  const seen: string[] = []
  inf.on((type, o) => seen.push(`${type} ${o.metadata.name} ${o.metadata.resourceVersion}`))
  inf.on(() => {
    throw new Error('a broken handler does not stop the informer')
  })
  t.teardown(() => inf.stop())
  await inf.start()
  t.ok(inf.synced)
  t.same(seen, ['ADDED a 5', 'ADDED b 6'])
  t.equal(access.current.req.query.get('resourceVersion'), '10')
  t.equal(access.current.req.query.get('allowWatchBookmarks'), 'true')
  t.equal(access.current.req.userAgent, 'test/1')
  t.same(inf.dependentsOf('owner-1').map((o) => o.metadata.name), ['b'])
  access.current.onEvent({ type: 'MODIFIED', object: cm('b', 11, 'owner-2') })
  access.current.onEvent({ type: 'MODIFIED', object: cm('b', 9, 'owner-1') }) // stale: ignored
  access.current.onEvent({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '12' } } })
  access.current.onEvent({ type: 'ADDED', object: cm('c', 13) })
  access.current.onEvent({ type: 'DELETED', object: cm('a', 14) })
  access.current.onEvent({ type: 'DELETED', object: cm('zz', 15) }) // unknown: ignored
  t.same(seen.slice(2), ['MODIFIED b 11', 'ADDED c 13', 'DELETED a 14'])
  t.same(inf.dependentsOf('owner-1'), [])
  t.same(inf.dependentsOf('owner-2').map((o) => o.metadata.name), ['b'])
  t.same([...inf.list()].map((o) => o.metadata.name).sort(), ['b', 'c'])

  // The watch reports 410: the informer relists and reconciles its cache with the new list.
  access.items = [cm('b', 20, 'owner-2'), cm('d', 21)]
  access.rv = 22
  const first = access.current
  first.onEvent({ type: 'ERROR', object: { kind: 'Status', code: 410 } })
  await until('a second watch', () => access.watches.length === 2)
  t.ok(first.stopped, 'the failed watch is stopped')
  t.same(seen.slice(5), ['MODIFIED b 20', 'ADDED d 21', 'DELETED c 13'])
  t.equal(access.current.req.query.get('resourceVersion'), '22')

  // The server ends the watch: same again.
  access.items = [cm('d', 21)]
  access.current.onClose?.()
  await until('a third watch', () => access.watches.length === 3)
  t.same(seen.slice(8), ['DELETED b 20'])
  first.onEvent({ type: 'ADDED', object: cm('late', 99) })
  t.equal(inf.get('ns/late'), undefined, 'events of a replaced watch still reach the cache only through the current one')
})

t.test('a stopped informer ignores events and does not relist', async (t) => {
  const access = new FakeAccess()
  const inf = new Informer(new Client(access, 'test/1'), { group: '', version: 'v1', resource: 'configmaps' })
  await inf.start()
  const w = access.current
  inf.stop()
  t.ok(w.stopped)
  w.onEvent({ type: 'ERROR', object: {} })
  w.onEvent({ type: 'ADDED', object: cm('x', 50) })
  await tick(150)
  t.equal(access.watches.length, 1)
  t.equal(inf.get('ns/x'), undefined)
})

t.test('a work queue runs a key once per burst, re-runs a key added while it runs, and backs off on failure', async (t) => {
  const runs: string[] = []
  let failures = 2
  let release: (() => void) | undefined
  const q = new WorkQueue(async (key) => {
    runs.push(key)
    if (key === 'slow' && !release) await new Promise<void>((r) => (release = r))
    if (key === 'flaky' && failures-- > 0) throw new Error('conflict')
  }, 2)
  q.add('a')
  q.add('a')
  await tick(5)
  t.same(runs, [], 'nothing runs before start')
  q.start()
  q.add('slow')
  await tick(5)
  q.add('slow') // while running: marked dirty, runs again afterwards
  release?.()
  q.add('flaky')
  await until('three runs of the flaky key', () => runs.filter((r) => r === 'flaky').length === 3)
  t.same(runs.filter((r) => r === 'a'), ['a'])
  t.same(runs.filter((r) => r === 'slow'), ['slow', 'slow'])
  q.addAfter('later', 10)
  q.addAfter('later', 10)
  await until('the later key', () => runs.includes('later'))
  t.equal(runs.filter((r) => r === 'later').length, 1)
  await q.shutdown()
  q.add('after')
  q.addAfter('after', 1)
  await tick(10)
  t.notOk(runs.includes('after'), 'a stopped queue takes nothing')
})

t.test('the kubelet deletes a pod marked for deletion without finalizers, and retries a failed status write', async (t) => {
  const access = new FakeAccess()
  const pod = (name: string, extra: Partial<KubeObject['metadata']> = {}, spec: Record<string, unknown> = { containers: [{ name: 'c', image: 'i' }] }): KubeObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: '1', ...extra }, spec })
  access.items = [pod('gone', { deletionTimestamp: '2020-01-01T00:00:00Z' }), pod('held', { deletionTimestamp: '2020-01-01T00:00:00Z', finalizers: ['x'] }), pod('elsewhere', {}, { nodeName: 'other-node', containers: [] }), pod('flaky')]
  let statusFailures = 1
  access.respond = (req) => {
    if (req.subresource === 'status' && statusFailures-- > 0) return { status: 500, body: { reason: 'InternalError', message: 'try later' } }
    return { status: 200, body: {} }
  }
  const client = new Client(access, 'kubelet/test', false)
  const inf = new Informer(client, { group: '', version: 'v1', resource: 'pods' })
  const kubelet = new Kubelet(client, client, inf, 1)
  t.teardown(async () => {
    inf.stop()
    await kubelet.stop()
  })
  await inf.start()
  await until('two status writes', () => access.requests.filter((r) => r.subresource === 'status').length === 2)
  const deletes = access.requests.filter((r) => r.verb === 'delete')
  t.same(deletes.map((r) => r.name), ['gone'])
  t.equal(deletes[0]?.query.get('gracePeriodSeconds'), '0')
  t.notOk(access.requests.some((r) => r.name === 'held' || r.name === 'elsewhere'), 'pods held by finalizers or on other nodes are left alone')
  t.ok(access.requests.every((r) => r.account === undefined), 'accounting can be switched off')
  const binds = access.requests.filter((r) => r.verb === 'patch' && !r.subresource)
  // The fake never reports the binding back, so the kubelet binds again before each status attempt.
  t.ok(binds.length >= 1)
  t.ok(binds.every((r) => r.name === 'flaky' && JSON.stringify(r.body) === '{"spec":{"nodeName":"sandbox-node"}}'), 'the scheduler binds by setting spec.nodeName')
  t.equal(binds[0]?.userAgent, 'kubelet/test')
})

t.test('pod-template-hash is stable, order-independent and in the safe alphabet; generated names are bounded', async (t) => {
  const a = podTemplateHash({ metadata: { labels: { a: '1', b: '2' } }, spec: { containers: [{ name: 'x', image: 'y' }] } })
  const b = podTemplateHash({ spec: { containers: [{ image: 'y', name: 'x' }] }, metadata: { labels: { b: '2', a: '1' } } })
  t.equal(a, b)
  t.match(a, /^[bcdfghjklmnpqrstvwxz2456789]{1,10}$/)
  t.not(podTemplateHash({ spec: { containers: [{ name: 'x', image: 'z' }] } }), a)
  t.not(podTemplateHash({ spec: {} }, 1), podTemplateHash({ spec: {} }))
  const long = generateName(`${'x'.repeat(70)}-`)
  t.equal(long.length, 63)
  t.match(long, /^x{58}[bcdfghjklmnpqrstvwxz2456789]{5}$/)
})

t.test('the in-process informers share the stored objects, frozen; a plain in-process watch still gets private copies', async (t) => {
  const cluster = createCluster()
  const q = () => new URLSearchParams({ resourceVersion: String(cluster.store.resourceVersion) })
  const watchReq = { verb: 'watch', group: '', version: 'v1', resource: 'configmaps', query: q() } as ApiRequest
  const shared: KubeObject[] = []
  const copies: KubeObject[] = []
  const stops = [cluster.watchShared({ ...watchReq, query: q() }, (e) => shared.push(e.object as KubeObject)), cluster.watchShared({ ...watchReq, query: q() }, (e) => shared.push(e.object as KubeObject)), cluster.watch({ ...watchReq, query: q() }, (e) => copies.push(e.object as KubeObject))]
  const created = await cluster.handle({ verb: 'create', group: '', version: 'v1', resource: 'configmaps', namespace: 'default', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', labels: { a: 'b' } }, data: { k: 'v' } }, query: new URLSearchParams() })
  t.equal(created.status, 201)
  t.equal(shared.length, 2)
  t.equal(shared[0], shared[1], 'both shared watchers got the one stored object')
  const first = shared[0] as KubeObject
  t.ok(Object.isFrozen(first) && Object.isFrozen(first.metadata) && Object.isFrozen(first.metadata.labels) && Object.isFrozen(first['data']), 'frozen to the leaves')
  t.throws(() => {
    ;(first.metadata.labels as Record<string, string>)['a'] = 'changed'
  }, TypeError, 'a reader cannot change what others share')
  t.same(copies[0], created.body, 'the plain watch sends what the create answered')
  t.notOk(Object.isFrozen(copies[0]), 'the plain watch gets a private copy')
  ;(copies[0] as KubeObject).metadata.labels = { mutated: 'yes' }
  const got = await cluster.handle({ verb: 'get', group: '', version: 'v1', resource: 'configmaps', namespace: 'default', name: 'c', query: new URLSearchParams() })
  t.same((got.body as KubeObject).metadata.labels, { a: 'b' }, 'changing a private copy changes nothing stored')
  // An informer over a client of the cluster caches the shared, frozen object.
  const inf = new Informer(new Client(cluster, 'test/1', false), { group: '', version: 'v1', resource: 'configmaps' })
  await inf.start()
  await until('the informer to list c', () => inf.get('default/c') !== undefined)
  const c2 = await cluster.handle({ verb: 'patch', group: '', version: 'v1', resource: 'configmaps', namespace: 'default', name: 'c', contentType: 'application/merge-patch+json', body: { data: { k: 'w' } }, query: new URLSearchParams() })
  t.equal(c2.status, 200)
  await until('the informer to see the patch', () => (inf.get('default/c')?.['data'] as Record<string, string> | undefined)?.['k'] === 'w')
  t.ok(Object.isFrozen(inf.get('default/c')), 'the watched update is cached frozen')
  t.equal(inf.get('default/c'), shared[2], 'and is the object the other shared watchers got')
  inf.stop()
  for (const stop of stops) stop()
})

t.test('a built-in LIST item is the stored object without apiVersion and kind, byte for byte', async (t) => {
  const cluster = createCluster()
  for (const name of ['a', 'b']) await cluster.handle({ verb: 'create', group: '', version: 'v1', resource: 'configmaps', namespace: 'default', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { 'a.b': 'x\\y"\u00e9' } }, query: new URLSearchParams() })
  const list = await cluster.handle({ verb: 'list', group: '', version: 'v1', resource: 'configmaps', namespace: 'default', query: new URLSearchParams() })
  const items = (list.body as { items: KubeObject[] }).items.filter((i) => ['a', 'b'].includes(i.metadata.name ?? ''))
  t.equal(items.length, 2)
  for (const item of items) {
    const got = await cluster.handle({ verb: 'get', group: '', version: 'v1', resource: 'configmaps', namespace: 'default', name: item.metadata.name, query: new URLSearchParams() })
    const { apiVersion, kind, ...rest } = got.body as KubeObject
    t.same([apiVersion, kind], ['v1', 'ConfigMap'])
    t.equal(JSON.stringify(item), JSON.stringify(rest), `${item.metadata.name ?? ''}: same fields, same order`)
  }
})

t.test('a merge patch of a shared (frozen) object\'s /status stores what a patch of a private copy stores, and still checks what it sends', async (t) => {
  const run = async (shareIt: boolean) => {
    const cluster = createCluster()
    const q = () => new URLSearchParams({ resourceVersion: String(cluster.store.resourceVersion) })
    const stop = shareIt ? cluster.watchShared({ verb: 'watch', group: '', version: 'v1', resource: 'pods', query: q() } as ApiRequest, () => {}) : () => {}
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { app: 'x' } }, spec: { containers: [{ name: 'c', image: 'memcached:1.6', resources: { requests: { cpu: '100m' } } }] } }
    t.equal((await cluster.handle({ verb: 'create', group: '', version: 'v1', resource: 'pods', namespace: 'default', body: pod, query: new URLSearchParams() })).status, 201)
    const patch = (body: unknown, query = new URLSearchParams()) => cluster.handle({ verb: 'patch', group: '', version: 'v1', resource: 'pods', namespace: 'default', name: 'p', subresource: 'status', contentType: 'application/merge-patch+json', body, query, userAgent: 'kubelet/v1.34' })
    const first = await patch({ status: { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'False' }] } })
    t.equal(first.status, 200)
    t.equal(shareIt, Object.isFrozen(cluster.store.get('/pods', 'default', 'p')?.frozen() ?? {}), shareIt ? 'the stored pod is shared, frozen' : 'nobody shares the stored pod')
    const second = await patch({ metadata: { labels: { ignored: 'yes' } }, spec: { nodeName: 'ignored' }, status: { conditions: [{ type: 'Ready', status: 'True' }], bogus: 1 } })
    t.equal(second.status, 200)
    const stored = JSON.parse(cluster.store.get('/pods', 'default', 'p')?.json ?? '{}') as KubeObject
    stop()
    return { stored, warning: second.headers?.['Warning'] ?? '' }
  }
  const [shared, copied] = [await run(true), await run(false)]
  // The entries are sorted by operation, then time to the second, then manager (apimachinery
  // pkg/util/managedfields/internal/managedfields.go sortEncodedManagedFields, as apply/managed.ts
  // does): whether the create and the kubelet's patch fell in one second decides their order in
  // each run, so both runs' entries are put in the manager's order before they are compared.
  const scrub = (o: KubeObject) => {
    const out = JSON.parse(JSON.stringify(o).replace(/"uid":"[^"]*"/g, '"uid":"-"').replace(/"(creationTimestamp|time|startTime)":"[^"]*"/g, '"$1":"-"')) as KubeObject
    out.metadata.managedFields?.sort((a, b) => (a.manager ?? '').localeCompare(b.manager ?? ''))
    return out
  }
  t.same(scrub(shared.stored), scrub(copied.stored), 'the same object, managedFields included')
  t.same(Object.keys(shared.stored), Object.keys(copied.stored), 'in the same order')
  t.equal(JSON.stringify(scrub(shared.stored)), JSON.stringify(scrub(copied.stored)), 'byte for byte')
  t.same((shared.stored['status'] as { conditions: unknown[] }).conditions, [{ type: 'Ready', status: 'True' }], 'the patched status')
  t.notOk('ignored' in (shared.stored.metadata.labels ?? {}), 'a /status write changes no label')
  t.equal(shared.warning, '299 - "unknown field \\"status.bogus\\""', 'the field sent that the kind does not have is still reported')
  t.equal(shared.warning, copied.warning)
})
