/**
 * The sandbox's HTTP face: routing, content types, watch streams, discovery, Table responses,
 * fault injection, request accounting and the control endpoints, over a real socket.
 */
import t from 'tap'
import { request as httpRequest } from 'node:http'
import { gunzipSync } from 'node:zlib'
import { startSandbox, type Sandbox } from '../operator/sandbox/index.ts'
import { parseResourcePath, verbOf, type ResourcePath } from '../operator/sandbox/http.ts'
import { configMap, deployment, widget, widgetCRDs } from './support/sandbox-requests.ts'

interface HttpResult {
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
  // Tests read arbitrary response fields.
  json: any
}

async function http(sb: Sandbox, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
  const init: RequestInit = { method, headers: { 'User-Agent': 'http-test/v1', Authorization: 'Bearer sandbox', ...headers } }
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body)
    if (!headers['Content-Type']) (init.headers as Record<string, string>)['Content-Type'] = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json'
  }
  const res = await fetch(sb.url + path, init)
  const text = await res.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: res.status, headers: Object.fromEntries(res.headers.entries()), text, json }
}

/** Reads a watch stream until `count` lines arrived or the server ended it. */
function watchLines(sb: Sandbox, path: string, count: number, onOpen?: () => void): Promise<{ lines: { type: string; object: any }[]; ended: boolean; status: number; contentType: string | undefined }> {
  return new Promise((resolve, reject) => {
    const lines: { type: string; object: any }[] = []
    const req = httpRequest(sb.url + path, { headers: { 'User-Agent': 'watch-test/v1', Authorization: 'Bearer sandbox' } }, (res) => {
      let buf = ''
      let done = false
      const finish = (ended: boolean): void => {
        if (done) return
        done = true
        resolve({ lines, ended, status: res.statusCode ?? 0, contentType: res.headers['content-type'] })
        req.destroy()
      }
      onOpen?.()
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        buf += chunk
        let i: number
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i)
          buf = buf.slice(i + 1)
          if (line.trim() !== '') lines.push(JSON.parse(line))
          if (lines.length >= count) finish(false)
        }
      })
      res.on('end', () => finish(true))
      res.on('error', () => finish(true))
      res.on('close', () => finish(true))
    })
    req.on('error', (e) => (lines.length > 0 ? resolve({ lines, ended: true, status: 200, contentType: undefined }) : reject(e)))
    req.end()
  })
}

t.test('resource paths parse as the API server lays them out', async (t) => {
  t.same(parseResourcePath('/api/v1/namespaces/x/pods/y/status'), { group: '', version: 'v1', resource: 'pods', namespace: 'x', name: 'y', subresource: 'status', watch: false })
  t.same(parseResourcePath('/apis/apps/v1/deployments'), { group: 'apps', version: 'v1', resource: 'deployments', watch: false })
  t.same(parseResourcePath('/api/v1/namespaces/x'), { group: '', version: 'v1', resource: 'namespaces', name: 'x', watch: false })
  t.same(parseResourcePath('/api/v1/namespaces/x/status'), { group: '', version: 'v1', resource: 'namespaces', name: 'x', subresource: 'status', watch: false })
  t.same(parseResourcePath('/api/v1/watch/namespaces/x/configmaps'), { group: '', version: 'v1', resource: 'configmaps', namespace: 'x', watch: true })
  t.equal(parseResourcePath('/api/v1'), undefined)
  t.equal(parseResourcePath('/apis/apps/v1/namespaces/x/deployments/y/scale/extra'), undefined)
  t.equal(parseResourcePath('/version'), undefined)
  t.equal(parseResourcePath('/api/v1/namespaces/%E0%A4%A/pods'), undefined)
})

t.test('verbs are classified like Kubernetes: get vs list vs watch, delete vs deletecollection', async (t) => {
  const p = (s: string): ResourcePath => {
    const parsed = parseResourcePath(s)
    if (!parsed) throw new Error(`unparsed ${s}`)
    return parsed
  }
  const q = (s = '') => new URLSearchParams(s)
  t.equal(verbOf('GET', p('/api/v1/namespaces/d/pods/x'), q()), 'get')
  t.equal(verbOf('GET', p('/api/v1/namespaces/d/pods'), q()), 'list')
  t.equal(verbOf('GET', p('/api/v1/namespaces/d/pods'), q('watch=true')), 'watch')
  t.equal(verbOf('GET', p('/api/v1/watch/pods'), q()), 'watch')
  t.equal(verbOf('POST', p('/api/v1/namespaces/d/pods'), q()), 'create')
  t.equal(verbOf('PUT', p('/api/v1/namespaces/d/pods/x'), q()), 'update')
  t.equal(verbOf('PATCH', p('/api/v1/namespaces/d/pods/x'), q()), 'patch')
  t.equal(verbOf('DELETE', p('/api/v1/namespaces/d/pods/x'), q()), 'delete')
  t.equal(verbOf('DELETE', p('/api/v1/namespaces/d/pods'), q()), 'deletecollection')
  t.equal(verbOf('OPTIONS', p('/api/v1/namespaces/d/pods'), q()), undefined)
})

t.test('over HTTP', async (t) => {
  const sb = await startSandbox({ controllers: false, installCRDs: widgetCRDs(), bookmarkIntervalMs: 20 })
  t.teardown(() => sb.close())

  t.test('CRUD with JSON bodies, the User-Agent prefix as field manager, 415 for unknown content types', async (t) => {
    const c = await http(sb, 'POST', '/api/v1/namespaces/default/configmaps', configMap('h1'))
    t.equal(c.status, 201)
    t.equal(c.headers['content-type'], 'application/json')
    t.equal(c.json.metadata.managedFields[0].manager, 'http-test')
    const g = await http(sb, 'GET', '/api/v1/namespaces/default/configmaps/h1')
    t.equal(g.text, JSON.stringify(c.json))
    const p = await http(sb, 'PATCH', '/api/v1/namespaces/default/configmaps/h1', [{ op: 'add', path: '/data/b', value: '2' }], { 'Content-Type': 'application/json-patch+json' })
    t.same(p.json.data, { a: '1', b: '2' })
    const u = await http(sb, 'PUT', '/api/v1/namespaces/default/configmaps/h1', { ...p.json, data: { z: '9' } })
    t.same(u.json.data, { z: '9' })
    const yaml = await http(sb, 'POST', '/api/v1/namespaces/default/configmaps', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-yaml}\ndata: {k: v}\n', { 'Content-Type': 'application/yaml' })
    t.equal(yaml.status, 201)
    t.same(yaml.json.data, { k: 'v' })
    t.equal((await http(sb, 'POST', '/api/v1/namespaces/default/configmaps', 'a: [', { 'Content-Type': 'application/yaml' })).status, 400)
    const bad = await http(sb, 'POST', '/api/v1/namespaces/default/configmaps', 'x', { 'Content-Type': 'application/vnd.kubernetes.protobuf' })
    t.equal(bad.status, 415)
    const broken = await http(sb, 'POST', '/api/v1/namespaces/default/configmaps', '{', { 'Content-Type': 'application/json' })
    t.equal(broken.status, 400)
    const d = await http(sb, 'DELETE', '/api/v1/namespaces/default/configmaps/h1')
    t.equal(d.json.status, 'Success')
    t.equal((await http(sb, 'GET', '/apis/nope.example.com/v1/things')).status, 404)
    t.equal((await http(sb, 'OPTIONS', '/api/v1/namespaces/default/configmaps')).status, 405)
  })

  t.test('pod logs answer plain text', async (t) => {
    await http(sb, 'POST', '/api/v1/namespaces/default/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'logger' }, spec: { containers: [{ name: 'a', image: 'b' }] } })
    await http(sb, 'PATCH', '/api/v1/namespaces/default/pods/logger/status', { status: { containerStatuses: [{ name: 'a', state: { running: {} } }] } })
    const r = await http(sb, 'GET', '/api/v1/namespaces/default/pods/logger/log')
    t.equal(r.status, 200)
    t.equal(r.headers['content-type'], 'text/plain')
    t.equal(r.text, '')
  })

  t.test('server-side apply with a YAML body: 201 then 200', async (t) => {
    const yaml = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  mode: "0644"\n'
    const h = { 'Content-Type': 'application/apply-patch+yaml' }
    const a = await http(sb, 'PATCH', '/api/v1/namespaces/default/configmaps/applied?fieldManager=op', yaml, h)
    t.equal(a.status, 201)
    t.equal(a.json.data.mode, '0644')
    const b = await http(sb, 'PATCH', '/api/v1/namespaces/default/configmaps/applied?fieldManager=op', yaml, h)
    t.equal(b.status, 200)
    t.equal(b.json.metadata.resourceVersion, a.json.metadata.resourceVersion)
  })

  t.test('watch: chunked newline-delimited JSON, synthetic ADDED, live events, timeoutSeconds ends it', async (t) => {
    await http(sb, 'POST', '/api/v1/namespaces/default/configmaps', configMap('w1', {}, { watch: 'me' }))
    const got = watchLines(sb, '/api/v1/namespaces/default/configmaps?watch=true&labelSelector=watch%3Dme&timeoutSeconds=1', 99, () => {
      void http(sb, 'PATCH', '/api/v1/namespaces/default/configmaps/w1', { data: { x: '1' } })
    })
    const r = await got
    t.equal(r.status, 200)
    t.equal(r.contentType, 'application/json')
    t.ok(r.ended, 'the server ends the watch after timeoutSeconds')
    t.same(r.lines.map((l) => l.type), ['ADDED', 'MODIFIED'])
    t.equal(r.lines[1]?.object.kind, 'ConfigMap')
  })

  t.test('watch: a client that goes away leaves no subscriber behind', async (t) => {
    const before = sb.cluster.store.subscribers
    const r = await watchLines(sb, '/api/v1/namespaces/default/configmaps?watch=true', 1)
    t.equal(r.lines[0]?.type, 'ADDED')
    for (let i = 0; i < 100 && sb.cluster.store.subscribers !== before; i++) await new Promise((res) => setTimeout(res, 10))
    t.equal(sb.cluster.store.subscribers, before)
  })

  t.test('watch: BOOKMARK events carry only the resourceVersion', async (t) => {
    // A ConfigMap the watch's selector filters out moves the type's resourceVersion: bookmarks follow.
    const r = await watchLines(sb, `/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&labelSelector=nobody&resourceVersion=${sb.cluster.store.resourceVersion}`, 1, () => {
      void http(sb, 'POST', '/api/v1/namespaces/default/configmaps', configMap('bookmark-mover'))
    })
    t.equal(r.lines[0]?.type, 'BOOKMARK')
    t.same(Object.keys(r.lines[0]?.object.metadata ?? {}), ['resourceVersion'])
    t.equal(r.lines[0]?.object.kind, 'ConfigMap')
  })

  t.test('watch: bad requests answer before streaming', async (t) => {
    t.equal((await http(sb, 'GET', '/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=abc')).status, 400)
    t.equal((await http(sb, 'GET', '/api/v1/namespaces/default/configmaps?watch=true&labelSelector=a%20in%20b')).status, 400)
    t.equal((await http(sb, 'GET', '/api/v1/namespaces/default/nothings?watch=true')).status, 404)
  })

  t.test('watch of a single object by name, as kubectl get -w x does', async (t) => {
    await http(sb, 'POST', '/api/v1/namespaces/default/configmaps', configMap('one'))
    await http(sb, 'POST', '/api/v1/namespaces/default/configmaps', configMap('two'))
    const r = await watchLines(sb, '/api/v1/namespaces/default/configmaps?watch=true&fieldSelector=metadata.name%3Done&timeoutSeconds=1', 99)
    t.same(r.lines.map((l) => l.object.metadata.name), ['one'])
  })

  t.test('discovery documents', async (t) => {
    t.same((await http(sb, 'GET', '/api')).json.versions, ['v1'])
    t.equal((await http(sb, 'GET', '/version')).json.minor, '34')
    const groups = (await http(sb, 'GET', '/apis')).json
    t.equal(groups.kind, 'APIGroupList')
    t.same(
      groups.groups.map((g: { name: string }) => g.name),
      ['apps', 'policy', 'coordination.k8s.io', 'discovery.k8s.io', 'events.k8s.io', 'rbac.authorization.k8s.io', 'authentication.k8s.io', 'authorization.k8s.io', 'autoscaling', 'networking.k8s.io', 'apiextensions.k8s.io', 'test.example.com'],
    )
    t.match((await http(sb, 'GET', '/apis/apps')).json, { kind: 'APIGroup', name: 'apps', preferredVersion: { groupVersion: 'apps/v1', version: 'v1' } })
    const apps = (await http(sb, 'GET', '/apis/apps/v1')).json
    t.equal(apps.groupVersion, 'apps/v1')
    const byName = Object.fromEntries(apps.resources.map((r: { name: string }) => [r.name, r]))
    t.match(byName['deployments'], { singularName: 'deployment', namespaced: true, kind: 'Deployment', shortNames: ['deploy'], categories: ['all'] })
    t.same(byName['deployments'].verbs, ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'])
    t.same(byName['deployments/status'].verbs, ['get', 'patch', 'update'])
    t.match(byName['deployments/scale'], { group: 'autoscaling', version: 'v1', kind: 'Scale' })
    const core = (await http(sb, 'GET', '/api/v1')).json
    t.ok(core.resources.some((r: { name: string }) => r.name === 'pods/status'))
    const widgets = (await http(sb, 'GET', '/apis/test.example.com/v1')).json
    t.ok(widgets.resources.some((r: { name: string }) => r.name === 'widgets/scale'))
    t.equal((await http(sb, 'GET', '/apis/nope')).status, 404)
    t.equal((await http(sb, 'GET', '/healthz')).text, 'ok')
    t.equal((await http(sb, 'POST', '/version', '{}')).status, 405)
    const root = (await http(sb, 'GET', '/openapi/v3')).json
    t.match(root.paths['apis/apps/v1'], { serverRelativeURL: /^\/openapi\/v3\/apis\/apps\/v1\?hash=/ })
    const doc = (await http(sb, 'GET', '/openapi/v3/apis/apps/v1')).json
    t.match(doc.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}'].patch['x-kubernetes-group-version-kind'], { group: 'apps', kind: 'Deployment' })
    t.equal((await http(sb, 'GET', '/openapi/v3/api/v1')).status, 200)
    t.equal((await http(sb, 'GET', '/openapi/v2')).json.swagger, '2.0')
  })

  t.test('Table responses when kubectl asks for them, with CRD printer columns', async (t) => {
    await http(sb, 'POST', '/apis/test.example.com/v1/namespaces/default/widgets', widget('tw', { size: 4 }))
    const r = await http(sb, 'GET', '/apis/test.example.com/v1/namespaces/default/widgets', undefined, { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' })
    t.equal(r.json.kind, 'Table')
    t.same(r.json.columnDefinitions.map((c: { name: string }) => c.name), ['Name', 'Size'])
    t.same(r.json.rows[0].cells, ['tw', 4])
    const one = await http(sb, 'GET', '/apis/test.example.com/v1/namespaces/default/widgets/tw', undefined, { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' })
    t.equal(one.json.rows.length, 1)
  })

  t.test('a watch that asks for Tables gets one-row Tables, as kubectl get -w does', async (t) => {
    const got = new Promise<string>((resolve, reject) => {
      const req = httpRequest(sb.url + '/apis/test.example.com/v1/namespaces/default/widgets?watch=true&includeObject=Object', { headers: { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io', Authorization: 'Bearer sandbox' } }, (res) => {
        res.setEncoding('utf8')
        let buf = ''
        res.on('data', (c: string) => {
          buf += c
          const i = buf.indexOf('\n')
          if (i >= 0) {
            resolve(buf.slice(0, i))
            req.destroy()
          }
        })
      })
      req.on('error', reject)
      req.end()
    })
    const line = JSON.parse(await got)
    t.equal(line.type, 'ADDED')
    t.equal(line.object.kind, 'Table')
    t.equal(line.object.rows.length, 1)
    t.equal(line.object.rows[0].object.kind, 'Widget')
  })

  t.test('faults: errors, conflicts, throttling, restriction by verb and resource, run-time settings', async (t) => {
    t.teardown(() => void sb.faults.set({}))
    const put = await http(sb, 'PUT', '/sandbox/v1/faults', { 'throttle-rate': 1, retryAfterS: 3, verbs: 'list', resources: ['configmaps'] })
    t.same(put.json, { throttleRate: 1, retryAfterS: 3, verbs: ['list'], resources: ['configmaps'] })
    t.same((await http(sb, 'GET', '/sandbox/v1/faults')).json, put.json)
    const thr = await http(sb, 'GET', '/api/v1/namespaces/default/configmaps')
    t.equal(thr.status, 429)
    t.equal(thr.headers['retry-after'], '3')
    t.equal(thr.json.reason, 'TooManyRequests')
    t.equal((await http(sb, 'GET', '/api/v1/namespaces/default/configmaps/one')).status, 200, 'get is not restricted')
    t.equal((await http(sb, 'GET', '/api/v1/namespaces/default/secrets')).status, 200, 'other resources pass')
    sb.faults.set('conflict-rate=1')
    t.equal((await http(sb, 'GET', '/api/v1/namespaces/default/configmaps/one')).status, 200, 'reads never conflict')
    const cf = await http(sb, 'PATCH', '/api/v1/namespaces/default/configmaps/one', { data: { q: '1' } })
    t.equal(cf.status, 409)
    t.equal(cf.json.message, 'Operation cannot be fulfilled on configmaps "one": the object has been modified; please apply your changes to the latest version and try again')
    sb.faults.set({ errorRate: 1, seed: 7 })
    const codes = new Set<number>()
    for (let i = 0; i < 20; i++) codes.add((await http(sb, 'GET', '/api/v1/namespaces/default/configmaps')).status)
    t.same([...codes].sort(), [500, 503])
    t.equal((await http(sb, 'PUT', '/sandbox/v1/faults', { nonsense: 1 })).status, 400)
    t.equal((await http(sb, 'PUT', '/sandbox/v1/faults', '[1]')).status, 400)
    t.equal((await http(sb, 'PUT', '/sandbox/v1/faults', '{')).status, 400)
    t.equal((await http(sb, 'POST', '/sandbox/v1/faults', '{}')).status, 405)
    sb.faults.set('latency-ms=1')
    t.equal((await http(sb, 'GET', '/api/v1/namespaces/default/configmaps/one')).status, 200)
  })

  t.test('faults: timeout-rate carries a write out, then answers 504 as an API server does to a write past its deadline', async (t) => {
    t.teardown(() => void sb.faults.set({}))
    sb.faults.set('timeout-rate=1')
    t.equal((await http(sb, 'GET', '/api/v1/namespaces/default/configmaps/one')).status, 200, 'reads are answered')
    const to = await http(sb, 'PATCH', '/api/v1/namespaces/default/configmaps/one', { data: { timedOut: 'yes' } })
    t.equal(to.status, 504)
    t.same(to.json, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Timeout: request did not complete within requested timeout - context deadline exceeded', reason: 'Timeout', code: 504 })
    sb.faults.set({})
    t.equal((await http(sb, 'GET', '/api/v1/namespaces/default/configmaps/one')).json.data.timedOut, 'yes', 'the write was carried out all the same')
  })

  t.test('faults: a paused server holds requests until unpaused', async (t) => {
    await http(sb, 'PUT', '/sandbox/v1/faults', { paused: true })
    let answered = false
    const pending = http(sb, 'GET', '/api/v1/namespaces/default/configmaps/one').then((r) => {
      answered = true
      return r
    })
    await new Promise((r) => setTimeout(r, 50))
    t.notOk(answered, 'the request waits')
    t.same((await http(sb, 'PUT', '/sandbox/v1/faults', { paused: false })).json, { paused: false })
    t.equal((await pending).status, 200)
  })

  t.test('faults: expire-on-resume answers a watch resume with 410; watch-drop-s cuts watches', async (t) => {
    t.teardown(() => void sb.faults.set({}))
    sb.faults.set('expire-on-resume=true')
    const r = await watchLines(sb, `/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${sb.cluster.store.resourceVersion}`, 5)
    t.equal(r.lines.length, 1)
    t.match(r.lines[0], { type: 'ERROR', object: { code: 410, reason: 'Expired' } })
    t.ok(r.ended)
    sb.faults.set({ watchDropS: 0.05 })
    const dropped = await watchLines(sb, `/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${sb.cluster.store.resourceVersion}`, 5)
    t.ok(dropped.ended, 'the connection was cut')
    t.same(dropped.lines, [])
    sb.faults.set({ paused: true, watchDropS: 0.05 })
    // Cut before the response began: the client sees the socket hang up.
    const held = await watchLines(sb, '/api/v1/namespaces/default/configmaps?watch=true', 5).then(
      () => 'answered',
      (e: Error) => e.message,
    )
    t.equal(held, 'socket hang up', 'a watch held by a pause is cut too')
    sb.faults.set({})
    sb.faults.set({ errorRate: 1, verbs: ['watch'] })
    t.equal((await watchLines(sb, '/api/v1/namespaces/default/configmaps?watch=true', 1)).lines.length, 0)
  })

  t.test('accounting: counts by verb, resource, namespace, manager and agent; the log; reset', async (t) => {
    await http(sb, 'DELETE', '/sandbox/v1/requests')
    await http(sb, 'GET', '/apis/apps/v1/namespaces/default/deployments')
    await http(sb, 'POST', '/apis/apps/v1/namespaces/default/deployments?fieldManager=op', deployment('acc'))
    await http(sb, 'GET', '/apis/apps/v1/namespaces/default/deployments/acc')
    await http(sb, 'PATCH', '/apis/apps/v1/namespaces/default/deployments/acc/status', { status: { replicas: 1 } })
    await http(sb, 'PATCH', '/apis/apps/v1/namespaces/default/deployments/acc?fieldManager=op', deployment('acc'), { 'Content-Type': 'application/apply-patch+yaml' })
    await http(sb, 'GET', '/apis/apps/v1/namespaces/default/deployments/missing')
    await watchLines(sb, '/apis/apps/v1/namespaces/default/deployments?watch=true&timeoutSeconds=1', 1)
    await http(sb, 'GET', '/apis')
    const c = (await http(sb, 'GET', '/sandbox/v1/requests')).json
    t.match(c, {
      total: 8,
      byVerb: { list: 1, create: 1, get: 3, patch: 2, watch: 1 },
      byResource: { 'deployments.apps': 6, 'deployments.apps/status': 1 },
      byNamespace: { default: 7 },
      byFieldManager: { op: 2, 'http-test': 1 },
      byPatchType: { merge: 1, apply: 1 },
      byCode: { '200': 6, '201': 1, '404': 1 },
      byVerbResource: { 'patch deployments.apps/status': 1 },
    })
    t.equal(c.byUserAgent['http-test/v1'], 7)
    t.same(sb.requests.counts(), c)
    const log = (await http(sb, 'GET', '/sandbox/v1/requests/log?limit=2')).json.items
    t.equal(log.length, 2)
    t.match(log[0], { verb: 'watch', group: 'apps', resource: 'deployments', namespace: 'default', userAgent: 'watch-test/v1', code: 200 })
    t.match(log[1], { verb: 'get', code: 200 })
    t.equal((await http(sb, 'DELETE', '/sandbox/v1/requests')).json.total, 0)
    t.equal((await http(sb, 'POST', '/sandbox/v1/requests', '{}')).status, 405)
    t.equal((await http(sb, 'POST', '/sandbox/v1/requests/log', '{}')).status, 405)
    t.equal((await http(sb, 'GET', '/sandbox/v1/other')).status, 404)
  })

  t.test('in-process access with opt-in faults and accounting', async (t) => {
    t.teardown(() => void sb.faults.set({}))
    sb.requests.reset()
    sb.faults.set('error-rate=1')
    const plain = await sb.cluster.handle({ verb: 'get', group: '', version: 'v1', resource: 'namespaces', name: 'default', query: new URLSearchParams() })
    t.equal(plain.status, 200)
    t.equal(sb.requests.counts().total, 0)
    const faulty = await sb.cluster.handle({ verb: 'get', group: '', version: 'v1', resource: 'namespaces', name: 'default', query: new URLSearchParams(), injectFaults: true, account: true })
    t.ok(faulty.status >= 500)
    t.equal(sb.requests.counts().total, 1)
  })
})

t.test('startSandbox writes a kubeconfig where asked and removes a temporary one on close', async (t) => {
  const dir = t.testdir({})
  const sb = await startSandbox({ controllers: false, kubeconfigOut: `${dir}/nested/kubeconfig`, faults: 'latency-ms=0' })
  const { readFile, access } = await import('node:fs/promises')
  const text = await readFile(sb.kubeconfigPath, 'utf8')
  t.match(text, `server: ${sb.httpsUrl}`)
  t.match(text, 'current-context: sandbox')
  await sb.close()
  await sb.close()
  await access(sb.kubeconfigPath)
  const tmp = await startSandbox({ controllers: false })
  await tmp.close()
  await t.rejects(access(tmp.kubeconfigPath))
  await t.rejects(startSandbox({ controllers: false, installCRDs: [{ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'bad' } }] }))
})

t.test('answers over 128 KiB are gzipped at level 1 for a client that lists gzip, as kube-apiserver does (apiserver endpoints/handlers/responsewriters/writers.go)', async (t) => {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  const raw = (path: string, acceptEncoding?: string): Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string> = { Authorization: 'Bearer sandbox' }
      if (acceptEncoding !== undefined) headers['Accept-Encoding'] = acceptEncoding
      httpRequest(sb.url + path, { headers }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }))
      })
        .on('error', reject)
        .end()
    })
  await http(sb, 'POST', '/api/v1/namespaces/default/configmaps', configMap('small'))
  const small = await raw('/api/v1/namespaces/default/configmaps', 'gzip')
  t.equal(small.headers['content-encoding'], undefined, 'a small answer is sent as it is')

  for (let i = 0; i < 160; i++) await http(sb, 'POST', '/api/v1/namespaces/default/configmaps', configMap(`big-${i}`, { blob: 'x'.repeat(1024) }))
  const plain = await raw('/api/v1/namespaces/default/configmaps')
  t.ok(plain.body.length > 128 * 1024, 'the list is over the threshold')
  t.equal(plain.headers['content-encoding'], undefined, 'no Accept-Encoding, no compression')
  const zipped = await raw('/api/v1/namespaces/default/configmaps', 'deflate, gzip')
  t.equal(zipped.headers['content-encoding'], 'gzip')
  t.equal(zipped.headers['vary'], 'Accept-Encoding')
  t.equal(Number(zipped.headers['content-length']), zipped.body.length)
  t.ok(zipped.body.length < plain.body.length / 10, `compressed ${plain.body.length} → ${zipped.body.length} bytes`)
  t.same(JSON.parse(gunzipSync(zipped.body).toString('utf8')).items.length, JSON.parse(plain.body.toString('utf8')).items.length)
  const weighted = await raw('/api/v1/namespaces/default/configmaps', 'gzip;q=1.0')
  t.equal(weighted.headers['content-encoding'], undefined, 'upstream matches the bare token only: "gzip;q=1.0" is not gzip to it')
})
