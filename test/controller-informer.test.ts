/**
 * The informer against the sandbox: initial list, events in order, indexes, label selection,
 * resync, and recovery from dropped watches, 410 Expired and failing lists without losing or
 * duplicating an event.
 */
import t, { type Test } from 'tap'
import net, { type AddressInfo } from 'node:net'
import { recordingProxy, type ProxyReply } from './support/proxy.ts'
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
  // The first list is a watch-list; when it fails, a paginated list is tried: both fail.
  sb.faults.set({ errorRate: 1, verbs: ['list', 'watch'] })
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
  const watchesBefore = sb.requests.counts().byVerb.watch ?? 0
  // Cut the watch and make resuming it impossible, then change the world while it is away.
  sb.faults.set({ paused: false, watchDropS: 0.02, expireOnResume: true, verbs: ['watch'] })
  // A relist is a watch-list: a resume refused, then the watch-list.
  await eventually(t, 'a relist', () => (sb.requests.counts().byVerb.watch ?? 0) > watchesBefore + 1)
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

/** A client of the sandbox reached at `url` over plain HTTP (a proxy in front of it). */
function clientAt(t: Test, url: string, requestTimeoutMs?: number): KubeClient {
  const kc = new KubeConfig()
  kc.loadFromOptions({ clusters: [{ name: 'c', server: url, skipTLSVerify: false }], users: [{ name: 'u', token: 'sandbox' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' })
  const client = new KubeClient(kc, { userAgent: 'informer-test/v0.0.0', ...(requestTimeoutMs ? { requestTimeoutMs } : {}) })
  t.teardown(() => client.close())
  return client
}

/**
 * A TCP proxy that goes dark the way a broken network path does: after `blackhole()` the
 * connections open at that moment forward nothing more either way and are never closed (no FIN,
 * no RST); while `stall` is set, new connections are accepted and never forwarded. `requests`
 * holds the request target (path and query) of every request forwarded.
 */
async function darkProxy(t: Test, upstream: string): Promise<{ url: string; requests: string[]; blackhole: () => void; stall: boolean }> {
  const target = new URL(upstream)
  const conns = new Set<{ client: net.Socket; server: net.Socket; dark: boolean }>()
  const state = {
    url: '',
    requests: [] as string[],
    stall: false,
    blackhole: (): void => {
      for (const c of conns) c.dark = true
    },
  }
  const proxy = net.createServer((client) => {
    const c = { client, server: net.connect(Number(target.port), target.hostname), dark: state.stall }
    conns.add(c)
    const end = (): void => {
      conns.delete(c)
      client.destroy()
      c.server.destroy()
    }
    client.on('data', (d: Buffer) => {
      if (c.dark) return
      for (const m of d.toString('latin1').matchAll(/^[A-Z]+ (\S+) HTTP\/1\.1\r$/gm)) state.requests.push(m[1] ?? '')
      c.server.write(d)
    })
    c.server.on('data', (d: Buffer) => {
      if (!c.dark) client.write(d)
    })
    client.on('close', end)
    client.on('error', end)
    c.server.on('error', end)
    c.server.on('close', () => {
      if (!c.dark) end()
    })
  })
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  t.teardown(
    () =>
      new Promise<void>((r) => {
        for (const c of conns) {
          c.client.destroy()
          c.server.destroy()
        }
        proxy.close(() => r())
      }),
  )
  state.url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  return state
}

function params(target: string): Record<string, string> {
  return Object.fromEntries(new URL(target, 'http://x').searchParams)
}

t.test('a watch that goes silent (no bytes, no FIN) is replaced after the idle timeout from its last resourceVersion, as client-go finds a dead connection and bookmarks prove a live one', async (t) => {
  const { sb, client: direct } = await setup(t, { bookmarkIntervalMs: 50 })
  for (let i = 0; i < 3; i++) await direct.create(cm(`obj-${i}`, { n: '0' }))
  const proxy = await darkProxy(t, sb.url)
  // The request timeout bounds the wait for a watch's response headers too.
  const client = clientAt(t, proxy.url, 400)
  const errors: string[] = []
  let rvWhenGivenUp: string | undefined
  const inf = informer(t, client, {
    namespace: 'default',
    watchIdleTimeoutMs: 400,
    onError: (e) => {
      errors.push(e.message)
      if (/no data for 400 ms/.test(e.message)) rvWhenGivenUp ??= inf.resourceVersion
    },
  })
  const m = mirror(inf)
  inf.start()
  await inf.waitForSync()
  await direct.create(cm('seen'))
  await eventually(t, 'the watch to deliver', () => m.state.has('default/seen'))
  t.same(errors, [], 'bookmarks keep a quiet, healthy watch from being taken for dead')
  proxy.blackhole()
  proxy.stall = true
  const sent = proxy.requests.length
  await direct.patch({ ...CM, namespace: 'default', name: 'obj-0' }, { data: { n: '1' } }, { type: 'merge' })
  await direct.delete({ ...CM, namespace: 'default', name: 'obj-1' })
  await direct.create(cm('while-dark'))
  await eventually(t, 'the silent watch to be given up', () => rvWhenGivenUp !== undefined)
  t.notOk(m.state.has('default/while-dark'), 'nothing came through the dead connection')
  await eventually(t, 'a re-watch that gets no response headers to be given up', () => errors.some((e) => /no response headers within 400 ms/.test(e)))
  proxy.stall = false
  const server = await serverState(direct)
  await eventually(t, 'the cache to match the server', () => same(m.state, server))
  t.same(m.violations, [])
  const after = proxy.requests.slice(sent)
  t.ok(after.length > 0 && after.every((r) => params(r).watch === 'true'), 'only watches after the cut: no relist')
  t.same(params(after[0] ?? ''), { watch: 'true', allowWatchBookmarks: 'true', resourceVersion: rvWhenGivenUp ?? '', timeoutSeconds: params(after[0] ?? '').timeoutSeconds ?? '' }, 're-watched from the last resourceVersion, with bookmarks')
})

/** The query parameters of every request for default's ConfigMaps that reaches the proxy, in order; `reply` may answer instead of the server. */
async function recordedClient(t: Test, sb: Sandbox, reply?: (q: Record<string, string>) => ProxyReply | void, replyWatch?: (q: Record<string, string>) => ProxyReply | void): Promise<{ client: KubeClient; lists: Record<string, string>[]; watches: Record<string, string>[] }> {
  const lists: Record<string, string>[] = []
  const watches: Record<string, string>[] = []
  const url = await recordingProxy(
    t,
    sb.url,
    (req) => {
      if (req.url !== '/api/v1/namespaces/default/configmaps' && !req.url?.startsWith('/api/v1/namespaces/default/configmaps?')) return
      const q = params(req.url)
      if (q.watch === 'true') {
        watches.push(q)
        return replyWatch?.(q)
      } else {
        lists.push(q)
        return reply?.(q)
      }
    },
    'Bearer sandbox',
  )
  return { client: clientAt(t, url), lists, watches }
}

function manyConfigMaps(sb: Sandbox, n: number): void {
  for (let i = 0; i < n; i++) sb.cluster.respond({ verb: 'create', group: '', version: 'v1', resource: 'configmaps', namespace: 'default', body: cm(`many-${String(i).padStart(4, '0')}`) as never, query: new URLSearchParams() })
}

const status = (code: number, reason: string, message: string, details?: unknown): ProxyReply => ({ status: code, body: JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code, ...(details ? { details } : {}) }) })

t.test('the first list is a watch-list from no resourceVersion, as client-go\'s reflector with WatchListClient, and its stream goes on as the watch; no list is sent', async (t) => {
  const { sb, client: direct } = await setup(t)
  manyConfigMaps(sb, 501)
  const { client, lists, watches } = await recordedClient(t, sb)
  const inf = informer(t, client, { namespace: 'default' })
  const m = mirror(inf)
  inf.start()
  await inf.waitForSync()
  t.same(lists, [], 'no list at all, so never a resourceVersion=0 list the watch cache answers in one piece')
  t.equal(watches.length, 1)
  const timeout = Number(watches[0]?.timeoutSeconds)
  t.same(watches[0], { watch: 'true', allowWatchBookmarks: 'true', sendInitialEvents: 'true', resourceVersionMatch: 'NotOlderThan', timeoutSeconds: String(timeout) }, 'no resourceVersion: the latest state')
  t.ok(timeout >= 300 && timeout < 600, 'a server-side timeout of 5–10 minutes')
  t.equal(m.counts.add, 501)
  t.equal(inf.resourceVersion, String(sb.cluster.store.resourceVersion), 'at the initial-events-end bookmark\'s resourceVersion')
  await direct.create(cm('later'))
  await eventually(t, 'a change on the same stream', () => m.state.has('default/later'))
  t.equal(watches.length, 1, 'no second watch')
  t.same(m.violations, [])
})

t.test('a server that refuses watch-lists (422) is listed consistently in pages of 500, never at resourceVersion=0, and so are its relists', async (t) => {
  const { sb } = await setup(t)
  manyConfigMaps(sb, 501)
  const refusal = status(422, 'Invalid', 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch')
  const errors: string[] = []
  const { client, lists, watches } = await recordedClient(t, sb, undefined, (q) => (q.sendInitialEvents ? refusal : undefined))
  const inf = informer(t, client, { namespace: 'default', onError: (e) => errors.push(e.message) })
  const m = mirror(inf)
  inf.start()
  await inf.waitForSync()
  t.equal(watches[0]?.sendInitialEvents, 'true', 'a watch-list first')
  t.equal(lists.length, 2)
  t.same(lists[0], { limit: '500' }, 'then a consistent list, which a real server paginates')
  t.same(Object.keys(lists[1] ?? {}).sort(), ['continue', 'limit'], 'a later page carries its token and no resourceVersion')
  t.equal(m.counts.add, 501)
  t.same(errors, [], 'a refused watch-list is no failure')
  await eventually(t, 'the watch', () => watches.length > 1)
  t.equal(watches[1]?.resourceVersion, inf.resourceVersion)
  t.equal(watches[1]?.sendInitialEvents, undefined)
  sb.faults.set({ watchDropS: 0.02, expireOnResume: true, verbs: ['watch'] })
  await eventually(t, 'a relist', () => lists.length > 2)
  sb.faults.set({})
  t.same(lists[2], { limit: '500' }, 'a relist pages too, and tries no watch-list again')
  t.equal(watches.filter((q) => q.sendInitialEvents).length, 1)
  t.same(m.violations, [])
})

t.test('a 410 Expired on a later page lists again in one piece, as client-go\'s pager', async (t) => {
  const { sb } = await setup(t)
  manyConfigMaps(sb, 501)
  let expired = 0
  const { client, lists } = await recordedClient(t, sb, (q) => {
    if (q.continue && expired++ === 0) return status(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.')
  })
  const inf = informer(t, client, { namespace: 'default', watchList: false })
  const m = mirror(inf)
  inf.start()
  await inf.waitForSync()
  t.same(lists.map((q) => Object.keys(q).sort().join('&')), ['limit', 'continue&limit', ''])
  t.equal(m.counts.add, 501, 'the first page is not added twice')
  t.same(m.violations, [])
})

t.test('a relist is a watch-list from the last resourceVersion; when the server has it no longer (410) or not yet (504 too large) it is asked again at once without one, as client-go\'s reflector', async (t) => {
  const { sb, client: direct } = await setup(t)
  for (const n of ['a', 'b']) await direct.create(cm(n))
  let refused = 0
  const expiredEvent = (rv: string): ProxyReply => ({ status: 200, body: JSON.stringify({ type: 'ERROR', object: JSON.parse(status(410, 'Expired', `too old resource version: ${rv} (1)`).body) }) + '\n' })
  const { client, lists, watches } = await recordedClient(t, sb, undefined, (q) => {
    if (!q.sendInitialEvents || q.resourceVersion === undefined) return
    return refused++ % 2 === 0 ? status(504, 'Timeout', `Too large resource version: ${q.resourceVersion}, current: 1`, { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 }) : expiredEvent(q.resourceVersion)
  })
  const errors: string[] = []
  const inf = informer(t, client, { namespace: 'default', onError: (e) => errors.push(e.message) })
  const m = mirror(inf)
  inf.start()
  await inf.waitForSync()
  const synced = inf.resourceVersion
  sb.faults.set({ watchDropS: 0.02, expireOnResume: true, verbs: ['watch'] })
  await eventually(t, 'two refused relists, each followed by one without a resourceVersion', () => refused >= 2 && watches.at(-1)?.sendInitialEvents === 'true' && watches.at(-1)?.resourceVersion === undefined)
  sb.faults.set({})
  const relists = watches.filter((q) => q.sendInitialEvents)
  t.same(relists[0], { watch: 'true', allowWatchBookmarks: 'true', sendInitialEvents: 'true', resourceVersionMatch: 'NotOlderThan', timeoutSeconds: relists[0]?.timeoutSeconds ?? '' }, 'the first list: no resourceVersion')
  t.equal(relists[1]?.resourceVersion, synced, 'the relist after an expired watch: the last resourceVersion seen')
  t.equal(relists[2]?.resourceVersion, undefined, 'refused, then at once without one')
  await direct.create(cm('c'))
  const server = await serverState(direct)
  await eventually(t, 'the cache to match the server', () => same(m.state, server))
  t.same(m.violations, [])
  t.same(lists, [], 'never a list')
  t.notOk(errors.some((e) => /Too large|too old/.test(e)), 'a missing resourceVersion is handled, not reported')
})
