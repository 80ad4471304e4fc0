/**
 * `/openapi/v2` in gnostic's protobuf (kube-openapi pkg/handler/handler.go: `ToProtoBinary`, the
 * media types it answers and its bare 406), read back field by field with gnostic-models'
 * openapiv2/OpenAPIv2.proto numbers, and by real kubectl 1.34, whose client-side validation of a
 * `v1 List` reads it (client-go discovery `OpenAPISchema`).
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import YAML from 'yaml'
import { memcachedCRD } from '../operator/api/crd.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { openapiV2Format } from '../operator/sandbox/openapi-proto.ts'
import type { KubeObject } from '../operator/sandbox/types.ts'
import { tempDir } from './support/tmp.ts'
import { kubectlPath } from './support/tools.ts'

const PB = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf'

/** Protocol buffers' wire format, read: field number → values (bytes for length-delimited fields). */
function fields(b: Buffer): Map<number, (Buffer | bigint)[]> {
  const out = new Map<number, (Buffer | bigint)[]>()
  let i = 0
  const varint = (): bigint => {
    let v = 0n
    let shift = 0n
    for (;;) {
      const byte = b[i++]!
      v |= BigInt(byte & 0x7f) << shift
      shift += 7n
      if ((byte & 0x80) === 0) return v
    }
  }
  while (i < b.length) {
    const tag = Number(varint())
    const [field, wire] = [tag >> 3, tag & 7]
    let value: Buffer | bigint
    if (wire === 0) value = varint()
    else if (wire === 2) {
      const n = Number(varint())
      value = b.subarray(i, i + n)
      i += n
    } else if (wire === 1) {
      value = b.subarray(i, i + 8)
      i += 8
    } else throw new Error(`wire type ${wire}`)
    out.set(field, [...(out.get(field) ?? []), value])
  }
  return out
}
const one = (m: Map<number, (Buffer | bigint)[]>, f: number): Buffer => m.get(f)?.[0] as Buffer
const str = (m: Map<number, (Buffer | bigint)[]>, f: number): string | undefined => one(m, f)?.toString('utf8')
const all = (m: Map<number, (Buffer | bigint)[]>, f: number): Map<number, (Buffer | bigint)[]>[] => ((m.get(f) ?? []) as Buffer[]).map(fields)

t.test('handler.go: protobuf under either media type name, JSON for JSON or */*, a bare 406 otherwise', async (t) => {
  t.equal(openapiV2Format(PB), 'protobuf')
  t.equal(openapiV2Format('application/com.github.proto-openapi.spec.v2.v1.0+protobuf'), 'protobuf')
  t.equal(openapiV2Format(undefined), 'json')
  t.equal(openapiV2Format('*/*'), 'json')
  t.equal(openapiV2Format(`application/json;q=0.5, ${PB}`), 'protobuf', 'by q first')
  t.equal(openapiV2Format(`${PB};q=0, application/json`), 'json', 'q=0 is refused')
  t.equal(openapiV2Format('application/yaml'), undefined)
  const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sb.close())
  const get = (accept: string) => fetch(sb.url + '/openapi/v2', { headers: { Authorization: 'Bearer sandbox', Accept: accept } })
  const refused = await get('application/yaml')
  t.equal(refused.status, 406)
  t.equal(await refused.text(), '', 'no Status body (handler.go writes the code only)')
  const json = await get('application/json')
  const doc = (await json.json()) as { swagger: string; info: { title: string }; definitions: Record<string, Record<string, unknown>>; paths: Record<string, unknown> }
  const res = await get(PB)
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf')
  t.equal(res.headers.get('etag'), json.headers.get('etag'), 'one ETag for both forms')
  t.equal(res.headers.get('vary'), 'Accept')
  t.match(res.headers.get('etag'), /^"[0-9A-F]{128}"$/, 'the upper-case hex SHA-512 of the JSON, quoted')
  const d = fields(Buffer.from(await res.arrayBuffer()))
  t.equal(str(d, 1), '2.0', 'Document.swagger')
  t.equal(str(fields(one(d, 2)), 1), doc.info.title, 'Document.info.title')
  const definitions = all(fields(one(d, 9)), 1)
  t.same(definitions.map((n) => str(n, 1)), Object.keys(doc.definitions), 'Document.definitions: NamedSchema in the document\'s order')
  const service = definitions.find((n) => str(n, 1) === 'io.k8s.api.core.v1.Service')!
  const schema = fields(one(service, 2))
  t.same(all(schema, 22).map((ty) => str(ty, 1)), ['object'], 'Schema.type (TypeItem)')
  const ext = all(schema, 31).map((e) => [str(e, 1), YAML.parse(str(fields(one(e, 2)), 2) ?? '')])
  t.same(ext, [['x-kubernetes-group-version-kind', [{ group: '', kind: 'Service', version: 'v1' }]]], 'vendor extensions as NamedAny holding YAML')
  const props = all(fields(one(schema, 25)), 1).map((n) => str(n, 1))
  t.same(props, Object.keys(doc.definitions['io.k8s.api.core.v1.Service']!.properties as object), 'Schema.properties')
  const paths = all(fields(one(d, 8)), 2).map((n) => str(n, 1))
  t.same(paths, Object.keys(doc.paths), 'Document.paths: NamedPathItem')
  const deployment = all(fields(one(d, 8)), 2).find((n) => str(n, 1) === '/apis/apps/v1/namespaces/{namespace}/deployments/{name}')!
  const patch = fields(one(fields(one(deployment, 2)), 8))
  t.equal(str(patch, 5), 'patchAppsV1NamespacedDeployment', 'Operation.operation_id')
  const parameters = all(patch, 8).map((p) => fields(one(p, 1)))
  t.equal(str(fields(one(parameters[0]!, 1)), 2), 'body', 'a body parameter (BodyParameter.name)')
  const query = parameters.filter((p) => p.has(2)).map((p) => fields(one(fields(one(p, 2)), 3)))
  t.same(query.map((q) => str(q, 4)), ['dryRun', 'fieldManager', 'fieldValidation', 'force'], 'query parameters (QueryParameterSubSchema.name)')
  t.ok(query.every((q) => q.get(20)?.[0] === 1n), 'QueryParameterSubSchema.unique_items')
})

t.test('real kubectl: apply -f of a v1 List validates each item client-side against /openapi/v2, as on a real cluster', async (t) => {
  const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sb.close())
  const dir = tempDir('mc-list-')
  const kubectl = async (file: string, text: string, ...flags: string[]) => {
    writeFileSync(join(dir, file), text)
    return promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, '--cache-dir', tempDir('mc-kubectl-cache-'), 'apply', ...flags, '-f', join(dir, file)], { timeout: 60_000 }).then(
      (r) => ({ code: 0, out: r.stdout, err: r.stderr }),
      (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? -1, out: e.stdout ?? '', err: e.stderr ?? '' }),
    )
  }
  const list = (cm: string, spec: string) => `apiVersion: v1\nkind: List\nitems:\n- apiVersion: cache.example.com/v1alpha1\n  kind: Memcached\n  metadata: {name: a, namespace: default}\n  spec: ${spec}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: b, namespace: default}\n${cm}`
  const ok = await kubectl('list.yaml', list('  data: {x: "1"}\n', '{size: 1}'))
  t.equal(ok.code, 0, ok.err)
  t.match(ok.out, 'memcached.cache.example.com/a created')
  t.match(ok.out, 'configmap/b created')
  const typo = await kubectl('typo.yaml', list('  datta: {x: "1"}\n', '{size: 1}'))
  t.equal(typo.code, 1)
  t.match(typo.err, 'ValidationError(ConfigMap): unknown field "datta" in io.k8s.api.core.v1.ConfigMap')
  const crTypo = await kubectl('cr.yaml', list('  data: {x: "1"}\n', '{size: 1, sise: 2}'))
  t.equal(crTypo.code, 1)
  t.match(crTypo.err, 'ValidationError(Memcached.spec): unknown field "sise" in com.example.cache.v1alpha1.Memcached.spec')
})
