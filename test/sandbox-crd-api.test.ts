import t, { type Test } from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { startSandbox } from '../operator/sandbox/index.ts'
import type { ApiRequest, ApiResponse } from '../operator/sandbox/types.ts'
import { memcachedCRD } from './sandbox-crd-fixture.ts'
import { kubectlPath } from './support/tools.ts'

type Obj = Record<string, any>
type Req = Partial<ApiRequest> & Pick<ApiRequest, 'verb'>

async function sandbox(t: Test) {
  const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD()] })
  t.teardown(() => sb.close())
  const call = (r: Req): Promise<ApiResponse> =>
    sb.cluster.handle({ group: 'cache.example.com', version: 'v1alpha1', resource: 'memcacheds', namespace: 'default', query: new URLSearchParams(), ...r } as ApiRequest)
  return { sb, call }
}

function mc(name: string, spec: Obj): Obj {
  return { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name }, spec }
}

t.test('an invalid custom resource is refused with 422 and the real messages', async (t) => {
  const { call } = await sandbox(t)
  const one = await call({ verb: 'create', body: mc('x', { size: -1 }) })
  t.equal(one.status, 422)
  t.match(one.body, {
    kind: 'Status', status: 'Failure', reason: 'Invalid', code: 422,
    message: 'Memcached.cache.example.com "x" is invalid: spec.size: Invalid value: -1: spec.size in body should be greater than or equal to 0',
    details: { name: 'x', group: 'cache.example.com', kind: 'Memcached', causes: [{ reason: 'FieldValueInvalid', message: 'Invalid value: -1: spec.size in body should be greater than or equal to 0', field: 'spec.size' }] },
  })
  const two = await call({ verb: 'create', body: mc('y', { size: 'string', mode: 'x' }) })
  t.equal(two.status, 422)
  t.equal((two.body as Obj).message, 'Memcached.cache.example.com "y" is invalid: [spec.size: Invalid value: "string": spec.size in body must be of type integer: "string", spec.mode: Unsupported value: "x": supported values: "a", "b"]')
  const three = await call({ verb: 'create', body: mc('z', {}) })
  t.equal((three.body as Obj).message, 'Memcached.cache.example.com "z" is invalid: spec.size: Required value')
})

t.test('a custom resource is pruned with a Warning and defaulted on create', async (t) => {
  const { call } = await sandbox(t)
  const res = await call({ verb: 'create', body: mc('x', { size: 2, bogus: 1, servers: [{ name: 'a' }] }) })
  t.equal(res.status, 201)
  const o = res.body as Obj
  t.same(o.spec, { size: 2, servers: [{ name: 'a', weight: 1 }], image: 'memcached:1.6', resources: { memory: '64Mi' } })
  t.equal(res.headers?.['Warning'], '299 - "unknown field \\"spec.bogus\\""')
  const got = (await call({ verb: 'get', name: 'x' })).body as Obj
  t.same(got.spec, o.spec, 'stored as defaulted')
})

t.test('a Table of custom resources carries the printer columns', async (t) => {
  const { call } = await sandbox(t)
  await call({ verb: 'create', body: mc('a', { size: 3 }) })
  const res = await call({ verb: 'list', accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' })
  t.equal(res.status, 200)
  const table = res.body as Obj
  t.equal(table.kind, 'Table')
  t.equal(table.apiVersion, 'meta.k8s.io/v1')
  t.same(table.columnDefinitions.map((c: Obj) => [c.name, c.type]), [['Name', 'string'], ['Size', 'integer'], ['Ready', 'integer'], ['Age', 'date']])
  t.equal(table.rows.length, 1)
  t.match(table.rows[0].cells, ['a', 3, null, /^\d+s$/])
  t.match(table.rows[0].object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { name: 'a', namespace: 'default' } })
})

t.test('kubectl get shows a custom resource with its printer columns', async (t) => {
  const { sb, call } = await sandbox(t)
  await call({ verb: 'create', body: mc('cache', { size: 5 }) })
  const { stdout } = await promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, 'get', 'memcacheds', '-n', 'default'])
  const [header, row] = stdout.trim().split('\n')
  t.match(header, /^NAME\s+SIZE\s+READY\s+AGE$/)
  t.match(row, /^cache\s+5\s+\d+s$/, "an absent value is an empty cell, as on a real cluster")
})

/** A PATCH over the sandbox's HTTP listener, as a client sends it; the answer's status and body. */
async function patchOverHttp(sb: { url: string }, path: string, contentType: string, body: unknown): Promise<{ status: number; body: Obj }> {
  const res = await fetch(sb.url + path, { method: 'PATCH', headers: { Authorization: 'Bearer sandbox', 'Content-Type': contentType }, body: JSON.stringify(body) })
  return { status: res.status, body: (await res.json()) as Obj }
}

function fieldsOf(o: Obj, manager: string): Obj | undefined {
  return (o.metadata.managedFields as Obj[]).find((e) => e.manager === manager)?.fieldsV1
}

// structured-merge-diff v6.3.0 merge/multiple_appliers_test.go TestMultipleAppliersDeducedType
// (multiple_appliers_recursive_map_deduced), on a preserved-unknown field: everything under
// spec.extra is `__untyped_deduced_` (kube-openapi schemaconv parseObject), whose maps are
// separable. A null applied against one of its maps merges like a null against any granular map
// (typed/merge.go doMap: the live entries against a nil map stay), so the first applier keeps
// what it owns under it; when that applier then drops the map, prune removes the entry it alone
// applied (merge/update.go prune, typed/remove.go) with what a controller wrote inside it.
t.test('merge/multiple_appliers_test.go (structured-merge-diff): a null applied over a preserved-unknown map leaves it and its owner; the owner dropping it removes what a controller wrote inside', async (t) => {
  const { sb } = await sandbox(t)
  const path = '/apis/cache.example.com/v1alpha1/namespaces/default/memcacheds/x'
  const apply = 'application/apply-patch+yaml'
  const one = await patchOverHttp(sb, `${path}?fieldManager=apply-one`, apply, mc('x', { size: 1, extra: { a: { b: null }, c: { d: null } } }))
  t.equal(one.status, 201)
  const two = await patchOverHttp(sb, `${path}?fieldManager=apply-two`, apply, mc('x', { size: 1, extra: { a: null, c: { d: null } } }))
  t.equal(two.status, 200)
  t.same(two.body.spec.extra, { a: { b: null }, c: { d: null } }, 'the null leaves the live map as it is')
  t.same(fieldsOf(two.body, 'apply-one'), { 'f:spec': { 'f:extra': { 'f:a': { '.': {}, 'f:b': {} }, 'f:c': { '.': {}, 'f:d': {} } }, 'f:size': {} } }, 'the first applier still owns extra.a.b')
  t.same(fieldsOf(two.body, 'apply-two'), { 'f:spec': { 'f:extra': { 'f:a': {}, 'f:c': { '.': {}, 'f:d': {} } }, 'f:size': {} } })
  const controller = await patchOverHttp(sb, `${path}?fieldManager=controller`, 'application/merge-patch+json', { spec: { extra: { a: { b: { c: 'x' } } } } })
  t.equal(controller.status, 200)
  t.same(fieldsOf(controller.body, 'controller'), { 'f:spec': { 'f:extra': { 'f:a': { 'f:b': { 'f:c': {} } } } } }, 'a null that becomes a map is not itself modified: the controller owns only what it added')
  const dropped = await patchOverHttp(sb, `${path}?fieldManager=apply-one`, apply, mc('x', { size: 1 }))
  t.equal(dropped.status, 200)
  t.same(dropped.body.spec.extra, { a: null, c: { d: null } }, 'extra.a.b goes whole, the map it emptied left null')
  t.same(fieldsOf(dropped.body, 'apply-one'), { 'f:spec': { 'f:size': {} } })
  t.same(fieldsOf(dropped.body, 'apply-two'), { 'f:spec': { 'f:extra': { 'f:a': {}, 'f:c': { '.': {}, 'f:d': {} } }, 'f:size': {} } })
  t.equal(fieldsOf(dropped.body, 'controller'), undefined, 'the controller lost all it owned with the removed entry')
})
