/**
 * Metadata-only answers (`Accept: application/json;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`)
 * as kube-apiserver gives them: apiserver endpoints/handlers/negotiation/negotiate.go picks the
 * first Accept clause the endpoint allows (handlers/rest.go `AllowsMediaTypeTransform`),
 * handlers/response.go converts (`asPartialObjectMetadata`, `asPartialObjectMetadataList`: all of
 * `metadata`, the list's resourceVersion and continue token) or answers 406, and handlers/watch.go
 * converts every event's object, bookmarks included. Read through the operator's own client, as
 * its metadata informers read them.
 */
import t from 'tap'
import { KubeConfig } from '@kubernetes/client-node'
import { KubeClient, METADATA_LIST_ACCEPT, type KubeObject, type WatchEvent } from '../operator/controller/client.ts'
import { startSandbox, type Sandbox } from '../operator/sandbox/index.ts'
import { deployment, widget, widgetCRDs } from './support/sandbox-requests.ts'

const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment' }
const PARTIAL = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1'
const PARTIAL_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1'
const NOT_ACCEPTABLE = 'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf'

async function raw(sb: Sandbox, method: string, path: string, accept: string, body?: unknown, contentType?: string): Promise<{ status: number; contentType: string | null; json: any }> {
  const headers: Record<string, string> = { Authorization: 'Bearer sandbox', Accept: accept }
  if (contentType) headers['Content-Type'] = contentType
  const res = await fetch(sb.url + path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) })
  return { status: res.status, contentType: res.headers.get('content-type'), json: await res.json() }
}

t.test('PartialObjectMetadata over HTTP', async (t) => {
  const sb = await startSandbox({ controllers: false, installCRDs: widgetCRDs(), bookmarkIntervalMs: 50 })
  t.teardown(() => sb.close())
  const kc = new KubeConfig()
  kc.loadFromFile(sb.kubeconfigPath)
  const client = new KubeClient(kc, { userAgent: 'partial-test/v0.0.0', fieldManager: 'partial-test' })
  t.teardown(() => client.close())
  client.learnKinds([{ apiVersion: 'test.example.com/v1', kind: 'Widget', resource: 'widgets' }])
  for (const name of ['a', 'b', 'c']) await client.apply({ ...deployment(name), metadata: { name, namespace: 'default', labels: { app: name } } })
  await client.apply({ ...widget('w'), metadata: { name: 'w', namespace: 'default' } })
  const full = await client.get({ ...DEPLOY, namespace: 'default', name: 'a' })

  t.test('a GET answers the object\'s whole metadata and nothing else (response.go asPartialObjectMetadata)', async (t) => {
    const r = await raw(sb, 'GET', '/apis/apps/v1/namespaces/default/deployments/a', PARTIAL)
    t.equal(r.status, 200)
    t.equal(r.contentType, 'application/json;g=meta.k8s.io;v=v1;as=PartialObjectMetadata')
    t.same(r.json, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: full.metadata })
    t.ok(Array.isArray(r.json.metadata.managedFields), 'managedFields are metadata too')
    const beta = await raw(sb, 'GET', '/apis/apps/v1/namespaces/default/deployments/a', 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1')
    t.equal(beta.json.apiVersion, 'meta.k8s.io/v1beta1', 'meta.k8s.io/v1beta1 is served too')
    const cr = await raw(sb, 'GET', '/apis/test.example.com/v1/namespaces/default/widgets/w', PARTIAL)
    t.match(cr.json, { kind: 'PartialObjectMetadata', metadata: { name: 'w' } })
    t.notOk('spec' in cr.json, 'a custom resource as well')
  })

  t.test('a LIST answers a PartialObjectMetadataList with the list\'s resourceVersion and continue token', async (t) => {
    const listed = await client.list(DEPLOY, { namespace: 'default', metadataOnly: true })
    t.equal(listed.kind, 'PartialObjectMetadataList')
    t.equal(listed.apiVersion, 'meta.k8s.io/v1')
    t.same(listed.items.map((i) => [i.kind, i.apiVersion, i.metadata.name]), [['PartialObjectMetadata', 'meta.k8s.io/v1', 'a'], ['PartialObjectMetadata', 'meta.k8s.io/v1', 'b'], ['PartialObjectMetadata', 'meta.k8s.io/v1', 'c']])
    t.ok(listed.items.every((i) => !('spec' in i) && !('status' in i)))
    t.match(listed.metadata.resourceVersion, /^\d+$/)
    const page = await raw(sb, 'GET', '/apis/apps/v1/namespaces/default/deployments?limit=2', METADATA_LIST_ACCEPT)
    t.equal(page.json.items.length, 2)
    t.match(page.json.metadata, { resourceVersion: /^\d+$/, continue: /./, remainingItemCount: 1 })
    const all = await client.list(DEPLOY, { namespace: 'default', metadataOnly: true, limit: 1 })
    t.same(all.items.map((i) => i.metadata.name), ['a', 'b', 'c'], 'the client follows the pages')
  })

  t.test('a watch sends every event\'s object as PartialObjectMetadata, bookmarks included (watch.go)', async (t) => {
    const events: WatchEvent[] = []
    let stop: () => void = () => {}
    const done = new Promise<void>((resolve) => {
      stop = client.watch(DEPLOY, { namespace: 'default', metadataOnly: true, resourceVersion: '0' }, (e) => {
        events.push(e)
        if (e.type === 'BOOKMARK') resolve()
      }, () => resolve())
    })
    await client.apply({ ...deployment('d'), metadata: { name: 'd', namespace: 'default', labels: { app: 'd' } } })
    await done
    stop()
    const added = events.filter((e) => e.type === 'ADDED')
    t.ok(added.length >= 3)
    t.ok(added.every((e) => e.object.kind === 'PartialObjectMetadata' && e.object.apiVersion === 'meta.k8s.io/v1' && !('spec' in e.object)))
    const bookmark = events.find((e) => e.type === 'BOOKMARK')
    t.same(Object.keys(bookmark?.object ?? {}), ['kind', 'apiVersion', 'metadata'])
    t.match(bookmark?.object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: /^\d+$/ } })
  })

  t.test('a watch asked for PartialObjectMetadataList gets whole objects: the conversion fails per event and upstream sends the object unconverted', async (t) => {
    const line = await new Promise<any>((resolve, reject) => {
      const ctl = new AbortController()
      fetch(sb.url + '/apis/apps/v1/namespaces/default/deployments?watch=true', { headers: { Authorization: 'Bearer sandbox', Accept: PARTIAL_LIST }, signal: ctl.signal })
        .then(async (res) => {
          const reader = res.body!.getReader()
          let text = ''
          for (;;) {
            const { value, done } = await reader.read()
            if (done) break
            text += new TextDecoder().decode(value)
            const nl = text.indexOf('\n')
            if (nl >= 0) {
              resolve(JSON.parse(text.slice(0, nl)))
              ctl.abort()
              return
            }
          }
        })
        .catch((e: Error) => (e.name === 'AbortError' ? undefined : reject(e)))
    })
    t.equal(line.object.kind, 'Deployment')
  })

  t.test('the first clause the endpoint allows wins; a list asked for as an object (and the reverse) is 406 (response.go)', async (t) => {
    const fallback = await raw(sb, 'GET', '/apis/apps/v1/namespaces/default/deployments/a', 'application/json;as=Foo;g=meta.k8s.io;v=v1, application/json')
    t.equal(fallback.json.kind, 'Deployment', 'an unknown conversion is skipped for the next clause')
    const wrongVersion = await raw(sb, 'GET', '/apis/apps/v1/namespaces/default/deployments/a', 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2, application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1')
    t.equal(wrongVersion.json.kind, 'PartialObjectMetadata', 'only meta.k8s.io v1 and v1beta1 are allowed')
    const byQuality = await raw(sb, 'GET', '/apis/apps/v1/namespaces/default/deployments/a', `application/json;q=0.5, ${PARTIAL}`)
    t.equal(byQuality.json.kind, 'PartialObjectMetadata', 'clauses are tried by quality')

    const listAsObject = await raw(sb, 'GET', '/apis/apps/v1/namespaces/default/deployments', `${PARTIAL}, application/json`)
    t.equal(listAsObject.status, 406)
    t.same(listAsObject.json, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'you requested PartialObjectMetadata, but the requested object is a list (*apps.DeploymentList)', reason: 'NotAcceptable', code: 406 })
    const objectAsList = await raw(sb, 'GET', '/apis/test.example.com/v1/namespaces/default/widgets/w', METADATA_LIST_ACCEPT)
    t.equal(objectAsList.status, 406)
    t.equal(objectAsList.json.message, 'you requested PartialObjectMetadataList, but the requested object is not a list (*unstructured.Unstructured)')
  })

  t.test('an Accept that names no conversion served is 406 with the media types kube-apiserver lists (negotiate.go)', async (t) => {
    for (const accept of ['application/json;as=Foo;g=meta.k8s.io;v=v1', 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2', 'application/json;as=PartialObjectMetadata;g=example.com;v=v1']) {
      const r = await raw(sb, 'GET', '/apis/apps/v1/namespaces/default/deployments/a', accept)
      t.equal(r.status, 406, accept)
      t.match(r.json, { reason: 'NotAcceptable', message: NOT_ACCEPTABLE })
    }
    const watch = await fetch(sb.url + '/apis/apps/v1/namespaces/default/deployments?watch=true', { headers: { Authorization: 'Bearer sandbox', Accept: 'application/json;as=Foo;g=meta.k8s.io;v=v1' } })
    t.equal(watch.status, 406, 'a watch too, before it starts')
    t.match(await watch.json(), { message: NOT_ACCEPTABLE })
    const write = await raw(sb, 'PATCH', '/apis/apps/v1/namespaces/default/deployments/a?fieldManager=partial-test', 'application/json;as=Foo;g=meta.k8s.io;v=v1', { metadata: { labels: { x: 'y' } } }, 'application/merge-patch+json')
    t.equal(write.status, 406, 'a write is refused before it is made')
    t.notOk((await client.get({ ...DEPLOY, namespace: 'default', name: 'a' })).metadata.labels?.x, 'nothing written')
  })

  t.test('a server-side apply answers 201 when it creates and 200 when the object existed (patch.go wasCreated), in any form asked for', async (t) => {
    const first = await client.applyObject({ ...deployment('e'), metadata: { name: 'e', namespace: 'default', labels: { app: 'e' } } })
    t.equal(first.created, true)
    const again = await client.applyObject({ ...deployment('e'), metadata: { name: 'e', namespace: 'default', labels: { app: 'e', more: 'x' } } })
    t.equal(again.created, false)
    t.equal(again.object.metadata.labels?.more, 'x')
    const partial = await raw(sb, 'PATCH', '/apis/apps/v1/namespaces/default/deployments/f?fieldManager=partial-test', PARTIAL, { ...deployment('f'), metadata: { name: 'f', namespace: 'default', labels: { app: 'f' } } }, 'application/apply-patch+yaml')
    t.equal(partial.status, 201)
    t.match(partial.json, { kind: 'PartialObjectMetadata', metadata: { name: 'f', uid: /./ } })
    const deleted = await raw(sb, 'DELETE', '/apis/apps/v1/namespaces/default/deployments/f', PARTIAL)
    t.equal(deleted.status, 200)
    t.equal(deleted.json.kind, 'Status', 'a Status is never converted')
  })
})

t.test('in-process requests negotiate too (Cluster.handle)', async (t) => {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  await sb.cluster.handle({ verb: 'create', group: 'apps', version: 'v1', resource: 'deployments', namespace: 'default', body: deployment('x') as unknown as KubeObject, query: new URLSearchParams() } as never)
  const r = await sb.cluster.handle({ verb: 'get', group: 'apps', version: 'v1', resource: 'deployments', namespace: 'default', name: 'x', query: new URLSearchParams(), accept: PARTIAL })
  t.match(r.body, { kind: 'PartialObjectMetadata', metadata: { name: 'x' } })
})
