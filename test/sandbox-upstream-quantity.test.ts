/**
 * apimachinery's own quantity tables, transcribed into test/fixtures/upstream/quantity.json from
 * kubernetes/apimachinery pkg/api/resource/quantity_test.go at v0.34.10
 * (57ea95fcdaa372b20bbb922fa22a8dbd2f4b87db): TestQuantityParse (value and format, negated and
 * with an explicit `+`, and the invalid inputs), TestQuantityString (canonical form, which the
 * parser keeps as the input spelling, and an alternate spelling it rewrites), TestQuantityParseEmit
 * and TestJSONWhitespace.
 */
import { readFileSync } from 'node:fs'
import t from 'tap'
import { compareQuantities, formatQuantity, parseQuantity, quantityOf, type Quantity } from '../operator/kube/quantity.ts'
import { runUpstreamTable, type UpstreamCase } from './support/upstream-table.ts'

type Format = Quantity['format']
const fixture = JSON.parse(readFileSync(new URL('./fixtures/upstream/quantity.json', import.meta.url), 'utf8')) as {
  parse: [string, string, number, Format][]
  parseInvalid: string[]
  string: [string, number, Format, string, string][]
  parseEmit: [string, string][]
  jsonWhitespace: [string, string][]
}

const dec = (m: string, e: number, format: Format): Quantity => ({ mantissa: BigInt(m), exponent: e, format })
const show = (q: Quantity): string => `${q.mantissa}e${q.exponent} ${q.format}${q.s === undefined ? '' : ` s=${q.s}`}`
const neg = (q: Quantity): Quantity => ({ mantissa: -q.mantissa, exponent: q.exponent, format: q.format })

function sameValue(got: Quantity, want: Quantity): string | undefined {
  if (compareQuantities(got, want) !== 0 || got.format !== want.format) return `got ${show(got)}, want ${show(want)}`
  return undefined
}

t.test('quantity_test.go TestQuantityParse', async (t) => {
  const cases: UpstreamCase[] = []
  fixture.parse.forEach(([input, m, e, format], i) => {
    const want = dec(m, e, format)
    cases.push({ name: `#${i} ${input}`, check: () => sameValue(parseQuantity(input), want) })
    cases.push({ name: `#${i} -${input}`, check: () => sameValue(parseQuantity(`-${input}`), neg(want)) })
    cases.push({ name: `#${i} +${input}`, check: () => sameValue(parseQuantity(`+${input}`), want) })
  })
  for (const input of fixture.parseInvalid) {
    cases.push({
      name: `invalid ${JSON.stringify(input)}`,
      check() {
        try {
          return `parsed as ${show(parseQuantity(input))}`
        } catch (e) {
          return e instanceof Error && e.name === 'QuantityError' ? undefined : `threw ${String(e)}`
        }
      },
    })
  }
  cases.push({
    name: 'empty string',
    check() {
      try {
        return `parsed as ${show(parseQuantity(''))}`
      } catch {
        return undefined
      }
    },
  })
  runUpstreamTable(t, 'quantity_test.go TestQuantityParse', cases)
})

t.test('quantity_test.go TestQuantityString', async (t) => {
  const cases: UpstreamCase[] = []
  fixture.string.forEach(([m, e, format, expect, alternate], i) => {
    cases.push({
      name: `#${i} ${m}e${e} ${format} → ${expect}`,
      check() {
        const got = formatQuantity(dec(m, e, format))
        if (got !== expect) return `String() is ${got}`
        // The canonical spelling is kept on parse; an alternate one is not, and is rewritten.
        const kept = parseQuantity(expect)
        if (kept.s !== expect) return `parse of ${expect} did not keep it (s=${kept.s})`
        if (alternate !== '') {
          const alt = parseQuantity(alternate)
          if (alt.s !== undefined) return `parse of ${alternate} kept it`
          if (formatQuantity(alt) !== expect) return `${alternate} prints as ${formatQuantity(alt)}`
        }
        if (m !== '0' && formatQuantity(neg(dec(m, e, format))) !== `-${expect}`) return `negated prints as ${formatQuantity(neg(dec(m, e, format)))}`
        return undefined
      },
    })
  })
  runUpstreamTable(t, 'quantity_test.go TestQuantityString', cases)
})

t.test('quantity_test.go TestQuantityParseEmit', async (t) => {
  const cases: UpstreamCase[] = []
  for (const [input, expect] of fixture.parseEmit) {
    cases.push({ name: input, check: () => (formatQuantity(parseQuantity(input)) === expect ? undefined : `got ${formatQuantity(parseQuantity(input))}`) })
    cases.push({
      name: `-${input}`,
      check() {
        const q = parseQuantity(`-${input}`)
        const got = formatQuantity(q)
        return q.mantissa === 0n || got === `-${expect}` ? undefined : `got ${got}`
      },
    })
  }
  runUpstreamTable(t, 'quantity_test.go TestQuantityParseEmit', cases)
})

t.test('quantity_test.go TestJSONWhitespace', async (t) => {
  const cases: UpstreamCase[] = fixture.jsonWhitespace.map(([json, expect]) => ({
    name: json,
    check() {
      const v = JSON.parse(json) as string | number
      const got = formatQuantity(quantityOf(v))
      return got === expect ? undefined : `got ${got}`
    },
  }))
  runUpstreamTable(t, 'quantity_test.go TestJSONWhitespace', cases)
})
