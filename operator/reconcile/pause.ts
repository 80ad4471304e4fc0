/**
 * Pausing one Memcached: while its annotation `memcached.cache.example.com/paused` is `"true"`, a
 * reconcile writes nothing to its objects (no apply, no re-creation, no prune) and only says so on
 * the CR — a `Paused` condition True, and Ready False `Paused`, which the Status printer column
 * shows. Removing the annotation (or any other value) resumes it: the next reconcile converges as
 * usual and `Paused` turns False. As Crossplane's `crossplane.io/paused`, Argo CD's
 * `argocd.argoproj.io/skip-reconcile` and kro's `kro.run/reconcile: suspended`, it is an
 * annotation rather than a spec field: an incident switch, not part of the desired state.
 */
import type { MemcachedStatus } from '../api/memcached.ts'
import { CONDITION_TYPES, findCondition, REASONS, setCondition, type ConditionInput } from './conditions.ts'

/** The annotation that pauses a Memcached (value exactly `"true"`). */
export const PAUSED_ANNOTATION = 'memcached.cache.example.com/paused'

/** What of a CR this module reads. */
interface Annotated {
  metadata: { generation?: number; annotations?: Record<string, string> }
  status?: MemcachedStatus
}

/** Whether the CR is paused. */
export function isPaused(cr: Annotated): boolean {
  return cr.metadata.annotations?.[PAUSED_ANNOTATION] === 'true'
}

/** The message of a paused CR's conditions. */
export const PAUSED_MESSAGE = `reconcile paused by the annotation ${PAUSED_ANNOTATION}="true": nothing is applied, re-created or pruned; remove the annotation to resume`

/**
 * The status of a paused CR: what it said before, with `Paused` True and Ready False `Paused`
 * (observedGeneration stays the last one reconciled: a paused CR has not acted on a newer spec);
 * `announce` when it was not paused before (a Normal event says so).
 */
export function pausedStatus(cr: Annotated, now: Date): { status: MemcachedStatus; announce: boolean } {
  const status: MemcachedStatus = { ...(cr.status ?? {}) }
  const generation = cr.metadata.generation
  const with_ = (c: ConditionInput): ConditionInput => (generation === undefined ? c : { ...c, observedGeneration: generation })
  let list = setCondition(status.conditions, with_({ type: CONDITION_TYPES.Paused, status: 'True', reason: REASONS.Paused, message: PAUSED_MESSAGE }), now)
  list = setCondition(list, with_({ type: CONDITION_TYPES.Ready, status: 'False', reason: REASONS.Paused, message: PAUSED_MESSAGE }), now)
  status.conditions = list
  return { status, announce: findCondition(cr.status?.conditions, CONDITION_TYPES.Paused)?.status !== 'True' }
}

/** The condition a resumed CR writes: `Paused` False, only when it had one (a CR never paused gets none, and no status write). */
export function resumedCondition(cr: Annotated): ConditionInput | undefined {
  if (!findCondition(cr.status?.conditions, CONDITION_TYPES.Paused)) return undefined
  return { type: CONDITION_TYPES.Paused, status: 'False', reason: REASONS.Resumed, message: `reconciled: the annotation ${PAUSED_ANNOTATION} is not "true"` }
}
