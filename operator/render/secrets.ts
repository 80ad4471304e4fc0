/**
 * Secrets as inputs of a render. A template never sees a Secret's content: `secretChecksum(name)`
 * gives a digest of it, to put in a pod-template annotation so that a rotation rolls the pods.
 * Where the digests come from is the caller's: the operator's label-filtered Secret cache, GETs
 * (`diff`), or nothing at all (`render`, offline: placeholders).
 */
import { RenderError } from './errors.ts'
import { isDnsSubdomain, sha256Bytes } from './names.ts'

/** The label a Secret needs for the operator to see it (its Secret informer selects by it). */
export const INPUT_LABEL = 'cache.example.com/memcached-input'
/** {@link INPUT_LABEL}'s value, as a label selector. */
export const INPUT_SELECTOR = `${INPUT_LABEL}=true`

/** What {@link secretChecksum} reads of a Secret: as the API returns it (`data`, base64) or as written (`stringData`). */
export interface SecretContent {
  type?: string
  data?: Record<string, string> | null
  stringData?: Record<string, string> | null
}

/**
 * Hex SHA-256 of a Secret's content, independent of key order and of how it was written: `type`
 * (the API server defaults an absent one to Opaque), then each key in sorted order with its bytes
 * — `data` decoded from base64, `stringData` as UTF-8 winning over `data` as the API server merges
 * it — every field preceded by its length, so that no two contents share an encoding.
 */
export function secretChecksum(secret: SecretContent): string {
  // Never throws, whatever the object: the informer caches an object its transform fails on as it
  // came, content included.
  const entries = new Map<string, Buffer>()
  const map = (m: unknown): [string, unknown][] => (m !== null && typeof m === 'object' && !Array.isArray(m) ? Object.entries(m) : [])
  for (const [k, v] of map(secret.data)) entries.set(k, Buffer.from(String(v), 'base64'))
  for (const [k, v] of map(secret.stringData)) entries.set(k, Buffer.from(String(v), 'utf8'))
  const parts: Buffer[] = []
  const field = (b: Buffer) => {
    const len = Buffer.alloc(4)
    len.writeUInt32BE(b.length)
    parts.push(len, b)
  }
  field(Buffer.from(String(secret.type || 'Opaque'), 'utf8'))
  const keys = [...entries.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  const count = Buffer.alloc(4)
  count.writeUInt32BE(keys.length)
  parts.push(count)
  for (const k of keys) {
    field(Buffer.from(k, 'utf8'))
    field(entries.get(k)!)
  }
  return sha256Bytes(Buffer.concat(parts))
}

/** The names of a Secret's keys (`data` and `stringData`), sorted: never their values. */
export function secretKeys(secret: SecretContent): string[] {
  const map = (m: unknown): string[] => (m !== null && typeof m === 'object' && !Array.isArray(m) ? Object.keys(m) : [])
  return [...new Set([...map(secret.data), ...map(secret.stringData)])].sort()
}

/** Where `secretChecksum()` reads from. */
export interface SecretSource {
  /** The checksum of Secret `namespace/name`, or undefined when this source has no such Secret. */
  checksum(namespace: string, name: string): string | undefined
  /** The key names of Secret `namespace/name`; undefined when this source does not know them (nothing is checked then). */
  keys?(namespace: string, name: string): readonly string[] | undefined
}

/** What `secretChecksum()` returns offline: not a digest, and the same for every Secret. */
export const OFFLINE_CHECKSUM = 'not-computed-offline'

/** A source without a cluster: every Secret gets {@link OFFLINE_CHECKSUM}. */
export const offlineSecrets: SecretSource = { checksum: () => OFFLINE_CHECKSUM }

/** A source over checksums already known, by `namespace/name` (what `diff` read with GETs). */
export function secretsFrom(checksums: ReadonlyMap<string, string>): SecretSource {
  return { checksum: (namespace, name) => checksums.get(`${namespace}/${name}`) }
}

/** `secretChecksum()`'s check of its argument: a Secret's name is a DNS subdomain. */
export function checkSecretName(name: unknown): string {
  if (typeof name !== 'string' || !isDnsSubdomain(name)) {
    const shown = typeof name === 'string' ? JSON.stringify(name) : name === undefined ? 'undefined' : `${JSON.stringify(name) ?? String(name)} (${name === null ? 'null' : typeof name})`
    throw new Error(`secretChecksum: ${shown} is not a valid Secret name (a DNS subdomain: lowercase letters, digits, '-' and '.', at most 253 characters)`)
  }
  return name
}

/**
 * A render that referred to Secrets its source does not have. Nothing of it may be applied: its
 * pods' checksum annotations would be wrong. `missing` are `namespace/name`.
 */
export class SecretsNotFound extends RenderError {
  readonly missing: string[]
  constructor(missing: string[]) {
    super('secret', missing.map((m) => `Secret ${m} not found`))
    this.name = 'SecretsNotFound'
    this.missing = missing
  }
}

/**
 * A render whose Secrets lack keys the pods read (`secretChecksum(name, { keys })`): memcached
 * would exit at start, or the kubelet would not start the pod at all, so nothing of it is applied.
 * Each problem names the Secret, the key and what needs it.
 */
export class SecretKeysMissing extends RenderError {
  constructor(problems: string[]) {
    super('secret', problems)
    this.name = 'SecretKeysMissing'
  }
}
