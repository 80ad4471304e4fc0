/**
 * The raw-JSON Kubernetes client against the sandbox: CRUD, apply bodies on the wire, errors with
 * the server's Status and Retry-After, watch streams and their endings.
 */
import t, { type Test } from 'tap'
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import { KubeConfig } from '@kubernetes/client-node'
import { startSandbox, type Sandbox } from '../operator/sandbox/index.ts'
import type { KubeObject as SandboxObject } from '../operator/sandbox/types.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import { loadChart } from '../operator/render/chart.ts'
import { recordingProxy } from './support/proxy.ts'
import { parse as parseYaml } from 'yaml'
import { KubeClient, applyBody, ApiError, isNotFound, isConflict, isAlreadyExists, isExpired, isTooLargeResourceVersion, parseRetryAfter, apiErrorFrom, resourcePath, resourceInfo, UnknownKindError, type KubeObject, type WatchEvent } from '../operator/controller/client.ts'

const UA = 'controller-client-test/v0.0.0'

async function sandbox(t: Test, opts: Parameters<typeof startSandbox>[0] = {}): Promise<{ sb: Sandbox; kc: KubeConfig; client: KubeClient }> {
  const sb = await startSandbox({ controllers: false, ...opts })
  t.teardown(() => sb.close())
  const kc = new KubeConfig()
  kc.loadFromFile(sb.kubeconfigPath)
  const client = new KubeClient(kc, { userAgent: UA, fieldManager: 'test-manager' })
  t.teardown(() => client.close())
  return { sb, kc, client }
}

function configMap(name: string, data: Record<string, string> = { a: '1' }): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data }
}

/** Resolves once `pred` holds for the collected events. */
function until<T>(items: T[], pred: (items: T[]) => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (pred(items)) resolve()
      else setTimeout(check, 5)
    }
    check()
  })
}

t.test('resource paths come from the table, not from discovery', async (t) => {
  t.equal(resourcePath(resourceInfo({ apiVersion: 'apps/v1', kind: 'Deployment' }), { namespace: 'ns', name: 'd', subresource: 'status' }), '/apis/apps/v1/namespaces/ns/deployments/d/status')
  t.equal(resourcePath(resourceInfo({ apiVersion: 'v1', kind: 'Pod' })), '/api/v1/pods')
  t.equal(resourcePath(resourceInfo({ apiVersion: 'v1', kind: 'Namespace' }), { namespace: 'ignored', name: 'x' }), '/api/v1/namespaces/x')
  t.equal(resourcePath(resourceInfo({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' }), { namespace: 'a b' }), '/apis/cache.example.com/v1alpha1/namespaces/a%20b/memcacheds')
  t.throws(() => resourceInfo({ apiVersion: 'example.com/v1', kind: 'Widget' }), UnknownKindError)
  t.same(resourceInfo({ apiVersion: 'example.com/v1', kind: 'Widget' }, { 'example.com/v1/Widget': { group: 'example.com', version: 'v1', plural: 'widgets', namespaced: true } }).plural, 'widgets')
})

t.test('Retry-After and error bodies are parsed', async (t) => {
  t.equal(parseRetryAfter('7'), 7)
  t.equal(parseRetryAfter(undefined), undefined)
  t.equal(parseRetryAfter('soon'), undefined)
  t.equal(parseRetryAfter(new Date(10_000).toUTCString(), 0), 10)
  t.equal(parseRetryAfter(new Date(0).toUTCString(), 10_000), 0)
  const e = apiErrorFrom(502, '<html>bad gateway</html>')
  t.equal(e.status, 502)
  t.equal(e.reason, '')
  t.equal(e.message, 'HTTP 502: <html>bad gateway</html>')
  t.equal(apiErrorFrom(500, '').message, 'HTTP 500')
})

t.test('CRUD on plain JSON with the server Status on errors', async (t) => {
  const { client, sb } = await sandbox(t)
  const created = await client.create(configMap('one'))
  t.ok(created.metadata.uid)
  t.equal(typeof created.metadata.creationTimestamp, 'string', 'timestamps stay strings')
  const got = await client.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'one' })
  t.same(got.data, { a: '1' })

  const dup = await client.create(configMap('one')).catch((e: unknown) => e)
  t.ok(isAlreadyExists(dup) && isConflict(dup))

  const update: KubeObject = { ...got, data: { a: '2' } }
  const replaced = await client.replace(update)
  t.same(replaced.data, { a: '2' })
  const staleUpdate: KubeObject = { ...got, data: { a: '3' } }
  const stale = await client.replace(staleUpdate).catch((e: unknown) => e)
  t.ok(stale instanceof ApiError && stale.status === 409 && stale.reason === 'Conflict', 'a stale resourceVersion conflicts')

  const merged = await client.patch({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'one' }, { data: { b: 'x' } }, { type: 'merge' })
  t.same(merged.data, { a: '2', b: 'x' })
  const jsonPatched = await client.patch({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'one' }, [{ op: 'remove', path: '/data/b' }], { type: 'json' })
  t.same(jsonPatched.data, { a: '2' })

  await client.create(configMap('two'))
  const other = await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'three', namespace: 'kube-system', labels: { pick: 'me' } } })
  const all = await client.list({ apiVersion: 'v1', kind: 'ConfigMap' })
  t.same(all.items.map((i) => i.metadata.name).sort(), ['one', 'three', 'two'])
  t.ok(all.items.every((i) => i.apiVersion === 'v1' && i.kind === 'ConfigMap'), 'items carry their type')
  t.match(all.metadata.resourceVersion, /^\d+$/)
  const paged = await client.list({ apiVersion: 'v1', kind: 'ConfigMap' }, { limit: 1 })
  t.equal(paged.items.length, 3, 'pages are followed')
  const probe = await client.list({ apiVersion: 'v1', kind: 'ConfigMap' }, { limit: 1, firstPageOnly: true })
  t.equal(probe.items.length, 1, 'firstPageOnly: one page, its continue not followed')
  t.equal(probe.paginated, true)
  const inNs = await client.list({ apiVersion: 'v1', kind: 'ConfigMap' }, { namespace: 'default' })
  t.same(inNs.items.map((i) => i.metadata.name).sort(), ['one', 'two'])
  const selected = await client.list({ apiVersion: 'v1', kind: 'ConfigMap' }, { labelSelector: 'pick=me' })
  t.same(selected.items.map((i) => i.metadata.name), ['three'])

  const badPrecondition = await client.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'kube-system', name: 'three' }, { preconditions: { uid: 'not-the-uid' } }).catch((e: unknown) => e)
  t.ok(isConflict(badPrecondition), 'a failed precondition is a conflict')
  const deleted = await client.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'kube-system', name: 'three' }, { preconditions: { uid: other.metadata.uid ?? '' }, propagationPolicy: 'Background' })
  t.equal(deleted.kind, 'Status')

  const missing = await client.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'absent' }).catch((e: unknown) => e)
  t.ok(isNotFound(missing))
  t.ok(missing instanceof ApiError)
  if (missing instanceof ApiError) {
    t.equal(missing.reason, 'NotFound')
    t.equal(missing.message, 'configmaps "absent" not found')
    t.match(missing.details, { name: 'absent', kind: 'configmaps' })
  }
  t.equal(sb.requests.counts().byUserAgent[UA], sb.requests.counts().total, 'every request carries the user agent')
})

t.test('apply bodies escape the characters a YAML reader takes for line breaks (U+0085, U+2028, U+2029)', async (t) => {
  const value = 'a\u0085b\u2028c\u2029d "quoted" \\ \n'
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'breaks', namespace: 'default', annotations: { [`note`]: value } }, data: { v: value } }
  const body = applyBody(cm)
  t.notMatch(body, /[\u0085\u2028\u2029]/, 'none of them raw on the wire')
  t.match(body, /a\\u0085b\\u2028c\\u2029d/)
  t.same(JSON.parse(body), cm, 'JSON reads back the same object')
  t.same(parseYaml(body, { version: '1.1' }), cm, 'and so does a YAML 1.1 reader')
  const { client } = await sandbox(t)
  const applied = await client.apply(cm, { fieldManager: 'memcached-operator', force: true })
  t.equal((applied.data as Record<string, string>).v, value, 'the server stores the characters themselves')
})

t.test('apply bodies reach the server exactly as given, unknown fields included', async (t) => {
  const { sb, kc } = await sandbox(t, { installCRDs: [memcachedCRD(loadChart()) as SandboxObject] })
  // A recording proxy in front of the sandbox sees the bytes on the wire.
  const seen: { method: string; url: string; contentType: string | undefined; body: string }[] = []
  const proxy = await recordingProxy(t, sb.url, (req, body) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', contentType: req.headers['content-type'], body: body.toString('utf8') })
  })
  const pkc = new KubeConfig()
  pkc.loadFromOptions({ users: kc.users, contexts: kc.contexts, currentContext: kc.currentContext, clusters: [{ name: 'sandbox', server: proxy, skipTLSVerify: false }] })
  const client = new KubeClient(pkc, { userAgent: UA })
  t.teardown(() => client.close())

  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'wire', namespace: 'default', annotations: { when: '2026-11-21T10:00:00Z' } }, data: { 'k.y': 'v' }, futureField: { nested: [1, 'two', null] } }
  const result = await client.apply(cm, { fieldManager: 'memcached-operator', force: true }).catch((e: unknown) => e)
  const applyReq = seen.find((s) => s.method === 'PATCH')
  t.ok(applyReq)
  t.equal(applyReq?.body, JSON.stringify(cm), 'the body is the object, byte for byte')
  t.equal(applyReq?.contentType, 'application/apply-patch+yaml')
  t.match(applyReq?.url, /\/api\/v1\/namespaces\/default\/configmaps\/wire\?fieldManager=memcached-operator&force=true$/)
  // A server either keeps the undeclared field or names it in its refusal; either way it received it.
  t.ok(result instanceof ApiError ? /futureField/.test(result.message) : (result as KubeObject).futureField !== undefined, 'the server received the unknown field')
  if (!(result instanceof ApiError)) t.equal(typeof (result as KubeObject).metadata.annotations?.when, 'string', 'timestamps in answers stay strings')

  const mc = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'm', namespace: 'default', annotations: { createdAt: '2026-11-21T10:00:00Z' } }, spec: { size: 2 } }
  const applied = await client.apply(mc, { fieldManager: 'memcached-operator', dryRun: true })
  t.equal(seen.at(-1)?.body, JSON.stringify(mc))
  t.match(seen.at(-1)?.url, /dryRun=All/)
  t.equal(applied.metadata.annotations?.createdAt, '2026-11-21T10:00:00Z')
  t.equal(typeof applied.metadata.creationTimestamp, 'string')
  t.throws(() => client.apply(cm), /fieldManager/, 'apply without a field manager is refused before sending')
})

t.test('status subresource writes', async (t) => {
  const { client } = await sandbox(t)
  const dep = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', namespace: 'default' }, spec: { selector: { matchLabels: { app: 'd' } }, template: { metadata: { labels: { app: 'd' } }, spec: { containers: [{ name: 'c', image: 'img:1' }] } } } }
  const created = await client.create(dep)
  const patched = await client.patchStatus({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'd' }, { status: { replicas: 3 } }, { type: 'merge' })
  t.equal((patched.status as { replicas: number }).replicas, 3)
  const statusUpdate: KubeObject = { ...patched, status: { replicas: 4 }, spec: { ...(patched.spec as object), replicas: 9 } }
  const replaced = await client.replaceStatus(statusUpdate)
  t.equal((replaced.status as { replicas: number }).replicas, 4)
  t.equal((replaced.spec as { replicas: number }).replicas, created.spec && (created.spec as { replicas: number }).replicas, '/status ignores spec')
  const statusApply: KubeObject = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', namespace: 'default' }, status: { replicas: 5 } }
  const applied = await client.apply(statusApply, { subresource: 'status', fieldManager: 'status-writer', force: true })
  t.equal((applied.status as { replicas: number }).replicas, 5)
})

t.test('a 429 the client does not retry (maxRetries 0) carries Retry-After seconds', async (t) => {
  const { kc, sb } = await sandbox(t)
  const client = new KubeClient(kc, { userAgent: UA, maxRetries: 0 })
  t.teardown(() => client.close())
  sb.faults.set({ throttleRate: 1, retryAfterS: 7, verbs: ['get'] })
  const err = await client.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'x' }).catch((e: unknown) => e)
  t.ok(err instanceof ApiError)
  if (err instanceof ApiError) {
    t.equal(err.status, 429)
    t.equal(err.reason, 'TooManyRequests')
    t.equal(err.retryAfterSeconds, 7)
  }
})

t.test('plain http works without insecure-skip-tls-verify; unreachable servers reject', async (t) => {
  const { sb } = await sandbox(t)
  const kc = new KubeConfig()
  kc.loadFromOptions({ clusters: [{ name: 'c', server: sb.url + '/', skipTLSVerify: false }], users: [{ name: 'u', token: 'sandbox' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' })
  const client = new KubeClient(kc, { userAgent: UA })
  t.teardown(() => client.close())
  t.equal(client.server, sb.url)
  t.equal(client.userAgent, UA)
  const list = await client.list({ apiVersion: 'v1', kind: 'Namespace' })
  t.ok(list.items.some((n) => n.metadata.name === 'default'))

  const none = new KubeConfig()
  t.throws(() => new KubeClient(none, { userAgent: UA }), /no current cluster/)
  const dead = new KubeConfig()
  dead.loadFromOptions({ clusters: [{ name: 'c', server: 'http://127.0.0.1:1', skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' })
  const deadClient = new KubeClient(dead, { userAgent: UA })
  await t.rejects(deadClient.get({ apiVersion: 'v1', kind: 'Pod', namespace: 'default', name: 'p' }), /ECONNREFUSED/)
  deadClient.close()
})

t.test('watch delivers events in order and ends as documented', async (t) => {
  const { client, sb } = await sandbox(t)
  const ref = { apiVersion: 'v1', kind: 'ConfigMap' }
  const list = await client.list(ref, { namespace: 'default' })

  await t.test('events in order, then stop ends it without an error', async (t) => {
    const events: WatchEvent[] = []
    let doneWith: unknown = 'not yet'
    const stop = client.watch(ref, { namespace: 'default', resourceVersion: list.metadata.resourceVersion, timeoutSeconds: 60 }, (e) => events.push(e), (err) => (doneWith = err))
    await client.create(configMap('w1'))
    await client.patch({ ...ref, namespace: 'default', name: 'w1' }, { data: { a: '2' } }, { type: 'merge' })
    await client.delete({ ...ref, namespace: 'default', name: 'w1' })
    await until(events, (e) => e.length >= 3)
    t.same(events.map((e) => e.type), ['ADDED', 'MODIFIED', 'DELETED'])
    t.same(events.map((e) => (e.object.data as Record<string, string>).a), ['1', '2', '2'])
    stop()
    stop()
    t.equal(doneWith, undefined)
  })

  await t.test('a too-old resourceVersion is an ERROR event with the 410 Status', async (t) => {
    sb.faults.set({ expireOnResume: true })
    const events: WatchEvent[] = []
    const done = new Promise<Error | undefined>((resolve) => client.watch(ref, { namespace: 'default', resourceVersion: list.metadata.resourceVersion }, (e) => events.push(e), resolve))
    t.equal(await done, undefined, 'the server ends the stream')
    t.equal(events.length, 1)
    t.equal(events[0]?.type, 'ERROR')
    t.equal(events[0]?.object.code, 410)
    t.ok(isExpired(apiErrorFrom(410, JSON.stringify(events[0]?.object))))
    sb.faults.set({})
  })

  await t.test('a refused watch ends with the ApiError', async (t) => {
    sb.faults.set({ errorRate: 1, verbs: ['watch'], seed: 3 })
    const err = await new Promise<Error | undefined>((resolve) => client.watch(ref, {}, () => {}, resolve))
    t.ok(err instanceof ApiError && err.status >= 500)
    sb.faults.set({})
    const unknown = await new Promise<Error | undefined>((resolve) => client.watch({ apiVersion: 'x/v1', kind: 'Nope' }, {}, () => {}, resolve))
    t.ok(unknown instanceof UnknownKindError)
  })

  await t.test('a dropped connection ends with an error', async (t) => {
    const events: WatchEvent[] = []
    const done = new Promise<Error | undefined>((resolve) => client.watch(ref, { namespace: 'default' }, (e) => events.push(e), resolve))
    await client.create(configMap('w2'))
    await until(events, (e) => e.some((x) => x.object.metadata.name === 'w2'))
    sb.faults.set({ watchDropS: 0.05 })
    const err = await done
    sb.faults.set({})
    t.ok(err instanceof Error)
    t.match(err?.message, /connection dropped/)
  })

  await t.test('a handler that throws ends the watch with its error', async (t) => {
    const done = new Promise<Error | undefined>((resolve) =>
      client.watch(ref, { namespace: 'default' }, () => {
        throw new Error('handler bug')
      }, resolve),
    )
    await client.create(configMap('w3'))
    t.equal((await done)?.message, 'handler bug')
  })

  await t.test('a server that never sends response headers ends the watch after the header timeout', async (t) => {
    sb.faults.set({ paused: true })
    const err = await new Promise<Error | undefined>((resolve) => client.watch(ref, { namespace: 'default', headerTimeoutMs: 50 }, () => {}, resolve))
    sb.faults.set({})
    t.match(err?.message, /no response headers within 50 ms/)
  })

  await t.test('a stalled connection ends after the idle timeout', async (t) => {
    const err = await new Promise<Error | undefined>((resolve) => client.watch(ref, { namespace: 'nothing-here', idleTimeoutMs: 50, allowWatchBookmarks: false }, () => {}, resolve))
    t.match(err?.message, /no data for 50 ms/)
  })
})

t.test('the watch cache\'s "Too large resource version" is recognised by its cause or its message', async (t) => {
  const status = (code: number, reason: string, message: string, details?: unknown): string => JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message, ...(details ? { details } : {}) })
  t.ok(isTooLargeResourceVersion(apiErrorFrom(504, status(504, 'Timeout', 'Too large resource version: 9, current: 3', { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }] }))))
  t.ok(isTooLargeResourceVersion(apiErrorFrom(504, status(504, 'Timeout', 'Too large resource version: 9, current: 3'))), 'servers before the cause was added')
  t.notOk(isTooLargeResourceVersion(apiErrorFrom(504, status(504, 'Timeout', 'request did not complete within 60s'))))
  t.notOk(isTooLargeResourceVersion(new Error('Too large resource version')))
})

/**
 * A TCP proxy in front of `upstream` that forgets connections the way a load balancer drops idle
 * flows: after `forget()`, each connection open at that moment is answered with a reset when the
 * client next sends on it.
 */
async function forgetfulBalancer(t: Test, upstream: string): Promise<{ url: string; forget: () => void; connections: number; resets: number }> {
  const target = new URL(upstream)
  const open = new Set<{ client: net.Socket; server: net.Socket; forgotten: boolean }>()
  const state = {
    url: '',
    connections: 0,
    resets: 0,
    forget: (): void => {
      for (const c of open) c.forgotten = true
    },
  }
  const proxy = net.createServer((client) => {
    state.connections++
    const c = { client, server: net.connect(Number(target.port), target.hostname), forgotten: false }
    open.add(c)
    const end = (): void => {
      open.delete(c)
      client.destroy()
      c.server.destroy()
    }
    client.on('data', (d: Buffer) => {
      if (!c.forgotten) return void c.server.write(d)
      state.resets++
      open.delete(c)
      c.server.destroy()
      client.resetAndDestroy()
    })
    c.server.on('data', (d: Buffer) => client.write(d))
    client.on('close', end)
    client.on('error', end)
    c.server.on('close', end)
    c.server.on('error', end)
  })
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  t.teardown(
    () =>
      new Promise<void>((r) => {
        for (const c of open) {
          c.client.destroy()
          c.server.destroy()
        }
        proxy.close(() => r())
      }),
  )
  state.url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  return state
}

t.test('a GET on a keep-alive socket that a load balancer dropped is sent again on a new connection, as Go\'s transport retries replayable requests; a write is not', async (t) => {
  const { sb } = await sandbox(t)
  const lb = await forgetfulBalancer(t, sb.url)
  const kc = new KubeConfig()
  kc.loadFromOptions({ clusters: [{ name: 'c', server: lb.url, skipTLSVerify: false }], users: [{ name: 'u', token: 'sandbox' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' })
  const client = new KubeClient(kc, { userAgent: UA, fieldManager: 'test-manager' })
  t.teardown(() => client.close())
  await client.create(configMap('lb-1'))
  t.equal(lb.connections, 1)

  lb.forget()
  const got = await client.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'lb-1' })
  t.equal(got.metadata.name, 'lb-1', 'the reset GET was answered on a new connection')
  t.equal(lb.resets, 1)
  t.equal(lb.connections, 2)
  const list = await client.list({ apiVersion: 'v1', kind: 'ConfigMap' }, { namespace: 'default' })
  t.ok(list.items.some((i) => i.metadata.name === 'lb-1'), 'the new connection is kept alive and reused')
  t.equal(lb.connections, 2)

  lb.forget()
  await t.rejects(client.create(configMap('lb-2')), { code: 'ECONNRESET' }, 'a create may have been processed: the caller decides')
  t.equal(lb.resets, 2)
  const absent = await client.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'lb-2' }).then(() => undefined, (e: unknown) => e)
  t.ok(isNotFound(absent), 'the create never reached the server')
})

t.test('the client asks for gzip and inflates it, as Go\'s transport does for client-go; kube-apiserver gzips answers over 128 KiB', async (t) => {
  const { sb } = await sandbox(t)
  const seen: { acceptEncoding: string | undefined; contentEncoding: string | undefined; bytes: number }[] = []
  const front = http.createServer((req, res) => {
    const up = http.request(sb.url + (req.url ?? '/'), { method: req.method, headers: req.headers }, (upRes) => {
      const record = { acceptEncoding: req.headers['accept-encoding'], contentEncoding: upRes.headers['content-encoding'], bytes: 0 }
      seen.push(record)
      res.writeHead(upRes.statusCode ?? 500, upRes.headers)
      upRes.on('data', (c: Buffer) => (record.bytes += c.length))
      upRes.pipe(res)
    })
    req.pipe(up)
  })
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => front.close(() => r())))
  const kc = new KubeConfig()
  kc.loadFromOptions({ clusters: [{ name: 'c', server: `http://127.0.0.1:${(front.address() as AddressInfo).port}` }], users: [{ name: 'u', token: 'sandbox' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' })
  const client = new KubeClient(kc, { userAgent: UA, fieldManager: 'test-manager' })
  t.teardown(() => client.close())
  for (let i = 0; i < 160; i++) await client.create(configMap(`gz-${i}`, { blob: String(i).repeat(1024) }))
  seen.length = 0
  const list = await client.list({ apiVersion: 'v1', kind: 'ConfigMap' }, { namespace: 'default' })
  t.equal(list.items.length, 160)
  t.equal((list.items.find((i) => i.metadata.name === 'gz-42') as { data?: Record<string, string> } | undefined)?.data?.['blob'], '42'.repeat(1024), 'the inflated answer is the list')
  t.equal(seen[0]?.acceptEncoding, 'gzip')
  t.equal(seen[0]?.contentEncoding, 'gzip', 'the server compressed it')
  t.ok((seen[0]?.bytes ?? Infinity) < 64 * 1024, `${seen[0]?.bytes} bytes on the wire for a list of over 160 KiB`)
  const one = await client.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'gz-1' })
  t.equal(one.metadata.name, 'gz-1')
  t.equal(seen[1]?.contentEncoding, undefined, 'a small answer comes as it is')
})
