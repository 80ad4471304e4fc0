/**
 * Kubernetes resource quantities (k8s.io/apimachinery `resource.Quantity`) in canonical form, the
 * way the API server re-emits them: `0.5`→`500m`, `1.5Gi`→`1536Mi`, `1024Mi`→`1Gi`, `1000`→`1k`.
 * Values are exact (BigInt mantissa × 10^exponent) and, like the server, rounded up to nano units.
 */

/** A string that is not a quantity. The message is the API server's. */
export class QuantityError extends Error {
  constructor(input: string) {
    super(`quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`)
    this.name = 'QuantityError'
    this.input = input
  }
  /** The rejected input. */
  readonly input: string
}

type Format = 'DecimalSI' | 'BinarySI' | 'DecimalExponent'

const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 }
const BINARY: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 }
const DECIMAL_SUFFIX = new Map(Object.entries(DECIMAL).map(([s, e]) => [e, s]))
const BINARY_SUFFIX = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei']

const SHAPE = /^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$/

/** A parsed quantity: value = mantissa × 10^exponent. */
interface Parsed {
  mantissa: bigint
  exponent: number
  format: Format
}

function parse(input: string): Parsed {
  const m = SHAPE.exec(input)
  if (m === null) throw new QuantityError(input)
  const num = m[1] as string
  const suffix = m[2] as string
  let negative = false
  let digits = num
  if (digits[0] === '+' || digits[0] === '-') {
    negative = digits[0] === '-'
    digits = digits.slice(1)
  }
  const dot = digits.indexOf('.')
  const intPart = dot < 0 ? digits : digits.slice(0, dot)
  const fracPart = dot < 0 ? '' : digits.slice(dot + 1)
  let mantissa = BigInt((intPart + fracPart).replace(/^0+(?=.)/, '') || '0')
  if (negative) mantissa = -mantissa
  let exponent = -fracPart.length
  let format: Format
  if (suffix in DECIMAL) {
    exponent += DECIMAL[suffix] as number
    format = 'DecimalSI'
  } else if (suffix in BINARY) {
    mantissa *= 2n ** BigInt(BINARY[suffix] as number)
    format = 'BinarySI'
  } else if (/^[eE][+-]?[0-9]+$/.test(suffix)) {
    exponent += Number(suffix.slice(1))
    format = 'DecimalExponent'
  } else throw new QuantityError(input)
  return roundToNano({ mantissa, exponent, format })
}

/** The server keeps nano precision, rounding away from zero (Quantity.RoundUp(Nano)). */
function roundToNano(q: Parsed): Parsed {
  if (q.exponent >= -9) return q
  const div = 10n ** BigInt(-9 - q.exponent)
  let m = q.mantissa / div
  if (m * div !== q.mantissa) m += q.mantissa < 0n ? -1n : 1n
  return { mantissa: m, exponent: -9, format: q.format }
}

function abs(n: bigint): bigint {
  return n < 0n ? -n : n
}

/** Decimal canonical form: trailing zeros folded into the exponent, exponent a multiple of 3. */
function decimal(q: Parsed, format: Format): string {
  let { mantissa, exponent } = q
  while (mantissa % 10n === 0n) {
    mantissa /= 10n
    exponent++
  }
  const r = ((exponent % 3) + 3) % 3
  if (r !== 0) {
    mantissa *= 10n ** BigInt(r)
    exponent -= r
  }
  if (format === 'DecimalExponent') return exponent === 0 ? `${mantissa}` : `${mantissa}e${exponent}`
  const suffix = DECIMAL_SUFFIX.get(exponent)
  if (suffix !== undefined) return `${mantissa}${suffix}`
  return `${mantissa}e${exponent}`
}

/**
 * The canonical spelling of a quantity, as the API server stores it. An already-canonical input
 * comes back unchanged. Throws {@link QuantityError} for a string that is not a quantity.
 */
export function canonicalQuantity(q: string | number): string {
  return formatQuantity(quantityOf(q))
}

/** A quantity for arithmetic (exact). Throws {@link QuantityError} for a string that is not a quantity. */
export function quantityOf(q: string | number): Quantity {
  return parse(typeof q === 'number' ? numberString(q) : q.trim())
}

/** A parsed quantity: value = mantissa × 10^exponent, with the format it prints in. */
export type Quantity = Parsed

/** a + b in a's format (b's when a is zero), as `resource.Quantity.Add` does. */
export function addQuantities(a: Quantity, b: Quantity): Quantity {
  const e = Math.min(a.exponent, b.exponent)
  const m = a.mantissa * 10n ** BigInt(a.exponent - e) + b.mantissa * 10n ** BigInt(b.exponent - e)
  return { mantissa: m, exponent: e, format: a.mantissa === 0n ? b.format : a.format }
}

/** -1, 0 or 1 as a is less than, equal to or greater than b. */
export function compareQuantities(a: Quantity, b: Quantity): number {
  const e = Math.min(a.exponent, b.exponent)
  const x = a.mantissa * 10n ** BigInt(a.exponent - e)
  const y = b.mantissa * 10n ** BigInt(b.exponent - e)
  return x < y ? -1 : x > y ? 1 : 0
}

/** The zero quantity. */
export const zeroQuantity: Quantity = { mantissa: 0n, exponent: 0, format: 'DecimalSI' }

/** `resource.Quantity.String()`: the canonical spelling. */
export function formatQuantity(p: Quantity): string {
  if (p.mantissa === 0n) return '0'
  if (p.format === 'BinarySI') {
    // Small or fractional binary values are shown in decimal so that nothing is rounded.
    const integral = p.exponent >= 0 || p.mantissa % 10n ** BigInt(-p.exponent) === 0n
    const value = p.exponent >= 0 ? p.mantissa * 10n ** BigInt(p.exponent) : p.mantissa / 10n ** BigInt(-p.exponent)
    if (!integral || abs(value) < 1024n) return decimal(p, 'DecimalSI')
    let amount = value
    let power = 0
    while (power < BINARY_SUFFIX.length - 1 && amount % 1024n === 0n) {
      amount /= 1024n
      power++
    }
    return `${amount}${BINARY_SUFFIX[power] as string}`
  }
  return decimal(p, p.format)
}

function numberString(n: number): string {
  if (!Number.isFinite(n)) throw new QuantityError(String(n))
  // Avoid JavaScript's exponent spelling for very large or small numbers.
  const s = String(n)
  if (!/e/i.test(s)) return s
  return n.toFixed(20).replace(/\.?0+$/, '')
}

/** Whether `q` parses as a quantity. */
export function isQuantity(q: unknown): boolean {
  if (typeof q === 'number') return Number.isFinite(q)
  if (typeof q !== 'string') return false
  try {
    parse(q.trim())
    return true
  } catch {
    return false
  }
}
