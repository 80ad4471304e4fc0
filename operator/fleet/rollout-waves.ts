/**
 * The pure parts of a rollout (fleet/rollout.ts): which Memcacheds a wave takes, whether a CR is
 * healthy on the target revision or waits for the operator's damage budget, who pinned a CR's
 * revision, and the settings of a Rollout's spec checked and defaulted.
 */
import type { Condition } from '../api/memcached.ts'
import type { LabelSelector, RolloutSpec, WaveSpec } from '../api/rollout-crd.ts'
import { goDuration } from '../kube/time.ts'
import { CONDITION_TYPES, REASONS } from '../reconcile/conditions.ts'

/** The field manager a rollout writes spec.chartRevision with; any other owner of that field is a person's pin. */
export const ROLLOUT_MANAGER = 'memcached-operator-rollout'

/** A Memcached as a rollout reads it (from a list: with managedFields). */
export interface FleetCr {
  metadata: {
    name?: string
    namespace?: string
    generation?: number
    labels?: Record<string, string>
    managedFields?: { manager?: string; operation?: string; fieldsV1?: Record<string, unknown> }[]
  }
  spec?: Record<string, unknown>
  status?: { chartRevision?: string; observedGeneration?: number; conditions?: Condition[] }
}

/** `namespace/name`. */
export const crKey = (cr: FleetCr): string => `${cr.metadata.namespace ?? 'default'}/${cr.metadata.name ?? ''}`

/** Whether `labels` match a metav1.LabelSelector (an absent selector matches everything). */
export function matches(selector: LabelSelector | undefined, labels: Record<string, string> = {}): boolean {
  if (selector === undefined) return true
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key)
    const values = e.values ?? []
    if (e.operator === 'In' && !(has && values.includes(labels[e.key]!))) return false
    if (e.operator === 'NotIn' && has && values.includes(labels[e.key]!)) return false
    if (e.operator === 'Exists' && !has) return false
    if (e.operator === 'DoesNotExist' && has) return false
  }
  return true
}

/**
 * The CRs wave `wave` takes from `remaining` (sorted by namespace/name, so that a wave is the same
 * whoever computes it): those its selector matches, at most `percent` of `total` rounded up. An
 * index past the declared waves is the last wave: every CR remaining.
 */
export function takeWave(waves: readonly WaveSpec[], wave: number, remaining: readonly FleetCr[], total: number): FleetCr[] {
  const sorted = [...remaining].sort((a, b) => crKey(a).localeCompare(crKey(b)))
  const spec = waves[wave]
  if (spec === undefined) return sorted
  const matched = sorted.filter((cr) => matches(spec.selector, cr.metadata.labels))
  return spec.percent === undefined ? matched : matched.slice(0, Math.ceil((spec.percent * total) / 100))
}

/** How many waves the fleet `crs` falls into: the declared ones that take a CR, and a last one for what none takes. */
export function countWaves(waves: readonly WaveSpec[], crs: readonly FleetCr[]): number {
  let remaining = [...crs]
  let n = 0
  for (let i = 0; i < waves.length; i++) {
    const taken = new Set(takeWave(waves, i, remaining, crs.length).map(crKey))
    n++
    remaining = remaining.filter((cr) => !taken.has(crKey(cr)))
  }
  return remaining.length > 0 || n === 0 ? n + 1 : n
}

/** The managers that own `spec.chartRevision` of a CR (managedFields). */
export function pinOwners(cr: FleetCr): string[] {
  const out: string[] = []
  for (const m of cr.metadata.managedFields ?? []) {
    const spec = m.fieldsV1?.['f:spec'] as Record<string, unknown> | undefined
    if (spec !== undefined && 'f:chartRevision' in spec) out.push(m.manager ?? '')
  }
  return out
}

/** The pin of a CR, when it has one. */
export const pinOf = (cr: FleetCr): string | undefined => (typeof cr.spec?.['chartRevision'] === 'string' ? (cr.spec['chartRevision'] as string) : undefined)

/** A person's pin: spec.chartRevision set by a manager other than the rollout's. */
export function personPin(cr: FleetCr): string | undefined {
  if (pinOf(cr) === undefined) return undefined
  const others = pinOwners(cr).filter((m) => m !== ROLLOUT_MANAGER)
  return others.length > 0 ? others.join(', ') : undefined
}

/**
 * Whether a CR runs `revision` healthily: the operator has reconciled its current generation with
 * that revision (status.chartRevision, status.observedGeneration) and reports it Ready and
 * Available. Otherwise why not, in a few words.
 */
export function health(cr: FleetCr, revision: string): { healthy: true } | { healthy: false; why: string } {
  const s = cr.status ?? {}
  if (s.observedGeneration !== cr.metadata.generation) return { healthy: false, why: `generation ${cr.metadata.generation ?? '?'} not yet reconciled` }
  if (s.chartRevision !== revision) return { healthy: false, why: `runs ${s.chartRevision ?? 'no recorded revision'}` }
  for (const type of ['Available', 'Ready']) {
    const c = (s.conditions ?? []).find((x) => x.type === type)
    if (c?.status !== 'True') return { healthy: false, why: c === undefined ? `no ${type} condition` : `${type}=${c.status} (${c.reason}: ${c.message})` }
  }
  return { healthy: true }
}

/**
 * Whether the operator's damage budget holds a CR's change (reconcile/budget.ts), or its turn to
 * re-create a workload (reconcile/pacing.ts): its Progressing condition is BudgetExhausted or
 * RecreationQueued for its current generation, nothing of the change applied. Then which limit
 * (`--max-restarts`, `--max-deletes` or `--max-concurrent-recreations`) and the CR's message.
 */
export function budgetWait(cr: FleetCr): { budget: 'restarts' | 'deletes' | 'recreations'; message: string } | undefined {
  const c = (cr.status?.conditions ?? []).find((x) => x.type === CONDITION_TYPES.Progressing)
  if ((c?.reason !== REASONS.BudgetExhausted && c?.reason !== REASONS.RecreationQueued) || c.status !== 'True') return undefined
  if ((c.observedGeneration ?? cr.status?.observedGeneration) !== cr.metadata.generation) return undefined
  if (c.reason === REASONS.RecreationQueued) return { budget: 'recreations', message: c.message }
  return { budget: c.message.includes('--max-deletes') ? 'deletes' : 'restarts', message: c.message }
}

/** A Rollout's settings, checked and defaulted. */
export interface RolloutSettings {
  waves: WaveSpec[]
  maxInFlight: number
  bakeMs: number
  deadlineMs: number
}

/** @throws Error naming the field that is wrong */
export function settingsOf(spec: RolloutSpec): RolloutSettings {
  const ms = (field: string, text: string | undefined, fallback: number): number => {
    if (text === undefined) return fallback
    try {
      return goDuration(text)
    } catch (err) {
      throw new Error(`spec.${field}: ${(err as Error).message}`)
    }
  }
  const maxInFlight = spec.maxInFlight ?? 1
  if (!Number.isInteger(maxInFlight) || maxInFlight < 1) throw new Error(`spec.maxInFlight must be a positive integer, not ${JSON.stringify(spec.maxInFlight)}`)
  for (const [i, w] of (spec.waves ?? []).entries()) {
    if (w.percent !== undefined && (!Number.isInteger(w.percent) || w.percent < 1 || w.percent > 100)) throw new Error(`spec.waves[${i}].percent must be an integer from 1 to 100, not ${JSON.stringify(w.percent)}`)
  }
  return { waves: spec.waves ?? [], maxInFlight, bakeMs: ms('bakeTime', spec.bakeTime, 0), deadlineMs: ms('healthDeadline', spec.healthDeadline, 5 * 60_000) }
}
