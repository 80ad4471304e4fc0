import fc from 'fast-check'
import t from 'tap'
import YAML from 'yaml'
import { yamlText } from '../operator/render/manifest.ts'
import { YAML_OUTPUT, blockYaml } from '../operator/render/scalar.ts'

// Plain data as renders produce it, with the awkward corners included: any string (controls, lone
// surrogates, YAML words, long keys), every kind of double, undefined in maps and lists.
const leaf = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom('on', 'No', 'null', '~', 'a: b', '- x', '1.5', '0x1F', '2001-12-14', '<%= x %>', '{{ x }}', '', ' '),
  fc.double(),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
)
const key = fc.oneof(fc.string({ unit: 'binary', maxLength: 8 }), fc.constantFrom('app.kubernetes.io/name', 'a b', 'y', '1', '', '?', '-', '&a'))
const { data } = fc.letrec<{ data: unknown }>((tie) => ({
  data: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(fc.oneof(tie('data'), fc.constant(undefined)), { maxLength: 4 }),
    fc.dictionary(key, fc.oneof(tie('data'), fc.constant(undefined)), { maxKeys: 4 }),
    fc.dictionary(key, tie('data'), { maxKeys: 3, noNullPrototype: false }),
  ),
}))

/** What a YAML 1.1 reader gives back for the data: JSON's view of it, with the numbers JSON cannot hold spelled out. */
function normal(v: unknown): unknown {
  return JSON.parse(
    JSON.stringify(v, (_k, x: unknown) => (typeof x === 'number' && !Number.isFinite(x) ? `number ${x}` : Object.is(x, -0) ? 0 : x)),
  )
}

function hasMergeKey(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return false
  return Object.keys(v).includes('<<') || Object.values(v).some(hasMergeKey)
}

t.test('plain data is written exactly as the yaml library writes it', async (t) => {
  fc.assert(
    fc.property(data, (v) => {
      fc.pre(!hasMergeKey(v))
      const text = blockYaml(v)
      return text !== undefined && text === YAML.stringify(v, YAML_OUTPUT)
    }),
    { numRuns: 3000 },
  )
  t.pass('3000 values')
})

t.test('what it writes reads back as the same data under YAML 1.1', async (t) => {
  fc.assert(
    fc.property(data, (v) => {
      const text = blockYaml(v)
      if (text === undefined) return false
      const back: unknown = YAML.parse(text, { version: '1.1', uniqueKeys: true })
      t.same(normal(back), normal(v), text)
      return true
    }),
    { numRuns: 1000 },
  )
})

t.test('layout of nested collections, empty ones and missing values', async (t) => {
  t.equal(blockYaml({ a: { b: [1, { c: 'd', e: [] }], f: {} }, g: undefined }), 'a:\n  b:\n    - 1\n    - c: d\n      e: []\n  f: {}\n')
  t.equal(blockYaml([[1, [2]], { a: undefined }, undefined, []]), '- - 1\n  - - 2\n- {}\n- null\n- []\n')
  t.equal(blockYaml({}), '{}\n')
  t.equal(blockYaml([]), '[]\n')
  t.equal(blockYaml({ a: undefined }), '{}\n')
  t.equal(blockYaml(Object.assign(Object.create(null) as object, { x: 1 })), 'x: 1\n')
})

t.test('scalars: strings plain only when unambiguous, every number YAML 1.1 can read', async (t) => {
  t.equal(blockYaml('memcached'), 'memcached\n')
  t.equal(blockYaml('on'), '"on"\n')
  t.equal(blockYaml('a\nb: c'), '"a\\nb: c"\n')
  t.equal(blockYaml('\u2028'), '"\\u2028"\n')
  t.equal(blockYaml(-0), '-0\n')
  t.equal(blockYaml(1e21), '1e+21\n')
  t.equal(blockYaml(NaN), '.nan\n')
  t.equal(blockYaml(-Infinity), '-.inf\n')
  t.equal(blockYaml(null), 'null\n')
  t.equal(blockYaml(false), 'false\n')
})

t.test('a "<<" key stays an ordinary key, never a YAML 1.1 merge', async (t) => {
  const text = blockYaml({ '<<': { a: 1 }, b: 2 })
  t.equal(text, '"<<":\n  a: 1\nb: 2\n')
  t.same(YAML.parse(text ?? '', { version: '1.1', merge: true }), { '<<': { a: 1 }, b: 2 })
})

t.test('anything outside plain data is left to the library, which yamlText then uses', async (t) => {
  const long = 'k'.repeat(1025)
  for (const v of [{ at: new Date(0) }, { n: 10n }, new Map([['a', 1]]), [new Set([1])], { [long]: 1 }, { nested: [{ at: new Date(0) }] }]) {
    t.equal(blockYaml(v), undefined)
    t.equal(yamlText(v), YAML.stringify(v, YAML_OUTPUT))
  }
  t.match(yamlText({ [long]: 1 }), /^\? k+\n: 1\n$/, 'a key too long to be implicit is written explicitly')
  t.equal(yamlText({ a: [1] }), 'a:\n  - 1\n')
  t.throws(() => yamlText({ f: () => 1 }), /Tag not resolved/, 'a function is refused, as the library refuses it')
})
