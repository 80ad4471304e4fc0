import t from 'tap'
import { AppliedMemory, hashDesired, stableJson } from '../operator/reconcile/applied.ts'

const desired = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'cache', namespace: 'team' }, spec: { ports: [{ port: 11211 }] } }
const live = (uid: string, resourceVersion: string, owner = 'cr-1') => ({ metadata: { uid, resourceVersion, ownerReferences: [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', name: 'cache', uid: owner, controller: true }] } })

t.test('stable JSON and the hash ignore map key order, not list order', async (t) => {
  t.equal(stableJson({ b: 1, a: { d: [2, { y: 1, x: 0 }], c: null } }), '{"a":{"c":null,"d":[2,{"x":0,"y":1}]},"b":1}')
  t.equal(stableJson({ a: undefined, b: [undefined] }), '{"b":[null]}', 'undefined as JSON.stringify treats it')
  t.equal(stableJson(undefined), 'null')
  t.equal(hashDesired({ a: 1, b: 2 }), hashDesired({ b: 2, a: 1 }))
  t.not(hashDesired({ a: [1, 2] }), hashDesired({ a: [2, 1] }))
  t.match(hashDesired(desired), /^[0-9a-f]{64}$/)
})

t.test('unchanged since apply: same uid, same resourceVersion, same desired', async (t) => {
  const m = new AppliedMemory()
  m.remember(live('u1', '10'), desired)
  t.ok(m.isUnchangedSinceApply(structuredClone(desired), live('u1', '10')))
  t.notOk(m.isUnchangedSinceApply(desired, live('u1', '11')), 'someone wrote the object since')
  t.notOk(m.isUnchangedSinceApply({ ...desired, spec: { ports: [{ port: 11311 }] } }, live('u1', '10')), 'we render something else now')
  t.notOk(m.isUnchangedSinceApply(desired, live('u2', '10')), 'another object of the same name (re-created)')
  t.notOk(m.isUnchangedSinceApply(desired, undefined), 'a missing object')
  t.notOk(m.isUnchangedSinceApply(desired, { metadata: {} }), 'an object without uid')
})

t.test('remembering again replaces the entry; objects without uid or resourceVersion are not remembered', async (t) => {
  const m = new AppliedMemory()
  m.remember(live('u1', '10'), desired)
  m.remember(live('u1', '12'), desired)
  t.equal(m.size, 1)
  t.notOk(m.isUnchangedSinceApply(desired, live('u1', '10')))
  t.ok(m.isUnchangedSinceApply(desired, live('u1', '12')))
  t.same(m.get('u1'), { resourceVersion: '12', desiredHash: hashDesired(desired), ownerUid: 'cr-1' })
  m.remember({ metadata: { uid: 'u9' } }, desired)
  m.remember({ metadata: { resourceVersion: '1' } }, desired)
  t.equal(m.size, 1)
})

t.test('forget one object, all objects of a CR, or everything', async (t) => {
  const m = new AppliedMemory()
  m.remember(live('a', '1', 'cr-1'), desired)
  m.remember(live('b', '1', 'cr-1'), desired)
  m.remember(live('c', '1', 'cr-2'), desired)
  m.remember({ metadata: { uid: 'd', resourceVersion: '1' } }, desired)
  m.forget('a')
  t.notOk(m.isUnchangedSinceApply(desired, live('a', '1')))
  t.equal(m.forgetOwner('cr-1'), 1)
  t.equal(m.forgetOwner('cr-1'), 0)
  t.ok(m.isUnchangedSinceApply(desired, live('c', '1', 'cr-2')), 'other CRs are kept')
  t.equal(m.get('d')?.ownerUid, undefined)
  m.clear()
  t.equal(m.size, 0)
})

t.test('the memory is bounded: the least recently used entry goes first', async (t) => {
  const m = new AppliedMemory({ maxEntries: 2 })
  m.remember(live('a', '1'), desired)
  m.remember(live('b', '1'), desired)
  t.ok(m.isUnchangedSinceApply(desired, live('a', '1')), 'a is used, so b is now the oldest')
  m.remember(live('c', '1'), desired)
  t.equal(m.size, 2)
  t.notOk(m.isUnchangedSinceApply(desired, live('b', '1')), 'b was dropped')
  t.ok(m.isUnchangedSinceApply(desired, live('a', '1')))
  t.ok(m.isUnchangedSinceApply(desired, live('c', '1')))
  t.throws(() => new AppliedMemory({ maxEntries: 0 }), RangeError)
  t.throws(() => new AppliedMemory({ maxEntries: 1.5 }), RangeError)
})

t.test('forgetting a CR counts only what is still remembered of it: not entries the bound dropped, nor objects now controlled by another CR', async (t) => {
  const m = new AppliedMemory({ maxEntries: 2 })
  m.remember(live('a', '1', 'cr-1'), desired)
  m.remember(live('b', '1', 'cr-1'), desired)
  m.remember(live('c', '1', 'cr-2'), desired)
  t.equal(m.get('a'), undefined, 'a was dropped by the bound')
  m.remember(live('b', '2', 'cr-2'), desired)
  t.equal(m.forgetOwner('cr-1'), 0, 'b is now cr-2\'s')
  t.equal(m.forgetOwner('cr-2'), 2)
  t.equal(m.size, 0)
})

t.test('a later version in which our managedFields entry is as our apply left it is unchanged: its status or others\' fields changed, none of ours', async (t) => {
  const ours = { manager: 'memcached-operator', operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } }
  const status = { manager: 'kube-controller-manager', operation: 'Update', apiVersion: 'apps/v1', subresource: 'status', fieldsV1: { 'f:status': {} } }
  const version = (rv: string, managedFields: unknown[], extra: Record<string, unknown> = {}) => ({ metadata: { ...live('u1', rv).metadata, managedFields, ...extra } })
  const m = new AppliedMemory()
  m.remember(version('10', [ours]), desired)
  t.ok(m.isUnchangedSinceApply(desired, version('11', [ours, status])), 'its status written by its controller since')
  t.ok(m.isUnchangedSinceApply(desired, version('12', [{ ...ours, fieldsV1: JSON.stringify(ours.fieldsV1) }])), 'the same entry as the informer caches it (fieldsV1 as its JSON text)')
  t.ok(m.isUnchangedSinceApply(desired, version('13', [{ ...ours, time: '2026-11-25T10:00:00Z' }, { manager: 'kubectl-label', operation: 'Update', fieldsV1: { 'f:metadata': { 'f:labels': { 'f:team': {} } } } }])), 'a label somebody else added')
  t.notOk(m.isUnchangedSinceApply(desired, version('14', [{ ...ours, fieldsV1: {} }, { manager: 'kubectl-scale', operation: 'Update', fieldsV1: { 'f:spec': { 'f:replicas': {} } } }])), 'a field of ours somebody changed: it left our entry')
  t.notOk(m.isUnchangedSinceApply(desired, version('15', [ours], { deletionTimestamp: '2026-11-25T10:00:00Z' })), 'being deleted')
  t.notOk(m.isUnchangedSinceApply(desired, version('16', [])), 'our entry gone (managedFields reset)')
  t.notOk(m.isUnchangedSinceApply({ ...desired, spec: {} }, version('17', [ours])), 'we render something else')
  t.ok(m.isStill(version('18', [ours, status]), hashDesired(desired)), 'isStill tells the same from the hash')
  t.notOk(m.isStill(version('18', [ours]), hashDesired({ ...desired, spec: {} })), 'another desired hash')

  const bare = new AppliedMemory()
  bare.remember(live('u2', '1'), desired)
  t.notOk(bare.isUnchangedSinceApply(desired, { metadata: { ...live('u2', '2').metadata, managedFields: [ours] } }), 'applied without an entry of ours: only the same resourceVersion tells')
})

t.test('an object a cache showed and a diff found equal is remembered by its resourceVersion only: the cache may lag behind an apply of ours', async (t) => {
  const ours = { manager: 'memcached-operator', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:ports': {} } } }
  const version = (rv: string) => ({ metadata: { ...live('u1', rv).metadata, managedFields: [ours] } })
  const m = new AppliedMemory()
  m.rememberFound(version('10'), desired)
  t.ok(m.isUnchangedSinceApply(desired, version('10')), 'that very version')
  t.notOk(m.isUnchangedSinceApply(desired, version('12')), 'not another one with the same fields of ours (it may be an apply of other values)')
  t.equal(m.get('u1')?.ownerUid, 'cr-1', 'forgotten with its CR like any entry')
})

t.test('a version looked at for another desired object leaves the entry as it was', async (t) => {
  const ours = { manager: 'memcached-operator', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:ports': {} } } }
  const version = (rv: string) => ({ metadata: { ...live('u1', rv).metadata, managedFields: [ours] } })
  const m = new AppliedMemory()
  m.remember(version('12'), desired)
  t.notOk(m.isUnchangedSinceApply({ ...desired, spec: {} }, version('10')), 'another desired object')
  t.equal(m.get('u1')?.resourceVersion, '12', 'still the version our apply returned')
})
