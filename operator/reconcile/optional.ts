/**
 * Optional kinds (kinds.yaml `optional: true`): a kind the cluster may not serve, such as a CRD
 * that is not installed. Its objects are left out of the apply while it is not served, the rest of
 * the render is applied, and the CR's OptionalKindsServed condition says what was left out. Pure;
 * which kinds are served is the controller's discovery (controller.ts).
 */
import type { ChartKind } from '../render/kinds.ts'
import { kindKey } from '../render/kinds.ts'
import type { RenderedObject } from '../render/manifest.ts'
import { CONDITION_TYPES, REASONS, type ConditionInput } from './conditions.ts'

/** An object left out because its optional kind is not served, and why. */
export interface NotServed {
  object: RenderedObject
  why: string
}

/**
 * Splits a render into what is applied and what is left out: objects of an optional kind that
 * `unserved` (kindKey → why) holds. A kind that is not optional is never left out.
 */
export function splitNotServed(kinds: readonly ChartKind[], desired: RenderedObject[], unserved: ReadonlyMap<string, string>): { apply: RenderedObject[]; left: NotServed[] } {
  const optional = new Set(kinds.filter((k) => k.optional).map(kindKey))
  const apply: RenderedObject[] = []
  const left: NotServed[] = []
  for (const d of desired) {
    const why = optional.has(kindKey(d)) ? unserved.get(kindKey(d)) : undefined
    if (why === undefined) apply.push(d)
    else left.push({ object: d, why })
  }
  return { apply, left }
}

/** `ServiceMonitor cache (the cluster does not serve monitoring.coreos.com/v1)`, each kind once with its objects. */
export function describeNotServed(left: readonly NotServed[]): string {
  const byKind = new Map<string, { names: string[]; why: string; kind: string }>()
  for (const l of left) {
    const key = kindKey(l.object)
    const entry = byKind.get(key) ?? { names: [], why: l.why, kind: l.object.kind }
    entry.names.push(l.object.metadata.name)
    byKind.set(key, entry)
  }
  return [...byKind.values()].map((e) => `${e.kind} ${e.names.join(', ')} (${e.why})`).join('; ')
}

/**
 * The OptionalKindsServed condition of a reconcile that applied its render; undefined for a chart
 * that declares no optional kind (the condition is then never written).
 */
export function optionalKindsCondition(kinds: readonly ChartKind[], left: readonly NotServed[]): ConditionInput | undefined {
  if (!kinds.some((k) => k.optional)) return undefined
  if (left.length > 0) {
    return { type: CONDITION_TYPES.OptionalKindsServed, status: 'False', reason: REASONS.KindNotServed, message: `not applied, the cluster does not serve their kind: ${describeNotServed(left)}` }
  }
  return { type: CONDITION_TYPES.OptionalKindsServed, status: 'True', reason: REASONS.AllServed, message: 'every optional kind the chart rendered is served and applied' }
}
