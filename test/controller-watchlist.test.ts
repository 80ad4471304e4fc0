/**
 * The informer against a scripted server, for what the sandbox cannot show: a watch-list's
 * objects are transformed one by one while they stream (client-go's reflector `watchList` keeps
 * them in a temporary store until the `k8s.io/initial-events-end` bookmark), no list is ever sent,
 * and a quiet watch, which a real server leaves without a byte until its timeout (apiserver
 * `pkg/storage/cacher/cache_watcher.go`), is neither cut early nor reported.
 */
import t, { type Test } from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { KubeConfig } from '@kubernetes/client-node'
import { KubeClient, type KubeObject, type WatchOptions } from '../operator/controller/client.ts'
import { Informer, INITIAL_EVENTS_END } from '../operator/controller/informer.ts'

const NP = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' }

interface Script {
  /** Called for each watch request with its response, which it may keep open. */
  watch: (q: URLSearchParams, res: http.ServerResponse) => void
}

async function scriptedServer(t: Test, script: Script): Promise<{ client: KubeClient; requests: URLSearchParams[]; lists: number }> {
  const state = { requests: [] as URLSearchParams[], lists: 0, client: undefined as unknown as KubeClient }
  const srv = http.createServer((req, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams
    state.requests.push(q)
    if (q.get('watch') === 'true') {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' })
      res.flushHeaders()
      script.watch(q, res)
      return
    }
    state.lists++
    res.writeHead(200, { 'Content-Type': 'application/json' })
    res.end(JSON.stringify({ ...NP, kind: 'NetworkPolicyList', metadata: { resourceVersion: '5' }, items: [] }))
  })
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  t.teardown(
    () =>
      new Promise<void>((r) => {
        srv.closeAllConnections()
        srv.close(() => r())
      }),
  )
  const kc = new KubeConfig()
  kc.loadFromOptions({ clusters: [{ name: 'c', server: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' })
  state.client = new KubeClient(kc, { userAgent: 'watchlist-test' })
  t.teardown(() => state.client.close())
  return state
}

function policy(i: number): KubeObject {
  return { ...NP, metadata: { name: `np-${i}`, namespace: 'default', resourceVersion: String(10 + i), managedFields: [{ manager: 'm' }] as never }, spec: { podSelector: {} } }
}

const line = (type: string, object: unknown): string => JSON.stringify({ type, object }) + '\n'
const endBookmark = (rv: string): string => line('BOOKMARK', { ...NP, metadata: { resourceVersion: rv, annotations: { [INITIAL_EVENTS_END]: 'true' } } })

async function eventually(t: Test, what: string, pred: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms
  while (!pred()) {
    if (Date.now() > until) {
      t.fail(`timed out waiting for: ${what}`)
      return
    }
    await new Promise((r) => setTimeout(r, 5))
  }
}

t.test('a watch-list\'s objects are transformed one by one as they stream, before the initial-events-end bookmark; no list is sent', async (t) => {
  let open: http.ServerResponse | undefined
  const server = await scriptedServer(t, {
    watch: (_q, res) => {
      open = res
      for (let i = 0; i < 50; i++) res.write(line('ADDED', policy(i)))
    },
  })
  let transformed = 0
  const inf = new Informer(server.client, {
    ...NP,
    transform: (o) => {
      transformed++
      const { managedFields: _drop, ...metadata } = o.metadata
      return { ...o, metadata }
    },
  })
  t.teardown(() => inf.stop())
  inf.start()
  await eventually(t, 'every streamed object transformed', () => transformed === 50)
  t.equal(inf.hasSynced(), false, 'not synced before the bookmark: the objects are held transformed, not as a list')
  t.same(inf.keys(), [], 'nor cached')
  open?.write(endBookmark('99'))
  t.equal(await inf.waitForSync(), true)
  t.equal(inf.keys().length, 50)
  t.equal(inf.get('default', 'np-7')?.metadata.managedFields, undefined, 'cached as transformed')
  t.equal(inf.resourceVersion, '99')
  open?.write(line('MODIFIED', { ...policy(7), metadata: { ...policy(7).metadata, resourceVersion: '100' } }))
  await eventually(t, 'the change on the same stream', () => inf.resourceVersion === '100')
  t.equal(transformed, 51)
  t.equal(server.lists, 0, 'never a list')
  t.equal(server.requests.length, 1)
  const q = server.requests[0]
  t.equal(q?.get('sendInitialEvents'), 'true')
  t.equal(q?.get('resourceVersionMatch'), 'NotOlderThan')
  t.equal(q?.get('allowWatchBookmarks'), 'true')
  t.equal(q?.get('resourceVersion'), null, 'the first watch-list asks for the latest state')
})

t.test('a watch-list that ends before its bookmark falls back to one consistent paginated list, and says so', async (t) => {
  const server = await scriptedServer(t, {
    watch: (q, res) => {
      if (q.get('sendInitialEvents') === 'true') {
        res.write(line('ADDED', policy(1)))
        res.end()
      }
    },
  })
  const errors: string[] = []
  const inf = new Informer(server.client, { ...NP, onError: (e) => errors.push(e.message) })
  t.teardown(() => inf.stop())
  inf.start()
  t.equal(await inf.waitForSync(), true)
  t.equal(server.lists, 1)
  const list = server.requests.find((q) => q.get('watch') !== 'true')
  t.equal(list?.get('limit'), '500')
  t.equal(list?.get('resourceVersion'), null, 'consistent: not resourceVersion=0, which a real server answers in one piece')
  t.match(errors, [/ended before its initial-events-end bookmark/])
  t.same(inf.keys(), [], 'the half-streamed state is dropped; the list is the state')
})

t.test('the idle limit of a watch exceeds its server-side timeout, so a quiet healthy watch is ended by the server', async (t) => {
  const seen: WatchOptions[] = []
  const stub = {
    list: async () => ({ ...NP, metadata: { resourceVersion: '1' }, items: [], paginated: false }),
    watch: (_ref: unknown, opts: WatchOptions) => {
      seen.push(opts)
      return () => {}
    },
  } as unknown as KubeClient
  const inf = new Informer(stub, { ...NP, watchTimeoutSeconds: 600 })
  inf.start()
  await eventually(t, 'the watch', () => seen.length > 0)
  inf.stop()
  t.equal(seen.length, 1)
  t.equal(seen[0]?.timeoutSeconds, 600)
  t.ok((seen[0]?.idleTimeoutMs ?? 0) >= 600_000 + 30_000, `idle limit ${seen[0]?.idleTimeoutMs} ms: timeoutSeconds + slack`)
  const random = new Informer(stub, { ...NP, random: () => 0.99 })
  random.start()
  await eventually(t, 'the watch', () => seen.length > 1)
  random.stop()
  t.ok((seen[1]?.idleTimeoutMs ?? 0) >= (seen[1]?.timeoutSeconds ?? Infinity) * 1000 + 30_000, 'with the default, random timeout too')
})

t.test('a quiet watch the server ends at its timeout is resumed at once and not reported', async (t) => {
  const server = await scriptedServer(t, {
    watch: (q, res) => {
      if (q.get('sendInitialEvents') === 'true') res.write(endBookmark('5'))
      // Nothing more, as kube-apiserver on a type nobody writes; ended at timeoutSeconds.
      setTimeout(() => res.end(), Number(q.get('timeoutSeconds')) * 1000).unref()
    },
  })
  const errors: string[] = []
  const inf = new Informer(server.client, { ...NP, watchTimeoutSeconds: 1, onError: (e) => errors.push(e.message) })
  t.teardown(() => inf.stop())
  inf.start()
  await inf.waitForSync()
  await eventually(t, 'two re-watches', () => server.requests.length >= 3)
  t.same(errors, [], 'an expected end is no failure')
  t.same(
    server.requests.slice(1).map((q) => q.get('resourceVersion')),
    server.requests.slice(1).map(() => '5'),
    'resumed from where it was',
  )
  t.equal(server.requests[1]?.get('sendInitialEvents'), null, 'a plain watch, not a relist')
})

t.test('a watch-list\'s DELETED before the bookmark drops the object; an ERROR event falls back to a paginated list, reported', async (t) => {
  let attempt = 0
  const server = await scriptedServer(t, {
    watch: (q, res) => {
      if (q.get('sendInitialEvents') !== 'true') return
      attempt++
      if (attempt === 1) {
        res.write(line('ADDED', policy(1)) + line('ADDED', policy(2)) + line('DELETED', policy(1)) + endBookmark('20'))
        // Then the watch expires: a relist, which is a watch-list again, from the last resourceVersion.
        setTimeout(() => {
          res.write(line('ERROR', { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'too old resource version: 20 (30)', reason: 'Expired', code: 410 }))
          res.end()
        }, 50)
        return
      }
      res.write(line('ERROR', { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'etcd is unhappy', reason: 'InternalError', code: 500 }))
      res.end()
    },
  })
  const errors: string[] = []
  const inf = new Informer(server.client, { ...NP, onError: (e) => errors.push(e.message) })
  t.teardown(() => inf.stop())
  inf.start()
  await inf.waitForSync()
  t.same(inf.keys(), ['default/np-2'])
  t.equal(inf.resourceVersion, '20')
  await eventually(t, 'the fallback list', () => server.lists > 0)
  t.equal(server.requests[1]?.get('sendInitialEvents'), 'true', 'the relist is a watch-list')
  t.equal(server.requests[1]?.get('resourceVersion'), '20', 'from the last resourceVersion')
  t.match(errors, [/etcd is unhappy/], 'its ERROR reported')
  await eventually(t, 'the paginated list loaded', () => inf.keys().length === 0)
  t.same(inf.keys(), [], 'the list is the state: np-2 is gone')
})
