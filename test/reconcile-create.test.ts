/**
 * The create path: one server-side apply carrying a fresh random uid, which on a missing object
 * takes the create-on-update path of apiserver registry/generic/registry/store.go `Update` (the
 * uid is the server's) and on an existing one is refused 422 `metadata.uid … field is immutable`
 * (registry/rest/update.go `BeforeUpdate`, `ValidateObjectMetaUpdate`). A create leaves only the
 * operator's `Apply` managedFields entry, so later applies own the rendered fields alone: a field
 * dropped from the render is removed, and nothing conflicts.
 */
import t from 'tap'
import type { KubeObject } from '../operator/controller/client.ts'
import type { RenderedObject } from '../operator/render/manifest.ts'
import { eventually, startBed } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
type Entry = { manager: string; operation: string; subresource?: string; fieldsV1?: Record<string, unknown> }
const entries = (o: KubeObject) => (o.metadata.managedFields ?? []) as Entry[]

t.test('objects created by the uid-guarded apply (store.go Update create path) are owned by the operator\'s Apply entry alone, from the create on: a field dropped from the render is removed', async (t) => {
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
  for (const o of [await bed.client.get(depRef), await bed.client.get(svcRef)]) t.same(entries(o).filter((e) => e.manager === 'memcached-operator').map((e) => e.operation), ['Apply'], `${o.kind}: created with the operator's Apply entry alone`)
  const status = async () => ((await bed.client.get(ref)).status as { observedGeneration?: number } | undefined)?.observedGeneration
  await eventually('reconciled', async () => ((await status()) === 1 ? true : undefined))
  const writes = bed.sandbox.requests.log().filter((r) => r.userAgent === 'memcached-operator/test' && r.resource !== 'events' && r.resource !== 'memcacheds' && r.verb !== 'list' && r.verb !== 'watch' && r.verb !== 'get')
  t.same([...new Set(writes.map((r) => `${r.verb} ${r.code}`))], ['patch 201'], 'each object written once: an apply that created it, no POST, no managedFields patch')

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

t.test('createOrGet: an apply refused for its uid (the object exists) reads the object; one gone before the read is applied again, once', async (t) => {
  const { ApiError } = await import('../operator/controller/client.ts')
  const { createOrGet } = await import('../operator/reconcile/create.ts')
  const calls: string[] = []
  const sent: KubeObject[] = []
  let present = true
  let gets = 0
  const uidRefused = (uid: string) => new ApiError(422, 'Invalid', `Service "s" is invalid: metadata.uid: Invalid value: "${uid}": field is immutable`, { name: 's', kind: 'Service', causes: [{ reason: 'FieldValueInvalid', message: `Invalid value: "${uid}": field is immutable`, field: 'metadata.uid' }] })
  const client = {
    async apply(o: KubeObject, opts: { fieldManager?: string; force?: boolean }) {
      calls.push(`apply ${opts.fieldManager} force=${opts.force}`)
      sent.push(o)
      if (present) throw uidRefused(o.metadata.uid ?? '')
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
  t.same([r.created, r.object.metadata.uid, calls], [true, 'new', ['apply memcached-operator force=true', 'get', 'apply memcached-operator force=true']])
  t.match(sent[0]?.metadata.uid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'a random (v4) uid')
  t.not(sent[0]?.metadata.uid, sent[1]?.metadata.uid, 'a fresh one each time')
  t.equal(d.metadata.uid, undefined, 'the rendered object is not changed')
  present = true
  const stubborn = { ...client, get: async () => (calls.push('get'), gets++, Promise.reject(new ApiError(404, 'NotFound', 'gone'))) } as unknown as Parameters<typeof createOrGet>[0]
  await t.rejects(createOrGet(stubborn, d), { name: 'ApiError', message: 'gone' }, 'a second disappearance is the caller\'s failure to report')
  await t.rejects(createOrGet({ apply: async () => Promise.reject(new ApiError(422, 'Invalid', 'bad', { causes: [{ field: 'spec.ports' }] })) } as unknown as Parameters<typeof createOrGet>[0], d), { name: 'ApiError', message: 'bad' }, 'any other refusal too')
  await t.rejects(createOrGet({ apply: async () => Promise.reject(new ApiError(409, 'Conflict', 'conflict')) } as unknown as Parameters<typeof createOrGet>[0], d), { name: 'ApiError', message: 'conflict' })
})

t.test('the create against the sandbox: a missing object is created with the server\'s uid; an existing one of somebody else is left as it was and read', async (t) => {
  const { KubeClient } = await import('../operator/controller/client.ts')
  const { createOrGet } = await import('../operator/reconcile/create.ts')
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const cm = (data: Record<string, string>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' }, data }) as unknown as RenderedObject
  const client = bed.client as InstanceType<typeof KubeClient>
  const made = await createOrGet(client, cm({ a: '1' }))
  t.equal(made.created, true)
  t.same(entries(made.object).map((e) => `${e.manager}/${e.operation}`), ['memcached-operator/Apply'])
  await client.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'c' })
  const theirs = await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' }, data: { a: 'theirs' } }, { fieldManager: 'someone' })
  const found = await createOrGet(client, cm({ a: 'ours' }))
  t.equal(found.created, false)
  t.equal(found.object.metadata.uid, theirs.metadata.uid)
  t.equal(found.object.metadata.resourceVersion, theirs.metadata.resourceVersion, 'nothing written to it')
  t.same((found.object as unknown as { data: unknown }).data, { a: 'theirs' })
})
