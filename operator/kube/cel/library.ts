/**
 * The CEL environment of a CRD's `x-kubernetes-validations`, as kube-apiserver builds it
 * (k8s.io/apiserver/pkg/cel/environment/base.go): `self` and `oldSelf`, CEL's standard functions
 * and macros, optional types (`self.?a.orValue(x)`), `cel.bind`, and the Kubernetes libraries a
 * rule reaches for — quantities (library/quantity.go), lists (library/lists.go), regular
 * expressions (library/regex.go) and the string extensions.
 *
 * The evaluator is @marcbachmann/cel-js (docs/contributing.md argues the choice); what it lacks
 * of the Kubernetes libraries is registered here on top of this project's exact quantities.
 */
import { Environment } from '@marcbachmann/cel-js'
import { compareQuantities, addQuantities, formatQuantity, parseQuantity, QuantityError, type Quantity as Parsed } from '../quantity.ts'

/** A Kubernetes quantity as CEL sees it (library/quantity.go's `Quantity` type). */
export class Quantity {
  readonly q: Parsed
  constructor(q: Parsed) {
    this.q = q
  }
  toString(): string {
    return formatQuantity(this.q)
  }
}

/** The value of a quantity as a fraction mantissa / 10^-exponent, exact. */
function exact(q: Parsed): { n: bigint; d: bigint } {
  return q.exponent >= 0 ? { n: q.mantissa * 10n ** BigInt(q.exponent), d: 1n } : { n: q.mantissa, d: 10n ** BigInt(-q.exponent) }
}

const INT64_MAX = 2n ** 63n - 1n
const INT64_MIN = -(2n ** 63n)

/** `quantity(string)`: resource.ParseQuantity, whose error is the rule's evaluation error. */
function quantity(s: string): Quantity {
  try {
    return new Quantity(parseQuantity(s))
  } catch (err) {
    if (err instanceof QuantityError) throw new Error(err.message)
    throw err
  }
}

function fromInt(i: bigint): Parsed {
  return { mantissa: i, exponent: 0, format: 'DecimalSI' }
}

function negate(q: Parsed): Parsed {
  return { mantissa: -q.mantissa, exponent: q.exponent, format: q.format }
}

function listCompare(a: unknown, b: unknown): number {
  if (a instanceof Quantity && b instanceof Quantity) return compareQuantities(a.q, b.q)
  if (typeof a === typeof b && (typeof a === 'bigint' || typeof a === 'number' || typeof a === 'string' || typeof a === 'boolean')) return a < (b as typeof a) ? -1 : a > (b as typeof a) ? 1 : 0
  throw new Error(`no such overload: comparing ${typeof a} and ${typeof b}`)
}

function extreme(list: unknown[], sign: number, name: string): unknown {
  if (list.length === 0) throw new Error(`${name}(list) called on an empty list`)
  return list.reduce((best, x) => (listCompare(x, best) * sign > 0 ? x : best))
}

function regex(pattern: string): RegExp {
  // RE2 and ECMAScript agree on the syntax rules use; an (?i) flag group is RE2's spelling of the i flag.
  const m = /^\(\?([ims]+)\)/.exec(pattern)
  return m ? new RegExp(pattern.slice(m[0].length), `${m[1]!}u`) : new RegExp(pattern, 'u')
}

let shared: Environment | undefined

/** The environment, built once: building one is the expensive part of cel-js. */
export function celEnvironment(): Environment {
  if (shared) return shared
  const env = new Environment({ enableOptionalTypes: true, homogeneousAggregateLiterals: false })
    .registerVariable('self', 'dyn')
    .registerVariable('oldSelf', 'dyn')
    .registerType('Quantity', Quantity)
    // library/quantity.go
    .registerFunction('quantity(string): Quantity', quantity)
    .registerFunction('isQuantity(string): bool', (s: string) => {
      try {
        parseQuantity(s)
        return true
      } catch {
        return false
      }
    })
    .registerFunction('Quantity.sign(): int', (a: Quantity) => BigInt(Math.sign(Number(a.q.mantissa))))
    .registerFunction('Quantity.isInteger(): bool', (a: Quantity) => {
      const { n, d } = exact(a.q)
      return n % d === 0n && n / d <= INT64_MAX && n / d >= INT64_MIN
    })
    .registerFunction('Quantity.asInteger(): int', (a: Quantity) => {
      const { n, d } = exact(a.q)
      if (n % d !== 0n || n / d > INT64_MAX || n / d < INT64_MIN) throw new Error('cannot convert value to integer')
      return n / d
    })
    .registerFunction('Quantity.asApproximateFloat(): double', (a: Quantity) => Number(a.q.mantissa) * 10 ** a.q.exponent)
    .registerFunction('Quantity.add(Quantity): Quantity', (a: Quantity, b: Quantity) => new Quantity(addQuantities(a.q, b.q)))
    .registerFunction('Quantity.add(int): Quantity', (a: Quantity, b: bigint) => new Quantity(addQuantities(a.q, fromInt(b))))
    .registerFunction('Quantity.sub(Quantity): Quantity', (a: Quantity, b: Quantity) => new Quantity(addQuantities(a.q, negate(b.q))))
    .registerFunction('Quantity.sub(int): Quantity', (a: Quantity, b: bigint) => new Quantity(addQuantities(a.q, negate(fromInt(b)))))
    .registerFunction('Quantity.isLessThan(Quantity): bool', (a: Quantity, b: Quantity) => compareQuantities(a.q, b.q) < 0)
    .registerFunction('Quantity.isGreaterThan(Quantity): bool', (a: Quantity, b: Quantity) => compareQuantities(a.q, b.q) > 0)
    .registerFunction('Quantity.compareTo(Quantity): int', (a: Quantity, b: Quantity) => BigInt(compareQuantities(a.q, b.q)))
    .registerOperator('Quantity == Quantity', (a: Quantity, b: Quantity) => compareQuantities(a.q, b.q) === 0)
    // library/lists.go
    .registerFunction('list.sum(): dyn', (l: unknown[]) => {
      if (l.length === 0) return 0n
      if (l.every((x) => typeof x === 'bigint')) {
        const total = (l as bigint[]).reduce((a, b) => a + b, 0n)
        if (total > INT64_MAX || total < INT64_MIN) throw new Error('integer overflow')
        return total
      }
      if (l.every((x) => typeof x === 'number')) return (l as number[]).reduce((a, b) => a + b, 0)
      throw new Error('no such overload: sum of mixed types')
    })
    .registerFunction('list.isSorted(): bool', (l: unknown[]) => l.every((x, i) => i === 0 || listCompare(l[i - 1], x) <= 0))
    .registerFunction('list.min(): dyn', (l: unknown[]) => extreme(l, -1, 'min'))
    .registerFunction('list.max(): dyn', (l: unknown[]) => extreme(l, 1, 'max'))
    // library/regex.go
    .registerFunction('string.find(string): string', (s: string, re: string) => regex(re).exec(s)?.[0] ?? '')
    .registerFunction('string.findAll(string): list<string>', (s: string, re: string) => [...s.matchAll(new RegExp(regex(re), 'gu'))].map((m) => m[0]))
    .registerFunction('string.findAll(string, int): list<string>', (s: string, re: string, n: bigint) => {
      const all = [...s.matchAll(new RegExp(regex(re), 'gu'))].map((m) => m[0])
      return n < 0n ? all : all.slice(0, Number(n))
    })
    // cel-go ext/strings.go, the parts cel-js lacks
    .registerFunction('string.charAt(int): string', (s: string, i: bigint) => {
      const chars = [...s]
      if (i < 0n || i > BigInt(chars.length)) throw new Error(`index out of range: ${i}`)
      return chars[Number(i)] ?? ''
    })
    .registerFunction('string.replace(string, string): string', (s: string, a: string, b: string) => s.split(a).join(b))
    .registerFunction('string.replace(string, string, int): string', (s: string, a: string, b: string, n: bigint) => {
      if (n < 0n) return s.split(a).join(b)
      const parts = s.split(a)
      const k = Math.min(Number(n), parts.length - 1)
      return parts.slice(0, k + 1).join(b) + (k + 1 < parts.length ? a + parts.slice(k + 1).join(a) : '')
    })
  shared = env
  return env
}
