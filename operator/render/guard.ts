/**
 * What a chart may produce for an instance: only the kinds its kinds.yaml declares, only in the
 * instance's namespace, with valid and unique names. The operator refuses the
 * whole render when any object breaks a rule, so nothing of it is half-applied.
 */
import type { ChartKind } from './kinds.ts'
import type { RenderedObject } from './manifest.ts'
import { isDnsLabel, isDnsSubdomain } from './names.ts'

const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/

/** A label or annotation key: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters. */
function isQualifiedName(key: string): boolean {
  const slash = key.lastIndexOf('/')
  return LABEL_KEY.test(key) && key.length - slash - 1 <= 63 && slash <= 253
}

/**
 * Every rule an instance's objects break, as `Kind/name: problem` — `template: Kind/name: problem`
 * when `sources` gives the template of each object; empty when all is well.
 */
export function guardObjects(objects: RenderedObject[], namespace: string, kinds: readonly ChartKind[], sources?: readonly string[]): string[] {
  const problems: string[] = []
  const seen = new Map<string, string | undefined>()
  for (const [i, o] of objects.entries()) {
    const source = sources?.[i]
    const id = `${source !== undefined ? `${source}: ` : ''}${o.kind}/${o.metadata.name}`
    const key = `${o.kind}/${o.metadata.name}`
    const declared = kinds.find((k) => k.kind === o.kind && k.apiVersion === o.apiVersion)
    if (!declared) {
      problems.push(`${id}: kind ${o.apiVersion} ${o.kind} is not one the operator manages (kinds.yaml declares ${kinds.map((k) => `${k.apiVersion} ${k.kind}`).join(', ')})`)
    }
    if (o.metadata.namespace !== namespace) {
      problems.push(`${id}: namespace ${JSON.stringify(o.metadata.namespace)} is not the instance's namespace ${JSON.stringify(namespace)}`)
    }
    const name = o.metadata.name
    const validName = o.kind === 'Service' ? isDnsLabel(name) : isDnsSubdomain(name)
    if (!validName) {
      problems.push(`${id}: invalid name: ${o.kind === 'Service' ? 'a DNS-1035 label (at most 63 characters, starting with a letter)' : 'a DNS subdomain'} is required`)
    }
    // The object's metadata and its pod template's (a value such as podAnnotations lands there),
    // which the API server validates alike (ValidateObjectMeta, ValidatePodTemplateSpec).
    const template = (o as { spec?: { template?: { metadata?: { labels?: unknown; annotations?: unknown } } } }).spec?.template?.metadata
    for (const [where, meta] of [['', o.metadata], [' (pod template)', template]] as const) {
      if (!meta) continue
      for (const [key, value] of Object.entries((meta.labels ?? {}) as Record<string, unknown>)) {
        if (!isQualifiedName(key)) problems.push(`${id}: invalid label key ${JSON.stringify(key)}${where}`)
        if (typeof value !== 'string' || value.length > 63 || !LABEL_VALUE.test(value)) problems.push(`${id}: invalid value of label ${JSON.stringify(key)}${where}: ${JSON.stringify(value)}`)
      }
      for (const key of Object.keys((meta.annotations ?? {}) as Record<string, unknown>)) {
        if (!isQualifiedName(key.toLowerCase())) problems.push(`${id}: invalid annotation key ${JSON.stringify(key)}${where}`)
      }
    }
    if (seen.has(key)) {
      const first = seen.get(key)
      problems.push(`${id}: rendered twice${first !== undefined ? ` (first by ${first})` : ''}`)
    }
    seen.set(key, source)
  }
  return problems
}
