/**
 * The informer against the sandbox: initial list, events in order, indexes, label selection,
 * resync, and recovery from dropped watches, 410 Expired and failing lists without losing or
 * duplicating an event.
 */
import t, { type Test } from 'tap'
import { KubeConfig } from '@kubernetes/client-node'
import { startSandbox, type Sandbox } from '../operator/sandbox/index.ts'
import { KubeClient, type KubeObject } from '../operator/controller/client.ts'
import { Informer, objectKey, splitKey, byLabel, byControllerUid, stripManagedFields, type InformerOptions, type InformerPhase } from '../operator/controller/informer.ts'

const CM = { apiVersion: 'v1', kind: 'ConfigMap' }

async function setup(t: Test, opts: Parameters<typeof startSandbox>[0] = {}): Promise<{ sb: Sandbox; client: KubeClient }> {
  const sb = await startSandbox({ controllers: false, ...opts })
  t.teardown(() => sb.close())
  const kc = new KubeConfig()
  kc.loadFromFile(sb.kubeconfigPath)
  const client = new KubeClient(kc, { userAgent: 'informer-test/v0.0.0', fieldManager: 'informer-test' })
  t.teardown(() => client.close())
  return { sb, client }
}

function informer(t: Test, client: KubeClient, opts: Partial<InformerOptions<KubeObject>> = {}): Informer {
  const inf = new Informer(client, { ...CM, backoff: { initialMs: 5, maxMs: 50 }, ...opts })
  t.teardown(() => inf.stop())
  return inf
}

function cm(name: string, data: Record<string, string> = {}, labels?: Record<string, string>): KubeObject {
  return { ...CM, metadata: { name, namespace: 'default', ...(labels ? { labels } : {}) }, data }
}

async function eventually(t: Test, what: string, pred: () => boolean, ms = 15_000): Promise<void> {
  const until = Date.now() + ms
  while (!pred()) {
    if (Date.now() > until) {
      t.fail(`timed out waiting for: ${what}`)
      return
    }
    await new Promise((r) => setTimeout(r, 5))
  }
}

/**
 * Mirrors the cache from handler calls alone and records every violation of the event contract:
 * an ADDED for a known object, an update or delete of an unknown one, a resourceVersion going back.
 */
function mirror(inf: Informer): { state: Map<string, string>; violations: string[]; counts: { add: number; update: number; delete: number } } {
  const state = new Map<string, string>()
  const violations: string[] = []
  const counts = { add: 0, update: 0, delete: 0 }
  const rv = (o: KubeObject): string => o.metadata.resourceVersion ?? ''
  inf.onAdd((o) => {
    counts.add++
    if (state.has(objectKey(o))) violations.push(`duplicate add ${objectKey(o)}`)
    state.set(objectKey(o), rv(o))
  })
  inf.onUpdate((old, o) => {
    counts.update++
    const known = state.get(objectKey(o))
    if (known === undefined) violations.push(`update of unknown ${objectKey(o)}`)
    else if (known !== rv(old)) violations.push(`update of ${objectKey(o)} from ${rv(old)} but last seen ${known}`)
    else if (old !== o && Number(rv(o)) <= Number(known)) violations.push(`${objectKey(o)} went back from ${known} to ${rv(o)}`)
    state.set(objectKey(o), rv(o))
  })
  inf.onDelete((o) => {
    counts.delete++
    if (!state.delete(objectKey(o))) violations.push(`delete of unknown ${objectKey(o)}`)
  })
  return { state, violations, counts }
}

async function serverState(client: KubeClient, labelSelector?: string): Promise<Map<string, string>> {
  const list = await client.list(CM, { namespace: 'default', labelSelector })
  return new Map(list.items.map((i) => [objectKey(i), i.metadata.resourceVersion ?? '']))
}

function same(a: Map<string, string>, b: Map<string, string>): boolean {
  return a.size === b.size && [...a].every(([k, v]) => b.get(k) === v)
}

t.test('keys and index functions', async (t) => {
  t.equal(objectKey({ metadata: { name: 'a', namespace: 'ns' } }), 'ns/a')
  t.equal(objectKey({ metadata: { name: 'node1' } }), 'node1')
  t.same(splitKey('ns/a'), { namespace: 'ns', name: 'a' })
  t.same(splitKey('node1'), { namespace: undefined, name: 'node1' })
  const owned = { ...cm('x', {}, { app: 'web' }), metadata: { name: 'x', labels: { app: 'web' }, ownerReferences: [{ apiVersion: 'v1', kind: 'A', name: 'a', uid: 'u1' }, { apiVersion: 'v1', kind: 'B', name: 'b', uid: 'u2', controller: true }] } }
  t.same(byControllerUid(owned), ['u2'])
  t.same(byControllerUid(cm('y')), [])
  t.same(byLabel('app')(owned), ['web'])
  t.same(byLabel('tier')(owned), [])
  const withFields = { ...cm('z'), metadata: { name: 'z', managedFields: [{ manager: 'm' }] } }
  t.same(stripManagedFields(withFields).metadata, { name: 'z' })
  const plain = cm('p')
  t.equal(stripManagedFields(plain), plain)
})

t.test('lists, then delivers watch events in order; reads and indexes answer from the cache', async (t) => {
  const { client } = await setup(t)
  await client.create(cm('pre', { v: '0' }, { app: 'a' }))
  const inf = informer(t, client)
  inf.addIndex('app', byLabel('app'))
  const log: string[] = []
  inf.onAdd((o) => log.push(`add ${o.metadata.name} ${String((o.data as Record<string, string>).v)}`))
  inf.onUpdate((old, o) => log.push(`update ${o.metadata.name} ${String((old.data as Record<string, string>).v)}->${String((o.data as Record<string, string>).v)}`))
  inf.onDelete((o) => log.push(`delete ${o.metadata.name}`))
  t.notOk(inf.hasSynced())
  inf.start()
  inf.start()
  t.equal(await inf.waitForSync(), true)
  t.ok(inf.hasSynced())
  t.equal(await inf.waitForSync(), true)
  t.same(log, ['add pre 0'])
  t.same(inf.resource, CM)
  t.match(inf.resourceVersion, /^\d+$/)

  await client.create(cm('one', { v: '1' }, { app: 'b' }))
  for (let i = 2; i <= 4; i++) await client.patch({ ...CM, namespace: 'default', name: 'one' }, { data: { v: String(i) } }, { type: 'merge' })
  await client.patch({ ...CM, namespace: 'default', name: 'pre' }, { metadata: { labels: { app: 'b' } } }, { type: 'merge' })
  await client.delete({ ...CM, namespace: 'default', name: 'one' })
  await eventually(t, 'the delete', () => log.includes('delete one'))
  t.same(log, ['add pre 0', 'add one 1', 'update one 1->2', 'update one 2->3', 'update one 3->4', 'update pre 0->0', 'delete one'])
  t.equal(inf.get('default', 'pre')?.metadata.labels?.app, 'b')
  t.equal(inf.get('default', 'one'), undefined)
  t.same(inf.list('default').map((o) => o.metadata.name), ['pre'])
  t.same(inf.list('other'), [])
  t.same(inf.list().length, 1)
  t.same(inf.keys(), ['default/pre'])
  t.same(inf.byIndex('app', 'b').map((o) => o.metadata.name), ['pre'], 'the index follows the label change')
  t.same(inf.byIndex('app', 'a'), [])
  inf.addIndex('late', byLabel('app'))
  t.same(inf.byIndex('late', 'b').map((o) => o.metadata.name), ['pre'], 'a late index covers cached objects')
  t.throws(() => inf.byIndex('nope', 'x'), /no index/)
})

t.test('a label selector caches only matching objects; leaving the selector is a delete', async (t) => {
  const { client } = await setup(t)
  const inf = informer(t, client, { labelSelector: 'managed=yes', namespace: 'default', transform: stripManagedFields })
  const m = mirror(inf)
  inf.start()
  await inf.waitForSync()
  await client.create(cm('in', {}, { managed: 'yes' }))
  await client.create(cm('out', {}, { managed: 'no' }))
  await eventually(t, 'the matching object', () => inf.get('default', 'in') !== undefined)
  t.equal(inf.get('default', 'in')?.metadata.managedFields, undefined, 'transformed before caching')
  await client.patch({ ...CM, namespace: 'default', name: 'in' }, { metadata: { labels: { managed: 'no' } } }, { type: 'merge' })
  await eventually(t, 'the delete', () => m.counts.delete === 1)
  t.same(inf.keys(), [])
  t.same(m.violations, [])
})

t.test('a periodic resync hands every cached object to onUpdate as (obj, obj)', async (t) => {
  const { client } = await setup(t)
  await client.create(cm('a'))
  await client.create(cm('b'))
  const inf = informer(t, client, { resyncPeriodMs: 20 })
  const resynced = new Set<string>()
  inf.onUpdate((old, o) => {
    if (old === o) resynced.add(objectKey(o))
  })
  inf.start()
  await eventually(t, 'a resync of both', () => resynced.size === 2)
  t.same([...resynced].sort(), ['default/a', 'default/b'])
})

t.test('a failing list is retried with backoff until it succeeds', async (t) => {
  const { client, sb } = await setup(t)
  await client.create(cm('a'))
  sb.faults.set({ errorRate: 1, verbs: ['list'] })
  const errors: [string, InformerPhase][] = []
  const inf = informer(t, client, { onError: (e, phase) => errors.push([e.message, phase]) })
  const m = mirror(inf)
  inf.start()
  await eventually(t, 'three failed lists', () => errors.length >= 3)
  t.notOk(inf.hasSynced())
  t.ok(errors.every(([, phase]) => phase === 'list'))
  sb.faults.set({})
  t.equal(await inf.waitForSync(), true)
  t.same([...m.state.keys()], ['default/a'])
  t.same(m.violations, [])
})

t.test('dropped watches are resumed without losing or duplicating an event', async (t) => {
  const { client, sb } = await setup(t)
  for (let i = 0; i < 10; i++) await client.create(cm(`obj-${i}`, { n: '0' }))
  const errors: string[] = []
  const inf = informer(t, client, { onError: (e) => errors.push(e.message) })
  const m = mirror(inf)
  inf.start()
  await inf.waitForSync()
  sb.faults.set({ watchDropS: 0.03 })
  // A writer churns while watches keep being cut: updates, deletes, re-creations.
  for (let round = 1; round <= 40; round++) {
    const i = round % 10
    const name = `obj-${i}`
    if (round % 7 === 0) await client.delete({ ...CM, namespace: 'default', name })
    else if (round % 7 === 1 && round > 7) await client.create(cm(name, { n: String(round) })).catch(() => undefined)
    else await client.patch({ ...CM, namespace: 'default', name }, { data: { n: String(round) } }, { type: 'merge' }).catch(() => undefined)
    await new Promise((r) => setTimeout(r, 3))
  }
  sb.faults.set({})
  const server = await serverState(client)
  await eventually(t, 'the cache to match the server', () => same(m.state, server))
  t.same(m.violations, [], 'every event applied to a consistent view')
  t.ok(errors.some((e) => /dropped/.test(e)), 'watches were in fact dropped')
  t.ok(same(new Map(inf.list().map((o) => [objectKey(o), o.metadata.resourceVersion ?? ''])), server), 'the cache equals the server')
})

t.test('410 Expired relists and turns the difference into deletes, updates and adds', async (t) => {
  const { client, sb } = await setup(t, { historyWindow: 3 })
  for (const n of ['keep', 'change', 'remove']) await client.create(cm(n, { v: '0' }))
  const inf = informer(t, client)
  const m = mirror(inf)
  const log: string[] = []
  inf.onAdd((o) => log.push(`add ${o.metadata.name}`))
  inf.onUpdate((_, o) => log.push(`update ${o.metadata.name}`))
  inf.onDelete((o) => log.push(`delete ${o.metadata.name}`))
  inf.start()
  await inf.waitForSync()
  log.length = 0
  const listsBefore = sb.requests.counts().byVerb.list ?? 0
  // Cut the watch and make resuming it impossible, then change the world while it is away.
  sb.faults.set({ paused: false, watchDropS: 0.02, expireOnResume: true, verbs: ['watch'] })
  await eventually(t, 'a relist', () => (sb.requests.counts().byVerb.list ?? 0) > listsBefore)
  sb.faults.set({ expireOnResume: true, verbs: ['watch'] })
  await client.patch({ ...CM, namespace: 'default', name: 'change' }, { data: { v: '1' } }, { type: 'merge' })
  await client.delete({ ...CM, namespace: 'default', name: 'remove' })
  await client.create(cm('new', { v: '0' }))
  // Every watch resume now expires: only relists (with backoff) can see the changes.
  const server = await serverState(client)
  await eventually(t, 'the cache to match the server', () => same(m.state, server))
  sb.faults.set({})
  t.same(m.violations, [])
  t.same(log.sort(), ['add new', 'delete remove', 'update change'])
  t.notOk(log.includes('add keep') || log.includes('add change'), 'no second ADDED for known objects')
  t.notOk(log.includes('update keep'), 'an unchanged object is not reported')
})

t.test('a recreated object with a new uid is a delete and an add after a relist', async (t) => {
  const { client, sb } = await setup(t)
  await client.create(cm('phoenix', { v: '0' }))
  const errors: string[] = []
  const inf = informer(t, client, { onError: (e) => errors.push(e.message) })
  const log: string[] = []
  inf.onAdd((o) => log.push(`add ${o.metadata.uid ?? ''}`))
  inf.onDelete((o) => log.push(`delete ${o.metadata.uid ?? ''}`))
  inf.onUpdate(() => log.push('update'))
  inf.start()
  await inf.waitForSync()
  const oldUid = inf.get('default', 'phoenix')?.metadata.uid ?? ''
  await eventually(t, 'the watch to be open', () => (sb.requests.counts().byVerb.watch ?? 0) > 0)
  // Cut the watch and hold new requests, so the delete and re-create are seen only by a relist.
  sb.faults.set({ paused: true, watchDropS: 0.01 })
  await eventually(t, 'the watch to drop', () => errors.some((e) => /dropped/.test(e)))
  sb.cluster.respond({ verb: 'delete', group: '', version: 'v1', resource: 'configmaps', namespace: 'default', name: 'phoenix', query: new URLSearchParams() })
  sb.cluster.respond({ verb: 'create', group: '', version: 'v1', resource: 'configmaps', namespace: 'default', body: cm('phoenix', { v: '1' }) as never, query: new URLSearchParams() })
  sb.faults.set({ expireOnResume: true })
  await eventually(t, 'the new uid', () => (inf.get('default', 'phoenix')?.metadata.uid ?? oldUid) !== oldUid)
  sb.faults.set({})
  const newUid = inf.get('default', 'phoenix')?.metadata.uid ?? ''
  t.same(log, [`add ${oldUid}`, `delete ${oldUid}`, `add ${newUid}`])
})

t.test('handler exceptions are reported and do not stop the informer', async (t) => {
  const { client } = await setup(t)
  const errors: [string, InformerPhase][] = []
  const inf = informer(t, client, {
    onError: (e, p) => errors.push([e.message, p]),
    transform: (o) => {
      if (o.metadata.name === 'b') throw new Error('transform failed')
      return o
    },
  })
  inf.addIndex('boom', () => {
    throw new Error('index failed')
  })
  inf.onAdd(() => {
    throw new Error('handler failed')
  })
  const seen: string[] = []
  inf.onAdd((o) => seen.push(o.metadata.name ?? ''))
  inf.start()
  await inf.waitForSync()
  await client.create(cm('a'))
  await client.create(cm('b'))
  await eventually(t, 'both adds', () => seen.length === 2)
  t.same(seen, ['a', 'b'])
  t.ok(errors.some(([m, p]) => m === 'handler failed' && p === 'handler'))
  t.ok(errors.some(([m]) => m === 'index failed'))
  t.ok(errors.some(([m, p]) => m === 'transform failed' && p === 'handler'))
  t.equal(inf.get('default', 'b')?.metadata.name, 'b', 'an object whose transform failed is cached as it came')
  t.same(inf.byIndex('boom', 'x'), [])
})

t.test('stop before sync resolves waiters with false; stop is idempotent and leaves nothing running', async (t) => {
  const { client, sb } = await setup(t)
  sb.faults.set({ paused: true })
  const inf = informer(t, client)
  inf.start()
  const sync = inf.waitForSync()
  await new Promise((r) => setTimeout(r, 10))
  inf.stop()
  inf.stop()
  t.equal(await sync, false)
  t.equal(await inf.waitForSync(), false)
  inf.start()
  t.notOk(inf.hasSynced(), 'a stopped informer does not start again')
  sb.faults.set({})
})

t.test('chaos: failing lists and watches, drops and a short history still converge without a bad event', async (t) => {
  const { client, sb } = await setup(t, { historyWindow: 20 })
  for (let i = 0; i < 20; i++) await client.create(cm(`c-${i}`, { n: '0' }, { keep: i % 2 === 0 ? 'yes' : 'no' }))
  const inf = informer(t, client, { labelSelector: 'keep=yes' })
  const m = mirror(inf)
  inf.start()
  await inf.waitForSync()
  sb.faults.set({ errorRate: 0.3, watchDropS: 0.02, verbs: ['list', 'watch'], seed: 7 })
  for (let round = 1; round <= 120; round++) {
    const i = (round * 7) % 20
    const name = `c-${i}`
    const r = round % 5
    if (r === 0) await client.delete({ ...CM, namespace: 'default', name }).catch(() => undefined)
    else if (r === 1) await client.create(cm(name, { n: String(round) }, { keep: 'yes' })).catch(() => undefined)
    else if (r === 2) await client.patch({ ...CM, namespace: 'default', name }, { metadata: { labels: { keep: round % 3 === 0 ? 'no' : 'yes' } } }, { type: 'merge' }).catch(() => undefined)
    else await client.patch({ ...CM, namespace: 'default', name }, { data: { n: String(round) } }, { type: 'merge' }).catch(() => undefined)
    if (round % 10 === 0) await new Promise((r) => setTimeout(r, 5))
  }
  sb.faults.set({})
  const server = await serverState(client, 'keep=yes')
  await eventually(t, 'the cache to match the server', () => same(m.state, server))
  t.same(m.violations, [])
  t.ok(m.counts.delete > 0 && m.counts.update > 0 && m.counts.add > 10)
})
