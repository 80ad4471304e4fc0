/**
 * Sharding by CR label (`--selector`) for every cache, not just the Memcacheds'.
 *
 * Each rendered object, and the pod template of a workload, carries its CR's values of the label
 * keys the shard's selector names (absent on the object when absent on the CR). A selector reads
 * only the labels of its keys, so it matches a child exactly when it matches the child's CR: the
 * child and pod informers list and watch with the shard's own selector (plus the operator's
 * managed-by label), and each shard caches only its CRs' objects. controller-runtime's cache
 * options (`ByObject[...].Label`) filter the same way, by a label on the cached object itself;
 * there is no selector by owner. Filtering by the set of the shard's instance names instead would
 * change the selector, hence relist every cache, at each CR created or relabelled.
 */
import { parseLabelSelector } from '../kube/labels.ts'
import { standardLabels } from '../render/engine.ts'
import type { RenderedObject } from '../render/manifest.ts'

/** The labels the operator sets on every object (engine.ts): a shard selector cannot read them off a CR. */
const RESERVED = new Set(Object.keys(standardLabels({ name: 'x', appVersion: 'x' }, 'x')))

/**
 * The label keys a selector reads (`shard=a,tier notin (x)` → `shard`, `tier`).
 * @throws Error naming the selector when it does not parse, or when it reads a label the operator
 * sets on every object it renders (the children would carry the operator's value, not the CR's)
 */
export function selectorKeys(selector: string | undefined): string[] {
  if (selector === undefined || selector.trim() === '') return []
  let keys: string[]
  try {
    keys = [...new Set(parseLabelSelector(selector).requirements.map((r) => r.key))]
  } catch (err) {
    throw new Error(`label selector ${JSON.stringify(selector)}: ${err instanceof Error ? err.message : String(err)}`)
  }
  const reserved = keys.filter((k) => RESERVED.has(k))
  if (reserved.length > 0) throw new Error(`label selector ${JSON.stringify(selector)}: ${reserved.join(', ')} is set by the operator on every object it renders; shard by a label of your own`)
  return keys
}

/**
 * The label selector of the shard's children and pods: the operator's label and the shard's own
 * selector (whose keys each child carries with its CR's values, {@link stampShard}).
 */
export function shardSelector(managedBy: string, selector: string | undefined): string {
  return selector === undefined || selector.trim() === '' ? managedBy : `${managedBy},${selector}`
}

type Labelled = { metadata?: { labels?: Record<string, string> | null } }

/**
 * Copies of `objects` whose labels, and whose pod template's labels, hold the CR's value of each
 * of `keys` (and none of a key the CR lacks). The input is not modified.
 */
export function stampShard(objects: readonly RenderedObject[], cr: { metadata: { labels?: Record<string, string> | undefined } }, keys: readonly string[]): RenderedObject[] {
  if (keys.length === 0) return [...objects]
  const labels = (l: Record<string, string> | null | undefined): Record<string, string> => {
    const out: Record<string, string> = { ...(l ?? {}) }
    for (const k of keys) {
      const v = cr.metadata.labels?.[k]
      if (v === undefined) delete out[k]
      else out[k] = v
    }
    return out
  }
  return objects.map((o) => {
    const copy: RenderedObject = { ...o, metadata: { ...o.metadata, labels: labels(o.metadata.labels) } }
    const spec = (o as { spec?: { template?: Labelled } }).spec
    if (spec?.template?.metadata !== undefined || ((o.kind === 'Deployment' || o.kind === 'StatefulSet') && spec?.template)) {
      const template = spec!.template!
      ;(copy as { spec?: unknown }).spec = { ...spec, template: { ...template, metadata: { ...(template.metadata ?? {}), labels: labels(template.metadata?.labels) } } }
    }
    return copy
  })
}
