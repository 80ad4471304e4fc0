/**
 * /openapi/v2 and /openapi/v3 with real schemas: built-in kinds from upstream's definitions,
 * custom resources from their CRD (apiextensions-apiserver pkg/controller/openapi/builder), as
 * real kubectl 1.34 reads them — `explain`, the `fieldValidation` check, and client-side apply
 * choosing a strategic merge patch for built-ins and a JSON merge patch for custom resources.
 */
import t, { type Test } from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { memcachedCRD } from '../operator/api/crd.ts'
import { loadChart } from '../operator/render/chart.ts'
import { definitionName } from '../operator/sandbox/openapi.ts'
import { startSandbox, type Sandbox } from '../operator/sandbox/index.ts'
import type { KubeObject } from '../operator/sandbox/types.ts'
import { tempDir } from './support/tmp.ts'
import { kubectlPath } from './support/tools.ts'

// Tests read arbitrary document fields.
type Doc = Record<string, any>

async function sandbox(t: Tap): Promise<{ sb: Sandbox; kubectl: (args: string[], input?: string) => Promise<string>; get: (path: string, accept?: string) => Promise<{ status: number; doc: Doc }> }> {
  const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sb.close())
  const cache = tempDir('mc-kubectl-cache-')
  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const run = promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, '--cache-dir', cache, ...args], { timeout: 60_000 })
    if (input !== undefined) run.child.stdin?.end(input)
    return (await run).stdout
  }
  const get = async (path: string, accept = 'application/json'): Promise<{ status: number; doc: Doc }> => {
    const res = await fetch(sb.url + path, { headers: { Authorization: 'Bearer sandbox', Accept: accept } })
    return { status: res.status, doc: (await res.json()) as Doc }
  }
  return { sb, kubectl, get }
}

type Tap = Test

/** Every `$ref` in a document, with the path it was found at. */
function refs(doc: unknown, at = '$', out: { at: string; ref: string }[] = []): { at: string; ref: string }[] {
  if (Array.isArray(doc)) doc.forEach((v, i) => refs(v, `${at}[${i}]`, out))
  else if (typeof doc === 'object' && doc !== null) {
    for (const [k, v] of Object.entries(doc)) {
      if (k === '$ref' && typeof v === 'string') out.push({ at, ref: v })
      else refs(v, `${at}.${k}`, out)
    }
  }
  return out
}

t.test('kubectl explain prints the schemas: a CRD field\'s description, built-in fields, IntOrString and Quantity as kubectl names them', async (t) => {
  const { kubectl } = await sandbox(t)
  const size = await kubectl(['explain', 'mc.spec.size'])
  t.match(size, /KIND:\s+Memcached\nVERSION:\s+v1alpha1/)
  t.match(size, /FIELD: size <integer>/)
  t.match(size, /Number of memcached pods/, 'the description from the CRD\'s schema')
  const replicas = await kubectl(['explain', 'deploy.spec.replicas'])
  t.match(replicas, /FIELD: replicas <integer>\n[\s\S]*Number of desired pods\. This is a pointer to distinguish between explicit\s+zero and not specified\. Defaults to 1\./)
  t.match(await kubectl(['explain', 'svc.spec.clusterIP']), /FIELD: clusterIP <string>/)
  t.match(await kubectl(['explain', 'pdb.spec.minAvailable']), /FIELD: minAvailable <IntOrString>/)
  t.match(await kubectl(['explain', 'deploy.spec.template.spec.containers.resources.limits']), /FIELD: limits <map\[string\]Quantity>/)
  const mc = await kubectl(['explain', 'mc'])
  t.match(mc, /metadata\s+<ObjectMeta>\n\s+Standard object's metadata\./, 'metadata refers to ObjectMeta, as apiextensions builds it')
  t.match(mc, /spec\s+<Object>/)
})

t.test('the v3 documents: every kind with its group-version-kind, every reference resolved, PATCH operations with fieldValidation and the patch types a real server accepts', async (t) => {
  const { get } = await sandbox(t)
  const root = (await get('/openapi/v3')).doc
  for (const key of ['api/v1', 'apis/apps/v1', 'apis/policy/v1', 'apis/cache.example.com/v1alpha1']) t.match(root.paths[key], { serverRelativeURL: new RegExp(`^/openapi/v3/${key.replace(/\./g, '\\.')}\\?hash=[0-9A-F]{32}$`) }, key)
  for (const key of Object.keys(root.paths)) {
    const { status, doc } = await get(`/openapi/v3/${key}`)
    t.equal(status, 200, key)
    const schemas = doc.components.schemas as Record<string, Doc>
    const dangling = refs(doc).filter((r) => !schemas[r.ref.replace('#/components/schemas/', '')])
    t.same(dangling, [], `${key}: every reference resolves`)
  }
  const apps = (await get('/openapi/v3/apis/apps/v1')).doc
  t.same(apps.components.schemas['io.k8s.api.apps.v1.Deployment']['x-kubernetes-group-version-kind'], [{ group: 'apps', version: 'v1', kind: 'Deployment' }])
  t.equal(apps.components.schemas['io.k8s.api.core.v1.PodSpec'].properties.containers['x-kubernetes-patch-merge-key'], 'name', 'the patch metadata kubectl builds strategic merge patches from')
  const patch = apps.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}'].patch
  t.same(patch['x-kubernetes-group-version-kind'], { group: 'apps', version: 'v1', kind: 'Deployment' })
  t.ok(patch.parameters.some((p: Doc) => p.name === 'fieldValidation' && p.in === 'query'), 'kubectl leaves field validation to the server')
  t.same(Object.keys(patch.requestBody.content).sort(), ['application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json'])
  t.equal(apps.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale'].patch['x-kubernetes-group-version-kind'].kind, 'Scale')

  const cr = (await get('/openapi/v3/apis/cache.example.com/v1alpha1')).doc
  const name = definitionName('cache.example.com', 'v1alpha1', 'Memcached')
  t.equal(name, 'com.example.cache.v1alpha1.Memcached', 'named as kube-openapi util.ToRESTFriendlyName names it')
  const mc = cr.components.schemas[name]
  t.same(mc['x-kubernetes-group-version-kind'], [{ group: 'cache.example.com', version: 'v1alpha1', kind: 'Memcached' }])
  t.same(mc.properties.metadata, { allOf: [{ $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' }], description: "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata" })
  t.equal(mc.properties.spec.properties.size.type, 'integer')
  t.same(cr.components.schemas['com.example.cache.v1alpha1.MemcachedList'].properties.items.items, { $ref: `#/components/schemas/${name}` })
  const crPatch = cr.paths['/apis/cache.example.com/v1alpha1/namespaces/{namespace}/memcacheds/{name}'].patch
  t.notOk('application/strategic-merge-patch+json' in crPatch.requestBody.content, 'custom resources take no strategic merge patch')
  t.equal(crPatch.operationId, 'patchCacheExampleComV1alpha1NamespacedMemcached')
})

t.test('a CRD change gives its group-version a new document and hash; kubectl explain follows', async (t) => {
  const { sb, kubectl, get } = await sandbox(t)
  const before = (await get('/openapi/v3')).doc.paths['apis/cache.example.com/v1alpha1'].serverRelativeURL
  const appsBefore = (await get('/openapi/v3')).doc.paths['apis/apps/v1'].serverRelativeURL
  const crd = memcachedCRD(loadChart()) as unknown as Doc
  crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.zone = { type: 'string', description: 'The zone the cache serves.' }
  const client = await fetch(`${sb.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}?fieldManager=test&force=true`, { method: 'PATCH', headers: { Authorization: 'Bearer sandbox', 'Content-Type': 'application/apply-patch+yaml' }, body: JSON.stringify(crd) })
  t.equal(client.status, 200)
  const after = (await get('/openapi/v3')).doc.paths
  t.not(after['apis/cache.example.com/v1alpha1'].serverRelativeURL, before, 'a new hash')
  t.equal(after['apis/apps/v1'].serverRelativeURL, appsBefore, 'other group-versions keep theirs')
  t.match(await kubectl(['explain', 'mc.spec.zone']), /The zone the cache serves\./)
})

t.test('a CRD installed after kubectl cached discovery: explain by the plural answers; by the short name it fails once, as against any API server (client-go restmapper/shortcut.go expands a short name again after a refresh only in KindFor; explain maps with ResourceFor)', async (t) => {
  const { kubectl } = await sandbox(t)
  const crd = memcachedCRD(loadChart()) as unknown as KubeObject
  const name = crd.metadata.name as string
  await kubectl(['delete', 'crd', name])
  t.notMatch(await kubectl(['api-resources']), /memcacheds/, 'discovery cached without the CRD')
  await kubectl(['create', '-f', '-'], JSON.stringify(crd))
  const refused = await kubectl(['explain', 'mc.spec.size']).then(() => undefined, (err: { stderr?: string }) => err)
  t.match(refused?.stderr, /the server doesn't have a resource type "mc"/, 'the short name, from the stale cache')
  t.match(await kubectl(['explain', 'mc.spec.size']), /FIELD: size <integer>/, 'the failed call refreshed the cache')
  // What docs/operator.md runs: the plural refreshes the cache when it is not found there.
  await kubectl(['delete', 'crd', name])
  await kubectl(['api-resources'])
  await kubectl(['create', '-f', '-'], JSON.stringify(crd))
  t.match(await kubectl(['explain', 'memcacheds.spec.size']), /FIELD: size <integer>/, 'the plural, from the same stale cache')
})

t.test('/openapi/v2: one Swagger 2.0 document of every served kind, custom resources as apiextensions writes them for v2 (its protobuf form: sandbox-openapi-v2-protobuf.test.ts)', async (t) => {
  const { get } = await sandbox(t)
  const { status, doc } = await get('/openapi/v2')
  t.equal(status, 200)
  t.equal(doc.swagger, '2.0')
  t.same(refs(doc).filter((r) => !doc.definitions[r.ref.replace('#/definitions/', '')]), [], 'every reference resolves')
  t.same(doc.definitions['io.k8s.api.core.v1.Service']['x-kubernetes-group-version-kind'], [{ group: '', kind: 'Service', version: 'v1' }])
  const mc = doc.definitions['com.example.cache.v1alpha1.Memcached']
  t.same(mc.properties.metadata, { $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta', description: "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata" })
  t.ok(refs(mc).length > 0 && JSON.stringify(mc).includes('"nullable"') === false, 'no nullable in v2 (openapi/v2 ToStructuralOpenAPIV2)')
  t.ok(doc.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}'].patch.parameters.some((p: Doc) => p.name === 'fieldValidation'))
})

t.test('client-side kubectl apply: a strategic merge patch for a Deployment (built from the v3 schema\'s patch metadata), a JSON merge patch for a Memcached; unchanged re-applies and diffs are empty', async (t) => {
  const { sb, kubectl } = await sandbox(t)
  const deployment = (image: string, env: string) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: "${image}", env: [{name: ${env}, value: "1"}]}
      - {name: side, image: busybox}
`
  await kubectl(['apply', '-f', '-'], deployment('nginx:1', 'A'))
  sb.requests.reset()
  await kubectl(['apply', '-f', '-'], deployment('nginx:2', 'B'))
  const patches = sb.requests.log().filter((r) => r.verb === 'patch' && r.resource === 'deployments')
  t.same(patches.map((p) => [p.patchType, p.fieldManager]), [['strategic', 'kubectl-client-side-apply']])
  const live = JSON.parse(await kubectl(['get', 'deploy/web', '-o', 'json']))
  t.same(live.spec.template.spec.containers.map((c: Doc) => [c.name, c.image, c.env?.map((e: Doc) => e.name)]), [['app', 'nginx:2', ['B']], ['side', 'busybox', undefined]], 'containers merged by name, the env var replaced')
  t.match(await kubectl(['apply', '-f', '-'], deployment('nginx:2', 'B')), /unchanged/)
  await kubectl(['diff', '-f', '-'], deployment('nginx:2', 'B'))

  const cr = (size: number) => `apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: c, namespace: default}\nspec: {size: ${size}}\n`
  await kubectl(['apply', '-f', '-'], cr(1))
  sb.requests.reset()
  await kubectl(['apply', '-f', '-'], cr(2))
  t.same(sb.requests.log().filter((r) => r.verb === 'patch' && r.resource === 'memcacheds').map((p) => p.patchType), ['merge'])
  t.equal(JSON.parse(await kubectl(['get', 'mc/c', '-o', 'json'])).spec.size, 2)
})
