import t from 'tap'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance, resolveValues } from '../operator/render/engine.ts'
import { RenderError } from '../operator/render/errors.ts'
import { cloneData, mergeAll, mergeValues, parseSet, type Values } from '../operator/render/values.ts'

const chart = loadChart()
const plain = (v: unknown): unknown => JSON.parse(JSON.stringify(v))

t.test('maps merge deeply, arrays replace, null deletes a key', async (t) => {
  const base = { a: { b: 1, c: 2 }, list: [1, 2, 3], gone: { x: 1 }, keep: 'k' }
  const over = { a: { c: 3, d: 4 }, list: [9], gone: null }
  t.same(plain(mergeValues(base, over)), { a: { b: 1, c: 3, d: 4 }, list: [9], keep: 'k' })
  t.same(base, { a: { b: 1, c: 2 }, list: [1, 2, 3], gone: { x: 1 }, keep: 'k' }, 'inputs are not mutated')
})

t.test('nulls inside a newly added map are dropped, not stored', async (t) => {
  t.same(plain(mergeValues({}, { a: { b: null, c: 1 } })), { a: { c: 1 } })
})

t.test('precedence: chart defaults < CR spec < values files < --set', async (t) => {
  const values = resolveValues(chart, {
    name: 'p',
    namespace: 'default',
    spec: { size: 1, port: 1000, memoryMB: 100, maxConnections: 100 },
    overrides: [{ port: 2000, memoryMB: 200 } as Values, parseSet('port=3000')],
  })
  t.equal(values.size, 1, 'from the spec')
  t.equal(values.maxConnections, 100, 'spec over defaults')
  t.equal(values.memoryMB, 200, 'values file over spec')
  t.equal(values.port, 3000, '--set over values file')
  t.same(plain(values.resources), { requests: { cpu: '50m' }, limits: {} }, 'untouched defaults stay')
})

t.test('a null in the spec removes a chart default', async (t) => {
  const r = renderInstance(chart, { name: 'n', namespace: 'default', spec: { size: 1, resources: { requests: { cpu: null } } } })
  const dep = r.objects.find((o) => o.kind === 'Deployment') as any
  // The memory the chart derives from memoryMB stays; the CPU request the chart's values.yaml gives is gone.
  t.same(dep.spec.template.spec.containers[0].resources, { requests: { memory: '103Mi' }, limits: { memory: '103Mi' } })
})

t.test('--set follows Helm: types, lists, indexes, escapes, several pairs', async (t) => {
  t.same(plain(parseSet('a.b=1,c=true,d=false,e=null,f=text,g=007')), { a: { b: 1 }, c: true, d: false, e: null, f: 'text', g: '007' })
  t.same(plain(parseSet('list={x,y,z}')), { list: ['x', 'y', 'z'] })
  t.same(plain(parseSet('empty={}')), { empty: [] })
  t.same(plain(parseSet('tol[1].key=k')), { tol: [null, { key: 'k' }] })
  t.same(plain(parseSet('podAnnotations.a\\.b/c=v')), { podAnnotations: { 'a.b/c': 'v' } })
  t.same(plain(parseSet('x=a\\,b')), { x: 'a,b' })
  t.same(plain(parseSet('size=5', true)), { size: '5' }, '--set-string keeps strings')
  t.same(plain(parseSet('big=99999999999999999999')), { big: '99999999999999999999' }, 'integers beyond 2^53 stay strings')
  t.throws(() => parseSet('novalue'), RenderError)
  t.throws(() => parseSet('.a=1'), /empty key/)
  t.throws(() => parseSet('a[99999]=1'), /too large/)
  t.same(plain(parseSet('a[0]=1,a.b=2')), { a: { b: 2 } }, 'a later pair replaces an earlier one, as in Helm')
})

t.test('prototype keys are inert data, never a prototype', async (t) => {
  const hostile = JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}, "podAnnotations": {"__proto__": "x"}}') as Values
  const merged = mergeAll([chart.defaults, hostile])
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype untouched')
  t.equal(Object.getPrototypeOf(merged), null)
  t.same(Object.keys(merged).filter((k) => ['__proto__', 'constructor'].includes(k)).sort(), ['__proto__', 'constructor'], 'kept as own keys')
  const viaSet = mergeAll([parseSet('__proto__.polluted=1,constructor.prototype.polluted=1,prototype.x=1')])
  t.equal(({} as Record<string, unknown>).polluted, undefined)
  t.equal(Object.getPrototypeOf(viaSet), null)
  t.ok(Object.hasOwn(viaSet, '__proto__'))
  const cloned = cloneData(hostile) as Values
  t.ok(Object.hasOwn(cloned, '__proto__'))
  t.equal(({} as Record<string, unknown>).polluted, undefined)
})

t.test('prototype keys in a spec are reported as unknown fields, and reach no prototype', async (t) => {
  const spec = JSON.parse('{"size": 1, "__proto__": {"size": -1}, "constructor": 1}')
  const err = t.throws(() => resolveValues(chart, { name: 'x', namespace: 'default', spec })) as RenderError
  t.same([...err.problems].sort(), ['spec.__proto__: unknown field', 'spec.constructor: unknown field'])
  t.equal(({} as Record<string, unknown>).size, undefined)
})
