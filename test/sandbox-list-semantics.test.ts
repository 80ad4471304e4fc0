/**
 * Lists and watches as kube-apiserver serves them:
 * - a `resourceVersion=0` list comes from the watch cache, which ignores `limit` (kubernetes
 *   `test/integration/apiserver/apiserver_test.go` `testListOptionsCase`; apiserver
 *   `pkg/storage/cacher` `shouldDelegateList`), while a consistent list (`resourceVersion` unset)
 *   or one at an exact version with `limit` goes to etcd and is paginated;
 * - the list and watch options apimachinery refuses (`pkg/apis/meta/internalversion/validation`);
 * - a watch-list (`sendInitialEvents=true`): the initial ADDED events, then a BOOKMARK annotated
 *   `k8s.io/initial-events-end: "true"`, then live events;
 * - periodic bookmarks only once the watched type's resourceVersion has moved past the watch's
 *   own (apiserver `pkg/storage/cacher/cache_watcher.go` `process`).
 */
import t from 'tap'
import { createCluster } from '../operator/sandbox/index.ts'
import { servedByWatchCache } from '../operator/sandbox/list-watch.ts'
import { call, collect, configMap, tick, until } from './support/sandbox-requests.ts'

const CM = '/api/v1/namespaces/default/configmaps'
const SYS_CM = '/api/v1/namespaces/kube-system/configmaps'

function withConfigMaps(n: number): ReturnType<typeof createCluster> {
  const c = createCluster({ bookmarkIntervalMs: 10 })
  for (let i = 0; i < n; i++) t.equal(call(c, `POST ${CM}`, configMap(`cm-${String(i).padStart(2, '0')}`)).status, 201)
  return c
}

t.test('resourceVersion=0 with a limit is answered by the watch cache: every item, no continue', async (t) => {
  const c = withConfigMaps(5)
  const r = call(c, `GET ${CM}?resourceVersion=0&limit=2`)
  t.equal(r.status, 200)
  t.equal(r.body.items.length, 5, 'limit is ignored if the watch cache is hit')
  t.equal(r.body.metadata.continue, undefined)
  t.equal(r.body.metadata.remainingItemCount, undefined)
  const nto = call(c, `GET ${CM}?resourceVersion=0&resourceVersionMatch=NotOlderThan&limit=2`)
  t.equal(nto.body.items.length, 5, 'NotOlderThan 0 is the watch cache too')
})

t.test('a consistent list with a limit is paginated from etcd with continue tokens', async (t) => {
  const c = withConfigMaps(5)
  const names: string[] = []
  let token = ''
  let pages = 0
  do {
    const r = call(c, `GET ${CM}?limit=2${token ? `&continue=${token}` : ''}`)
    t.equal(r.status, 200)
    t.ok(r.body.items.length <= 2)
    names.push(...r.body.items.map((i: { metadata: { name: string } }) => i.metadata.name))
    token = r.body.metadata.continue ?? ''
    if (token) t.equal(r.body.metadata.remainingItemCount, 5 - names.length)
    pages++
  } while (token)
  t.equal(pages, 3)
  t.same(names, ['cm-00', 'cm-01', 'cm-02', 'cm-03', 'cm-04'])
  const exact = call(c, `GET ${CM}?resourceVersion=${c.store.resourceVersion}&limit=2`)
  t.equal(exact.body.items.length, 2, 'a limit with a resourceVersion other than 0 goes to etcd and pages')
  t.ok(exact.body.metadata.continue)
})

t.test('which lists the watch cache answers (shouldDelegateList)', async (t) => {
  const q = (s: string): URLSearchParams => new URLSearchParams(s)
  t.equal(servedByWatchCache(q('resourceVersion=0&limit=500')), true)
  t.equal(servedByWatchCache(q('resourceVersion=0')), true)
  t.equal(servedByWatchCache(q('resourceVersion=42')), true, 'no limit: the cache')
  t.equal(servedByWatchCache(q('limit=500')), false, 'a consistent read')
  t.equal(servedByWatchCache(q('')), false)
  t.equal(servedByWatchCache(q('resourceVersion=42&limit=500')), false)
  t.equal(servedByWatchCache(q('resourceVersion=0&continue=x')), false)
  t.equal(servedByWatchCache(q('resourceVersion=42&resourceVersionMatch=Exact')), false)
})

t.test('list and watch options are refused as apimachinery validates them', async (t) => {
  const c = withConfigMaps(1)
  const cases: [string, number, string][] = [
    [`GET ${CM}?resourceVersionMatch=NotOlderThan`, 422, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided'],
    [`GET ${CM}?resourceVersion=0&resourceVersionMatch=Exact`, 422, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'],
    [`GET ${CM}?resourceVersion=1&resourceVersionMatch=Newest`, 422, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""'],
    [`GET ${CM}?sendInitialEvents=true`, 422, 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list'],
  ]
  for (const [line, code, message] of cases) {
    const r = call(c, line)
    t.equal(r.status, code, line)
    t.equal(r.body.message, message, line)
    t.equal(r.body.reason, 'Invalid', line)
  }
  const watches: [string, string][] = [
    [`GET ${CM}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true`, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'],
    [`GET ${CM}?watch=true&resourceVersionMatch=NotOlderThan`, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'],
    [
      `GET ${CM}?watch=true&sendInitialEvents=true&resourceVersionMatch=Exact`,
      'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]',
    ],
  ]
  for (const [line, message] of watches) {
    const w = collect(c, line)
    t.match(w.events, [{ type: 'ERROR', object: { code: 422, reason: 'Invalid', message } }], line)
    t.ok(w.closed())
    w.stop()
  }
  const bad = collect(c, `GET ${CM}?watch=true&sendInitialEvents=maybe&resourceVersionMatch=NotOlderThan`)
  t.match(bad.events, [{ type: 'ERROR', object: { code: 400 } }], 'a non-boolean sendInitialEvents')
  bad.stop()
})

t.test('a watch-list: initial ADDED events, the initial-events-end bookmark, then live events', async (t) => {
  const c = withConfigMaps(3)
  const rv = String(c.store.resourceVersion)
  const w = collect(c, `GET ${CM}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan`)
  t.same(w.events.map((e) => e.type), ['ADDED', 'ADDED', 'ADDED', 'BOOKMARK'])
  t.same(w.events[3]?.object, { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: rv, annotations: { 'k8s.io/initial-events-end': 'true' } } })
  call(c, `POST ${CM}`, configMap('late'))
  t.match(w.events[4], { type: 'ADDED', object: { metadata: { name: 'late' } } })
  w.stop()
  const fromRv = collect(c, `GET ${CM}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&resourceVersion=${rv}`)
  t.same(fromRv.events.map((e) => e.type), ['ADDED', 'ADDED', 'ADDED', 'ADDED', 'BOOKMARK'], 'NotOlderThan a given resourceVersion: the state now')
  fromRv.stop()
  const noBookmarks = collect(c, `GET ${CM}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`)
  t.same(noBookmarks.events.map((e) => e.type), ['ADDED', 'ADDED', 'ADDED', 'ADDED'], 'without allowWatchBookmarks it is no watch-list: no end bookmark')
  noBookmarks.stop()
  const none = collect(c, `GET ${CM}?watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`)
  t.same(none.events, [], 'sendInitialEvents=false: from now, nothing initial')
  call(c, `POST ${CM}`, configMap('later'))
  t.match(none.events, [{ type: 'ADDED', object: { metadata: { name: 'later' } } }])
  none.stop()
})

t.test('periodic bookmarks only once the watched type has moved past the watch', async (t) => {
  const c = withConfigMaps(1)
  const quiet = collect(c, `GET ${CM}?watch=true&allowWatchBookmarks=true&resourceVersion=${c.store.resourceVersion}`)
  // Writes to another type move the global resourceVersion, not the ConfigMaps' watch cache.
  call(c, 'POST /api/v1/namespaces/default/serviceaccounts', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sa' } })
  await tick(60)
  t.same(quiet.events, [], 'a quiet type: no bookmark, however long')
  // A write of the type the watch's namespace filters out still moves the type's resourceVersion.
  call(c, `POST ${SYS_CM}`, configMap('elsewhere'))
  await until('a bookmark', () => quiet.events.length > 0)
  t.equal(quiet.events[0]?.type, 'BOOKMARK')
  t.equal((quiet.events[0]?.object as { metadata?: { resourceVersion?: string } } | undefined)?.metadata?.resourceVersion, String(c.store.resourceVersion), 'at the latest resourceVersion')
  quiet.stop()
  const noBookmarks = collect(c, `GET ${CM}?watch=true&resourceVersion=${c.store.resourceVersion}`)
  call(c, `POST ${SYS_CM}`, configMap('elsewhere-2'))
  await tick(40)
  t.same(noBookmarks.events, [], 'none without allowWatchBookmarks')
  noBookmarks.stop()
})

t.test('a server with its WatchList feature off refuses watch-lists with 422, and serves other watches', async (t) => {
  const c = createCluster({ watchList: false })
  call(c, `POST ${CM}`, configMap('a'))
  const w = collect(c, `GET ${CM}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan`)
  t.match(w.events, [{ type: 'ERROR', object: { code: 422, reason: 'Invalid', message: 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled' } }])
  w.stop()
  const plain = collect(c, `GET ${CM}?watch=true`)
  t.same(plain.events.map((e) => e.type), ['ADDED'])
  plain.stop()
})
