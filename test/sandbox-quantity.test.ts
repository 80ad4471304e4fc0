import t from 'tap'
import { canonicalQuantity, isQuantity, QuantityError } from '../operator/sandbox/quantity.ts'

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
  ['1E6', '1e6'],
  ['12e-1', '1200e-3'],
  ['0', '0'],
  ['0Mi', '0'],
  ['0.000', '0'],
  ['-0.5', '-500m'],
  ['+2', '2'],
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
  for (const bad of ['', 'abc', '1.2.3', '1Qi', '1 Gi', 'Gi', '1e', '--1', Number.NaN]) {
    t.throws(() => canonicalQuantity(bad), { name: 'QuantityError', message: /quantities must match the regular expression/ }, String(bad))
    t.notOk(isQuantity(bad))
  }
  t.ok(isQuantity('1Gi'))
  t.ok(isQuantity(3))
  t.notOk(isQuantity(null))
  t.ok(new QuantityError('x') instanceof Error)
})
