/**
 * Kubernetes resource quantities (k8s.io/apimachinery `resource.Quantity`) as the API server
 * re-emits them: canonical form (`0.5`→`500m`, `1.5Gi`→`1536Mi`, `1024Mi`→`1Gi`, `1000`→`1k`)
 * unless the parser keeps the input spelling (`+1`, `1E6`, `100.035k` stay as written).
 * Values are exact (BigInt mantissa × 10^exponent) and, like the server, rounded up to nano units.
 */

/** apimachinery's three parse errors (resource/quantity.go `ErrFormatWrong`, `ErrSuffix`, `ErrNumeric`). */
const MESSAGES = {
  format: `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
  suffix: "unable to parse quantity's suffix",
  numeric: 'unable to parse numeric part of quantity',
} as const

/** A string that is not a quantity. The message is the API server's. */
export class QuantityError extends Error {
  constructor(input: string, kind: keyof typeof MESSAGES = 'format') {
    super(MESSAGES[kind])
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
const MAX_ALLOWED = 2n ** 63n - 1n

/** A parsed quantity: value = mantissa × 10^exponent; `s` is the input when the parser keeps it. */
interface Parsed {
  mantissa: bigint
  exponent: number
  format: Format
  s?: string
}

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9'

/** resource/quantity.go `parseQuantityString`, a scanner that is more lenient than its error message. */
function scan(str: string): { positive: boolean; value: string; num: string; denom: string; suffix: string } {
  let positive = true
  let pos = 0
  const end = str.length
  if (str[0] === '-') {
    positive = false
    pos++
  } else if (str[0] === '+') pos++
  while (pos < end && str[pos] === '0') pos++
  if (pos >= end) return { positive, value: '0', num: '0', denom: '', suffix: '' }
  let i = pos
  while (i < end && isDigit(str[i])) i++
  if (i >= end) return { positive, value: str, num: str.slice(pos), denom: '', suffix: '' }
  const num = str.slice(pos, i) || '0'
  pos = i
  let denom = ''
  if (str[pos] === '.') {
    pos++
    i = pos
    while (i < end && isDigit(str[i])) i++
    denom = str.slice(pos, i)
    if (i >= end) return { positive, value: str, num, denom, suffix: '' }
    pos = i
  }
  const value = str.slice(0, pos)
  const suffixStart = pos
  while (pos < end && 'eEinumkKMGTP'.includes(str[pos] as string)) pos++
  if (pos < end && (str[pos] === '-' || str[pos] === '+')) pos++
  while (pos < end && isDigit(str[pos])) pos++
  if (pos < end) throw new QuantityError(str)
  return { positive, value, num, denom, suffix: str.slice(suffixStart) }
}

/** resource/suffix.go `interpret`: base, exponent and format of a suffix. */
function interpret(suffix: string, input: string): { base: 2 | 10; exponent: number; format: Format } {
  const d = DECIMAL[suffix]
  if (d !== undefined && Object.hasOwn(DECIMAL, suffix)) return { base: 10, exponent: d, format: 'DecimalSI' }
  const b = BINARY[suffix]
  if (b !== undefined && Object.hasOwn(BINARY, suffix)) return { base: 2, exponent: b, format: 'BinarySI' }
  if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E') && /^[+-]?[0-9]+$/.test(suffix.slice(1))) {
    const e = BigInt(suffix.slice(1))
    if (e >= -(2n ** 63n) && e < 2n ** 63n) return { base: 10, exponent: Number(BigInt.asIntN(32, e)), format: 'DecimalExponent' }
  }
  throw new QuantityError(input, 'suffix')
}

/**
 * resource/quantity.go `ParseQuantity`. Like it, the result keeps the input spelling (`s`) when
 * the int64 fast path finds it canonical enough (`+1`, `1E6`, `1.`, `100.035k`): that spelling is
 * what the server stores and returns, not the canonical one.
 */
function parse(input: string): Parsed {
  if (input.length === 0) throw new QuantityError(input)
  if (input === '0') return { mantissa: 0n, exponent: 0, format: 'DecimalSI', s: input }
  const { positive, value, num, denom, suffix } = scan(input)
  const { base, exponent, format } = interpret(suffix, input)
  let s: string | undefined
  // The fast path's conditions (precision, scale ≥ nano, no int64 overflow) decide whether `s` is kept.
  let precision: number
  if (base === 10) precision = 18 - (num.length + denom.length)
  else if (denom.length === 0) precision = 15 - num.length - Math.trunc((exponent * 3) / 10) - 1
  else precision = -1
  const scale = (base === 10 ? exponent : 0) - denom.length
  if (precision >= 0 && scale >= -9) {
    const shifted = num + denom
    const v = BigInt(shifted)
    const result = base === 2 ? v << BigInt(exponent) : v
    if (result <= MAX_ALLOWED) {
      if (base === 2 ? exponent % 10 === 0 && (v & 7n) !== 0n : scale % 3 === 0 && !shifted.endsWith('000') && shifted[0] !== '0') s = input
    }
  }
  const digits = (value.replace(/^[+-]/, '').replace('.', '') || '0').replace(/^0+(?=.)/, '')
  const dot = value.indexOf('.')
  let mantissa = BigInt(/^[0-9]+$/.test(digits) ? digits : '0')
  let exp = dot < 0 ? 0 : -(value.length - dot - 1)
  if (base === 10) exp += exponent
  else mantissa <<= BigInt(exponent)
  let q: Parsed = roundToNano({ mantissa, exponent: exp, format })
  let fmt = format
  if (base === 2 && s === undefined) {
    const abs = q.exponent >= 0 ? q.mantissa * 10n ** BigInt(q.exponent) : q.mantissa / 10n ** BigInt(-q.exponent)
    if (abs > MAX_ALLOWED || (abs === MAX_ALLOWED && q.exponent < 0 && q.mantissa % 10n ** BigInt(-q.exponent) !== 0n)) q = { mantissa: MAX_ALLOWED, exponent: 0, format }
    else if (q.mantissa !== 0n && abs === 0n) fmt = 'DecimalSI'
  }
  if (!positive) q.mantissa = -q.mantissa
  return s === undefined ? { mantissa: q.mantissa, exponent: q.exponent, format: fmt } : { mantissa: q.mantissa, exponent: q.exponent, format: fmt, s }
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
 * The spelling of a quantity as the API server stores it (`Quantity.MarshalJSON` after
 * `UnmarshalJSON`): the input when the parser keeps it, else the canonical form. Throws
 * {@link QuantityError} for a string that is not a quantity.
 */
export function canonicalQuantity(q: string | number): string {
  return formatQuantity(quantityOf(q))
}

/**
 * A quantity read from JSON (`Quantity.UnmarshalJSON`: surrounding white space is trimmed), exact.
 * Throws {@link QuantityError} for a string that is not a quantity.
 */
export function quantityOf(q: string | number): Quantity {
  return parse(typeof q === 'number' ? numberString(q) : q.trim())
}

/** `resource.ParseQuantity`: strict, white space included. Throws {@link QuantityError}. */
export function parseQuantity(s: string): Quantity {
  return parse(s)
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

/** `resource.Quantity.String()`: the spelling kept by the parser, else the canonical one. */
export function formatQuantity(p: Quantity): string {
  if (p.s !== undefined) return p.s
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
