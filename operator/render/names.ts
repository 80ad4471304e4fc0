/**
 * Object names and label values derived from a CR's name. A CR name is a DNS subdomain of up to
 * 253 characters; a Service name must be a DNS-1035 label (≤ 63, starts with a letter, no dots) and
 * a label value ≤ 63 characters. Where the CR name does not fit, it is shortened with a stable
 * hash suffix, so that two different CRs never share a name.
 */
/** Maximum length of a DNS-1035 label and of a label value. */
export const LABEL_MAX = 63
const DNS1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

/** Hex SHA-256 of a string. node:crypto is loaded on the first call: most renders never make one, and it is large. */
export function sha256(s: string): string {
  return sha256Bytes(s)
}

/** Hex SHA-256 of bytes (or of a string's UTF-8). */
export function sha256Bytes(b: string | Uint8Array): string {
  return process.getBuiltinModule('node:crypto').createHash('sha256').update(b).digest('hex')
}

/** Whether `s` is a valid object name for most kinds (DNS-1123 subdomain, ≤ 253). */
export function isDnsSubdomain(s: string): boolean {
  return s.length > 0 && s.length <= 253 && DNS1123_SUBDOMAIN.test(s)
}

/** Whether `s` is a DNS-1035 label (Service names). */
export function isDnsLabel(s: string): boolean {
  return s.length <= LABEL_MAX && DNS1035.test(s)
}

/** A DNS-1035 label for `name`: the name itself when valid, else a sanitised prefix plus `-<8 hex>` of the name. */
export function dnsLabel(name: string): string {
  if (isDnsLabel(name)) return name
  let base = name.toLowerCase().replace(/[^-a-z0-9]/g, '-')
  if (!/^[a-z]/.test(base)) base = `x${base}`
  base = base.slice(0, LABEL_MAX - 9).replace(/-+$/, '')
  return `${base}-${sha256(name).slice(0, 8)}`
}

/** A label value for `value`: itself when it fits in 63 characters, else a prefix plus `-<8 hex>`. */
export function labelValue(value: string): string {
  if (value.length <= LABEL_MAX) return value
  const base = value.slice(0, LABEL_MAX - 9).replace(/[^A-Za-z0-9]+$/, '')
  return `${base}-${sha256(value).slice(0, 8)}`
}
