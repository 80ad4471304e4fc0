import t from 'tap'
import { clone, cloneDropNull, wireCopy } from '../operator/kube/json.ts'

// The sandbox's copies of JSON values must be what a JSON round trip gives: a member named
// `__proto__` (a label key a client may send, which the server then refuses or keeps) stays a
// member, as JSON.parse and Go make it, and never becomes the copy's prototype.
const hostile = (): unknown => JSON.parse('{"metadata":{"labels":{"__proto__":{"polluted":"yes"},"app":"x"}},"spec":{"list":[{"__proto__":null,"a":1}]}}')

t.test('clone, wireCopy and cloneDropNull keep a __proto__ member as a member', async (t) => {
  for (const [name, copy] of [['clone', clone], ['wireCopy', wireCopy]] as const) {
    const out = copy(hostile()) as { metadata: { labels: Record<string, unknown> } }
    t.same(JSON.stringify(out), JSON.stringify(hostile()), `${name}: the same JSON`)
    t.ok(Object.hasOwn(out.metadata.labels, '__proto__'), `${name}: an own member`)
    t.equal(Object.getPrototypeOf(out.metadata.labels), Object.prototype, `${name}: the prototype untouched`)
    t.equal((out.metadata.labels as { polluted?: unknown }).polluted, undefined, `${name}: nothing inherited`)
  }
  const dropped = cloneDropNull(hostile()) as { metadata: { labels: Record<string, unknown> }; spec: { list: Record<string, unknown>[] } }
  t.ok(Object.hasOwn(dropped.metadata.labels, '__proto__'), 'cloneDropNull: an own member')
  t.equal(Object.getPrototypeOf(dropped.metadata.labels), Object.prototype)
  t.same(Object.keys(dropped.spec.list[0]!), ['a'], 'cloneDropNull: a null member dropped, __proto__ included')
  t.equal(({} as { polluted?: unknown }).polluted, undefined, 'Object.prototype untouched')
})
