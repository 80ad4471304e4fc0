/**
 * The create path's managedFields: a POST leaves an `Update` entry of the operator's manager that
 * owns every field the request set and every field the server defaulted while decoding it
 * (structured-merge-diff merge/update.go); reconcile/create.ts turns it into the operator's
 * `Apply` entry for exactly the rendered fields, so that later applies own them alone: a field
 * dropped from the render is removed, and nothing conflicts.
 */
import t from 'tap'
import type { KubeObject } from '../operator/controller/client.ts'
import { ownershipPatch, ownUpdateEntry, renderedFields } from '../operator/reconcile/create.ts'
import type { RenderedObject } from '../operator/render/manifest.ts'
import { eventually, startBed } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
type Entry = { manager: string; operation: string; subresource?: string; fieldsV1?: Record<string, unknown> }
const entries = (o: KubeObject) => (o.metadata.managedFields ?? []) as Entry[]

t.test('renderedFields keeps what the render sets, in an apply entry\'s shape', async (t) => {
  const update = {
    'f:metadata': { 'f:labels': { '.': {}, 'f:a': {}, 'f:b': {} } },
    'f:spec': {
      'f:progressDeadlineSeconds': {},
      'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"c"}': { '.': {}, 'f:image': {}, 'f:imagePullPolicy': {}, 'f:ports': { '.': {}, 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {}, 'f:protocol': {} } } }, 'k:{"name":"gone"}': { '.': {} }, 'k:not json': {} } } },
      'f:finalizers': { 'v:"x"': {}, 'v:"y"': {}, 'v:{': {} },
    },
  }
  const desired = { metadata: { labels: { a: '1' } }, spec: { template: { spec: { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 80 }] }] } }, finalizers: ['x'] } }
  t.same(renderedFields(update, desired, []), {
    'f:metadata': { 'f:labels': { 'f:a': {} } },
    'f:spec': {
      'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"c"}': { '.': {}, 'f:image': {}, 'f:ports': { 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} } } } } } },
      'f:finalizers': { 'v:"x"': {} },
    },
  }, 'defaults (progressDeadlineSeconds, imagePullPolicy, protocol), items and labels not rendered, and unreadable keys left out; `.` only on list items')
})

t.test('ownershipPatch guards the entry it rewrites, and drops it when an Apply entry of ours exists', async (t) => {
  const d = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'default', labels: { a: '1' } } } as RenderedObject
  const live = (extra: Entry[]): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', managedFields: [...extra, { manager: 'memcached-operator', operation: 'Update', fieldsV1: '{"f:metadata":{"f:labels":{".":{},"f:a":{}}}}' } as unknown as Entry] } })
  t.equal(ownershipPatch({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }, d), undefined, 'nothing to move without managedFields')
  t.equal(ownUpdateEntry(live([])), 0)
  t.same(ownershipPatch(live([{ manager: 'kube-controller-manager', operation: 'Update', subresource: 'status' }]), d), [
    { op: 'test', path: '/metadata/managedFields/1/manager', value: 'memcached-operator' },
    { op: 'test', path: '/metadata/managedFields/1/operation', value: 'Update' },
    { op: 'test', path: '/metadata/managedFields/1/fieldsV1', value: { 'f:metadata': { 'f:labels': { '.': {}, 'f:a': {} } } } },
    { op: 'replace', path: '/metadata/managedFields/1', value: { manager: 'memcached-operator', operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:labels': { 'f:a': {} } } } } },
  ], 'addressed by its index among every entry (the cache keeps stubs of the others)')
  t.same(ownershipPatch(live([{ manager: 'memcached-operator', operation: 'Apply' }]), d)?.at(-1), { op: 'remove', path: '/metadata/managedFields/1' }, 'an Apply entry of ours already there: the Update entry goes')
})

t.test('objects created with a POST are owned by the operator\'s Apply entry alone: a field dropped from the render is removed', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const ref = { ...MC, namespace: 'default', name: 'annotated' }
  await bed.client.create({ ...MC, metadata: { name: 'annotated', namespace: 'default' }, spec: { size: 2, podAnnotations: { 'example.com/pod': 'p' }, service: { annotations: { 'example.com/svc': 's' } } } })
  const svcRef = { apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'annotated' }
  const depRef = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'annotated' }
  const podAnnotations = (d: KubeObject) => ((d.spec as { template: { metadata: { annotations?: Record<string, string> } } }).template.metadata.annotations ?? {})
  await eventually('created', async () => ((await bed.client.get(svcRef).catch(() => undefined)) && (await bed.client.get(depRef).catch(() => undefined)) ? true : undefined))
  t.equal((await bed.client.get(svcRef)).metadata.annotations?.['example.com/svc'], 's')
  t.equal(podAnnotations(await bed.client.get(depRef))['example.com/pod'], 'p')
  const status = async () => ((await bed.client.get(ref)).status as { observedGeneration?: number } | undefined)?.observedGeneration
  await eventually('reconciled', async () => ((await status()) === 1 ? true : undefined))

  await bed.client.patch(ref, { spec: { podAnnotations: null, service: { annotations: null } } }, { type: 'merge' })
  await eventually('the annotations removed', async () => {
    const [svc, dep] = [await bed.client.get(svcRef), await bed.client.get(depRef)]
    return svc.metadata.annotations?.['example.com/svc'] === undefined && podAnnotations(dep)['example.com/pod'] === undefined ? true : undefined
  })
  const dep = await bed.client.get(depRef)
  t.equal((dep.spec as { progressDeadlineSeconds?: number }).progressDeadlineSeconds, 600, 'the server\'s defaults stay')
  for (const o of [dep, await bed.client.get(svcRef)]) t.same(entries(o).filter((e) => e.manager === 'memcached-operator').map((e) => e.operation), ['Apply'], `${o.kind}: the operator's Apply entry alone`)
  t.same(bed.sandbox.requests.log().filter((r) => r.userAgent === 'memcached-operator/test' && r.code === 409 && r.resource !== 'events'), [], 'no conflict on any write')
})

t.test('createOrGet: a POST refused with AlreadyExists reads the object; one gone before the read is POSTed again, once', async (t) => {
  const { ApiError } = await import('../operator/controller/client.ts')
  const { createOrGet } = await import('../operator/reconcile/create.ts')
  const calls: string[] = []
  let present = true
  let gets = 0
  const client = {
    async create(o: KubeObject) {
      calls.push('create')
      if (present) throw new ApiError(409, 'AlreadyExists', 'exists')
      return { ...o, metadata: { ...o.metadata, uid: 'new' } }
    },
    async get() {
      calls.push('get')
      gets++
      present = false
      throw new ApiError(404, 'NotFound', 'gone')
    },
  } as unknown as Parameters<typeof createOrGet>[0]
  const d = { apiVersion: 'v1', kind: 'Service', metadata: { name: 's', namespace: 'default' } } as RenderedObject
  const r = await createOrGet(client, d)
  t.same([r.created, r.object.metadata.uid, calls], [true, 'new', ['create', 'get', 'create']])
  present = true
  const stubborn = { ...client, get: async () => (calls.push('get'), gets++, Promise.reject(new ApiError(404, 'NotFound', 'gone'))) } as unknown as Parameters<typeof createOrGet>[0]
  await t.rejects(createOrGet(stubborn, d), { name: 'ApiError', message: 'gone' }, 'a second disappearance is the caller\'s failure to report')
  await t.rejects(createOrGet({ create: async () => Promise.reject(new ApiError(422, 'Invalid', 'bad')) } as unknown as Parameters<typeof createOrGet>[0], d), { name: 'ApiError', message: 'bad' }, 'any other refusal too')
})
