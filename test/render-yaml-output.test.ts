import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import fc from 'fast-check'
import t from 'tap'
import YAML from 'yaml'
import { yamlText } from '../operator/render/manifest.ts'
import { YAML_OUTPUT, blockYaml } from '../operator/render/scalar.ts'
import { helmPath } from './support/tools.ts'

// Plain data as renders produce it, with the awkward corners included: any string (controls, lone
// surrogates, YAML words, long keys), every kind of double, undefined in maps and lists.
const leaf = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom('on', 'No', 'null', '~', 'a: b', '- x', '1.5', '0x1F', '2001-12-14', '<%= x %>', '{{ x }}', '', ' ', '<<', '\ufffe', '\uffff\u2028'),
  fc.double(),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
)
const key = fc.oneof(fc.string({ unit: 'binary', maxLength: 8 }), fc.constantFrom('app.kubernetes.io/name', 'a b', 'y', '1', '', '?', '-', '&a', '<<', 'k'.repeat(1024), 'é'.repeat(1022)))
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

/** Reads YAML 1.1 as the project's readers do (merge keys on, as in YAML 1.1). */
function readBack(text: string): unknown {
  return YAML.parse(text, { version: '1.1', uniqueKeys: true, merge: true })
}

t.test('plain data is written exactly as the yaml library writes it', async (t) => {
  fc.assert(
    fc.property(data, (v) => {
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
      return text !== undefined && isDeepStrictEqual(normal(readBack(text)), normal(v))
    }),
    { numRuns: 1000 },
  )
  t.pass('1000 values')
})

t.test('data beside something only the library writes: the library writes all of it, with the same conventions', async (t) => {
  fc.assert(
    fc.property(data, (d) => {
      const v = { d, n: 10n }
      const text = yamlText(v)
      return blockYaml(v) === undefined && text === YAML.stringify(v, YAML_OUTPUT) && isDeepStrictEqual(normal((readBack(text) as { d: unknown }).d), normal(d))
    }),
    { numRuns: 500 },
  )
  t.pass('500 values')
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

t.test('a "<<" key or value stays an ordinary string, never a YAML 1.1 merge', async (t) => {
  const v = { '<<': { a: '<<' }, b: 2 }
  t.equal(blockYaml(v), '"<<":\n  a: "<<"\nb: 2\n')
  t.equal(yamlText({ ...v, count: 10n }), '"<<":\n  a: "<<"\nb: 2\ncount: 10\n', 'the library too')
  t.same(readBack(blockYaml(v) ?? ''), v)
})

t.test('anything outside plain data is left to the library, which yamlText then uses', async (t) => {
  const long = 'k'.repeat(1025)
  class Items extends Array<unknown> {}
  const ownIterator = Object.assign([1, 2], { [Symbol.iterator]: function* () {} })
  const withToJSON = Object.defineProperty({ a: 1 }, 'toJSON', { value: () => ({ b: 2 }) })
  const iterable = { a: 1, *[Symbol.iterator]() { yield 9 } }
  for (const v of [{ at: new Date(0) }, { n: 10n }, new Map([['a', 1]]), [new Set([1])], { [long]: 1 }, { nested: [{ at: new Date(0) }] }, withToJSON, { x: Object.assign([1], { toJSON: () => 'arr' }) }, iterable, { k: Items.from([1]) }, { k: ownIterator }]) {
    t.equal(blockYaml(v), undefined)
    t.equal(yamlText(v), YAML.stringify(v, YAML_OUTPUT))
  }
  t.match(yamlText({ [long]: 1 }), /^\? k+\n: 1\n$/, 'a key too long to be implicit is written explicitly')
  t.equal(yamlText(withToJSON), 'b: 2\n', 'what toJSON returns')
  t.equal(yamlText(iterable), '- 9\n', 'an iterable is a list')
  t.equal(yamlText({ a: [1] }), 'a:\n  - 1\n')
  t.throws(() => yamlText({ f: () => 1 }), /Tag not resolved/, 'a function is refused, as the library refuses it')
})

t.test("kubectl's YAML reader (go-yaml, here through helm) reads back what is written", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'yaml-output-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'templates'))
  writeFileSync(join(dir, 'Chart.yaml'), 'apiVersion: v2\nname: probe\nversion: 0.1.0\n')
  writeFileSync(join(dir, 'templates', 'probe.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\ndata:\n  v: {{ toJson .Values.x | quote }}\n')
  const words = ['on', 'off', 'yes', 'No', 'y', 'n', 'true', 'null', '~', '', '<<', '0x1F', '0755', '1_000', '1:30', '2001-12-14', '.inf', '-.5']
  const strange = ['\ufffe', '\uffff', '\u2028', '\u2029', '\u0085', '\ufeff', '\u007f', '\u0000', '\t', 'a: b', '# c', '- d', '"q"', "'s'", '{x}', '[y]', '&a', '*b', '!t', '%p', '@u', '`v', '|', '>', 'é🎉', 'line\nbreak']
  const x = {
    words: Object.fromEntries(words.map((w) => [w, w])),
    strange: Object.fromEntries(strange.map((s) => [s, s])),
    numbers: [0, -0, 1, -17, 1.5, 1e-7, 1e21, 2 ** 53],
    nested: [[1, ['a']], { '<<': { m: [] }, e: {} }, [], null, true],
  }
  const text = blockYaml(x) ?? ''
  writeFileSync(join(dir, 'values.yaml'), `x:\n${text.trimEnd().split('\n').map((l) => `  ${l}`).join('\n')}\n`)
  const out = execFileSync(helmPath(), ['template', 'r', dir], { encoding: 'utf8', env: { ...process.env, HELM_CACHE_HOME: join(dir, 'cache'), HELM_CONFIG_HOME: join(dir, 'config'), HELM_DATA_HOME: join(dir, 'data') } })
  const read = JSON.parse((YAML.parse(out) as { data: { v: string } }).data.v) as unknown
  t.same(read, normal(x))
})
