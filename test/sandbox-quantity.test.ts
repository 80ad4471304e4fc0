import t from 'tap'
import { canonicalQuantity, isQuantity, QuantityError } from '../operator/kube/quantity.ts'

const cases: [string | number, string][] = [
  ['0.5', '500m'],
  ['1.5', '1500m'],
  ['0.1', '100m'],
  ['1.5Gi', '1536Mi'],
  ['1024Mi', '1Gi'],
  ['1000', '1k'],
  ['1000m', '1'],
  ['500m', '500m'],
  ['128Mi', '128Mi'],
  ['1Gi', '1Gi'],
  ['100Ki', '100Ki'],
  ['0.5Ki', '512'],
  ['1.5Ki', '1536'],
  ['0.5Gi', '512Mi'],
  ['1500', '1500'],
  ['2000000', '2M'],
  ['1e3', '1e3'],
  ['1.5e3', '1500'],
  // The parser keeps an input it finds canonical (resource.ParseQuantity's fast path), and the
  // server stores that spelling.
  ['1E6', '1E6'],
  ['1.', '1.'],
  ['100.035k', '100.035k'],
  ['-1', '-1'],
  ['1Ki', '1Ki'],
  ['01Ki', '01Ki'],
  ['+1Ki', '+1Ki'],
  ['8Ki', '8Ki'],
  ['2048Ki', '2Mi'],
  ['1.0', '1'],
  ['1.000k', '1k'],
  ['12e-1', '1200e-3'],
  ['0', '0'],
  ['0Mi', '0'],
  ['0.000', '0'],
  ['-0.5', '-500m'],
  ['+2', '+2'],
  ['+0.5', '500m'],
  ['1n', '1n'],
  ['0.0000000001', '1n'],
  ['1u', '1u'],
  ['1k', '1k'],
  ['1M', '1M'],
  ['64M', '64M'],
  ['1T', '1T'],
  ['1E', '1E'],
  ['2Ti', '2Ti'],
  ['.5', '500m'],
  [1, '1'],
  [0.25, '250m'],
  [2048, '2048'],
  [1000, '1k'],
]

t.test('canonical forms', async (t) => {
  for (const [input, want] of cases) t.equal(canonicalQuantity(input), want, String(input))
})

t.test('invalid quantities throw the server message', async (t) => {
  for (const bad of ['', 'abc', '1.2.3', '1Qi', '1 Gi', Number.NaN]) {
    t.throws(() => canonicalQuantity(bad), { name: 'QuantityError', message: /quantities must match the regular expression/ }, String(bad))
    t.notOk(isQuantity(bad))
  }
  for (const bad of ['1e', '--1', '1i']) {
    t.throws(() => canonicalQuantity(bad), { name: 'QuantityError', message: "unable to parse quantity's suffix" }, bad)
    t.notOk(isQuantity(bad))
  }
})

t.test('what the lenient upstream scanner accepts is accepted, as zero', async (t) => {
  // resource.parseQuantityString reads an empty number as 0: `Gi`, `k`, `.` and `+` are quantities.
  for (const odd of ['Gi', 'k', '.', '+', '-.']) t.equal(canonicalQuantity(odd), '0', odd)
  t.ok(isQuantity('1Gi'))
  t.ok(isQuantity(3))
  t.notOk(isQuantity(null))
  t.ok(new QuantityError('x') instanceof Error)
})
