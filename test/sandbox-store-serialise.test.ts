/**
 * The store serialises an object from the texts of its frozen members where it has them (a write
 * shares with the version before it what it did not change): the bytes must be exactly
 * `JSON.stringify`'s, whatever is frozen, shared, undefined or oddly named.
 */
import fc from 'fast-check'
import t from 'tap'
import { serialise } from '../operator/sandbox/store.ts'
import type { KubeObject } from '../operator/sandbox/types.ts'

/** Freezes a value and everything in it. */
function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k])
    Object.freeze(v)
  }
  return v
}

/** Freezes the subtrees `pick` selects (a frozen object's members are frozen too). */
function freezeSome(v: unknown, pick: () => boolean): void {
  if (typeof v !== 'object' || v === null) return
  if (pick()) {
    deepFreeze(v)
    return
  }
  for (const k of Object.keys(v)) freezeSome((v as Record<string, unknown>)[k], pick)
}

const key = fc.oneof(fc.constantFrom('__proto__', 'constructor', '0', '10', '1', 'a"b', 'ü', 'metadata', 'managedFields', 'status', 'spec', '.'), fc.string())
const leaf = fc.oneof(fc.string(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null), fc.constant(undefined))
const { value } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, leaf, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(key, tie('value'), { maxKeys: 5 }).map((o) => JSON.parse(JSON.stringify(o)) as Record<string, unknown>),
}))
const entry = fc.record({ manager: fc.string(), operation: fc.constantFrom('Apply', 'Update'), fieldsV1: fc.dictionary(key, fc.constant({})) })
const object = fc.record({
  apiVersion: fc.constantFrom('v1', 'apps/v1'),
  kind: fc.constantFrom('Pod', 'Deployment'),
  metadata: fc.record({ name: fc.string(), labels: fc.dictionary(key, fc.string(), { maxKeys: 3 }), managedFields: fc.array(entry, { maxLength: 3 }), extra: value }, { requiredKeys: ['name'] }),
  spec: value,
  status: value,
}, { requiredKeys: ['apiVersion', 'kind', 'metadata'] })

t.test('the text is JSON.stringify\'s, whatever is frozen', async (t) => {
  fc.assert(
    fc.property(object, fc.infiniteStream(fc.boolean()), (o, coins) => {
      const obj = JSON.parse(JSON.stringify(o)) as KubeObject
      const it = coins[Symbol.iterator]()
      freezeSome(obj, () => it.next().value === true)
      const want = JSON.stringify(obj)
      // Twice: the second time from the texts the first one kept.
      return serialise(obj) === want && serialise(obj) === want
    }),
    { numRuns: 2000, seed: 20261127 },
  )
  t.pass('2,000 objects')
})

t.test('a version that shares frozen members with the one before it serialises as itself', async (t) => {
  fc.assert(
    fc.property(object, value, fc.string(), (o, status, rv) => {
      const v1 = deepFreeze(JSON.parse(JSON.stringify(o)) as KubeObject)
      serialise(v1)
      const managedFields = [...((v1.metadata.managedFields as unknown[] | undefined) ?? []), { manager: 'kubelet', operation: 'Update', subresource: 'status', fieldsV1: { 'f:status': {} } }]
      const v2 = { ...v1, metadata: { ...v1.metadata, resourceVersion: rv, managedFields, gone: undefined }, status } as KubeObject
      return serialise(v2) === JSON.stringify(v2)
    }),
    { numRuns: 1000, seed: 20261128 },
  )
  t.pass('1,000 pairs')
})
