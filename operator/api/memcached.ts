/**
 * The Memcached custom resource (cache.example.com/v1alpha1): its identity, and the parsing of
 * user-supplied CR documents into checked values.
 */
import YAML from 'yaml'
import { RenderError, yamlData, yamlProblems } from '../render/errors.ts'
import { isDnsSubdomain } from '../render/names.ts'
import { isPlainMap } from '../render/values.ts'

export const GROUP = 'cache.example.com'
export const VERSION = 'v1alpha1'
export const API_VERSION = `${GROUP}/${VERSION}`
export const KIND = 'Memcached'
export const PLURAL = 'memcacheds'
export const SINGULAR = 'memcached'
export const SHORT_NAMES = ['mc']

/** A condition as Kubernetes' metav1.Condition. */
export interface Condition {
  type: string
  status: 'True' | 'False' | 'Unknown'
  reason: string
  message: string
  lastTransitionTime: string
  observedGeneration?: number
}

/** What the operator reports about an instance. */
export interface MemcachedStatus {
  nodes?: string[]
  /** `host:port` of each memcached server, for clients (see reconcile/status.ts `serverList`). */
  serverList?: string[]
  /** How many servers serverList holds (a printer column cannot count a list). */
  servers?: number
  replicas?: number
  readyReplicas?: number
  selector?: string
  observedGeneration?: number
  /** The ChartRevision the instance was last rendered with (docs/fleet.md). */
  chartRevision?: string
  conditions?: Condition[]
}

/** A Memcached resource. `spec` is the chart's values and is validated by the chart's schema, not here. */
export interface Memcached {
  apiVersion: typeof API_VERSION
  kind: typeof KIND
  metadata: {
    name: string
    namespace?: string
    uid?: string
    generation?: number
    resourceVersion?: string
    labels?: Record<string, string>
    annotations?: Record<string, string>
    [field: string]: unknown
  }
  spec?: Record<string, unknown>
  status?: MemcachedStatus
}

/**
 * Calls `each` with every item of a YAML stream (YAML 1.1, duplicate keys refused, empty documents
 * skipped, a `List` unpacked) and where it stands (`source: document N[, item M]`); YAML problems
 * go to `problems`, named by source and line.
 */
export function forEachManifest(text: string, source: string, problems: string[], each: (item: unknown, at: string) => void): void {
  YAML.parseAllDocuments(text, { version: '1.1', uniqueKeys: true }).forEach((doc, i) => {
    const where = `${source}: document ${i + 1}`
    if (doc.errors.length > 0) {
      problems.push(...yamlProblems(source, doc.errors))
      return
    }
    let value: unknown
    try {
      value = yamlData(doc, source, text)
    } catch (err) {
      if (!(err instanceof RenderError)) throw err
      problems.push(...err.problems)
      return
    }
    if (value === null || value === undefined) return
    const items = isPlainMap(value) && value.kind === 'List' && Array.isArray(value.items) ? value.items : [value]
    items.forEach((item, j) => each(item, items.length > 1 || item !== value ? `${where}, item ${j + 1}` : where))
  })
}

/**
 * Parses a YAML stream of Memcached documents (empty documents skipped; a `List` is unpacked).
 * Every problem names the source and the document; anything that is not a Memcached is refused.
 */
export function parseMemcacheds(text: string, source: string): Memcached[] {
  const out: Memcached[] = []
  const problems: string[] = []
  forEachManifest(text, source, problems, (item, at) => {
    const problem = checkMemcached(item)
    if (problem) problems.push(`${at}: ${problem}`)
    else out.push(item as Memcached)
  })
  if (problems.length > 0) throw new RenderError('input', problems)
  return out
}

/** Why `value` is not a usable Memcached document, or undefined when it is. */
export function checkMemcached(value: unknown): string | undefined {
  if (!isPlainMap(value)) return 'not a map'
  if (value.apiVersion !== API_VERSION || value.kind !== KIND) {
    return `expected apiVersion ${API_VERSION} and kind ${KIND}, got ${JSON.stringify(value.apiVersion)} ${JSON.stringify(value.kind)}`
  }
  const meta = value.metadata
  if (!isPlainMap(meta)) return 'metadata is required'
  if (typeof meta.name !== 'string' || !isDnsSubdomain(meta.name)) {
    return `metadata.name ${JSON.stringify(meta.name)} must be a DNS subdomain: lowercase letters, digits, '-' and '.', at most 253 characters, starting and ending with a letter or digit`
  }
  if (meta.namespace !== undefined && (typeof meta.namespace !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(meta.namespace) || meta.namespace.length > 63)) {
    return `metadata.namespace ${JSON.stringify(meta.namespace)} must be a DNS label`
  }
  if (value.spec !== undefined && value.spec !== null && !isPlainMap(value.spec)) return 'spec must be a map'
  return undefined
}
