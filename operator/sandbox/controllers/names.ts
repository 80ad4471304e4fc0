/**
 * Names the controllers give to what they create: the pod-template-hash of a Deployment's
 * template, and generated pod names.
 */
import { randomInt } from 'node:crypto'

/** The alphabet of Kubernetes' `rand.SafeEncodeString` and name generator: no vowels, no 0/1/3. */
export const safeAlphabet = 'bcdfghjklmnpqrstvwxz2456789'

/** JSON with object keys sorted, so equal templates hash equally whatever their key order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>
    return `{${Object.keys(o).sort().filter((k) => o[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(',')}}`
  }
  return JSON.stringify(v)
}

/** FNV-1a, 32 bits, over UTF-8. */
function fnv32a(text: string): number {
  const bytes = Buffer.from(text, 'utf8')
  let h = 0x811c9dc5
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i] as number
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h >>> 0
}

/**
 * The pod-template-hash of a pod template, computed as the real controller does: FNV-32a of the
 * template (here its canonical JSON rather than Go's spew dump), written in decimal, each digit
 * mapped through {@link safeAlphabet} (`rand.SafeEncodeString`). `collisionCount` perturbs it.
 */
export function podTemplateHash(template: unknown, collisionCount = 0): string {
  const decimal = String(fnv32a(canonical(template) + (collisionCount > 0 ? `#${collisionCount}` : '')))
  return [...decimal].map((d) => safeAlphabet[d.charCodeAt(0) % safeAlphabet.length]).join('')
}

/** apiserver's SimpleNameGenerator: base truncated to 58 characters, plus 5 random safe characters. */
export function generateName(base: string): string {
  const prefix = base.length > 58 ? base.slice(0, 58) : base
  let suffix = ''
  for (let i = 0; i < 5; i++) suffix += safeAlphabet[randomInt(safeAlphabet.length)]
  return prefix + suffix
}
