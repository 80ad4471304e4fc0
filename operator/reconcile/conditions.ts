/**
 * metav1.Condition helpers, with the semantics of apimachinery's `meta.SetStatusCondition`:
 * `lastTransitionTime` moves only when the status changes, so recomputing the same conditions
 * yields identical data and no status write.
 */
import type { Condition } from '../api/memcached.ts'

/** The condition types a Memcached reports. */
export const CONDITION_TYPES = {
  /** The cache serves: every desired replica is ready (or none is desired). */
  Available: 'Available',
  /** A rollout or scale is under way. */
  Progressing: 'Progressing',
  /** The operator cannot make the cluster match the spec; the reason says why. */
  Degraded: 'Degraded',
  /**
   * The summary (`kubectl wait --for=condition=Ready`, the Status printer column): True when the
   * cache is available, no rollout is under way and nothing is degraded; otherwise False with the
   * reason and message of the first of Degraded, Available, Progressing that stands in the way.
   */
  Ready: 'Ready',
  /**
   * Written only for a chart that declares optional kinds (kinds.yaml `optional: true`): True when
   * the cluster serves every optional kind the render produced, False `KindNotServed` naming the
   * objects left out because their kind is not served. It does not count towards Ready.
   */
  OptionalKindsServed: 'OptionalKindsServed',
  /**
   * Written only for a CR that was paused (pause.ts): True `Paused` while its annotation
   * `memcached.cache.example.com/paused` is "true" (nothing is applied), False `Resumed` after.
   */
  Paused: 'Paused',
  /**
   * Written only for a CR whose drift mode is `warn` (drift.ts): True `DriftDetected` naming the
   * fields another manager changed and that the operator left as they are, False `NoDrift` after.
   */
  Drifted: 'Drifted',
} as const

/** The type of a Memcached condition. */
export type ConditionType = (typeof CONDITION_TYPES)[keyof typeof CONDITION_TYPES]

/** Every reason the operator writes into a condition (CamelCase, as metav1.Condition requires). */
export const REASONS = {
  // Available
  AllReplicasReady: 'AllReplicasReady',
  ScaledToZero: 'ScaledToZero',
  ReplicasNotReady: 'ReplicasNotReady',
  DeploymentNotFound: 'DeploymentNotFound',
  StatefulSetNotFound: 'StatefulSetNotFound',
  // Progressing
  Creating: 'Creating',
  RollingOut: 'RollingOut',
  RolloutComplete: 'RolloutComplete',
  ProgressDeadlineExceeded: 'ProgressDeadlineExceeded',
  NotApplied: 'NotApplied',
  /** An object was deleted and re-created to change a field the API server does not change in place. */
  Recreated: 'Recreated',
  /** A workload must be re-created and waits for a slot of the fleet-wide budget (--max-concurrent-recreations). */
  RecreationQueued: 'RecreationQueued',
  /** The change would go over the fleet's budget of deletes or pod restarts (budget.ts): nothing is applied until the window has room. */
  BudgetExhausted: 'BudgetExhausted',
  /** The workload's kind changed: the old one keeps serving until the new one has every replica ready. */
  SwitchingWorkload: 'SwitchingWorkload',
  // Ready
  Reconciled: 'Reconciled',
  // Degraded
  AsExpected: 'AsExpected',
  InvalidSpec: 'InvalidSpec',
  TemplateError: 'TemplateError',
  ObjectRefused: 'ObjectRefused',
  OwnershipConflict: 'OwnershipConflict',
  ApplyFailed: 'ApplyFailed',
  /** A field cannot change in place and the object may not be re-created (opted out, not ours, or already tried). */
  ImmutableField: 'ImmutableField',
  PruneFailed: 'PruneFailed',
  /** The render would prune most of the CR's objects (--max-prune-fraction) and no annotation allows it. */
  PruneRefused: 'PruneRefused',
  /** The render refers to a Secret (secretChecksum) that the operator's cache of labelled Secrets does not hold. */
  SecretNotFound: 'SecretNotFound',
  ReconcileError: 'ReconcileError',
  /** The Deployment reports ReplicaFailure: pods cannot be created (quota, admission, a webhook). */
  ReplicaFailure: 'ReplicaFailure',
  // OptionalKindsServed
  /** Every object of an optional kind the render produced was applied (or it produced none). */
  AllServed: 'AllServed',
  /** The cluster does not serve an optional kind the render produced: its objects were left out. */
  KindNotServed: 'KindNotServed',
  // Paused (and Ready, while paused)
  Paused: 'Paused',
  Resumed: 'Resumed',
  // Drifted
  DriftDetected: 'DriftDetected',
  NoDrift: 'NoDrift',
} as const

/** A reason the operator writes. */
export type Reason = (typeof REASONS)[keyof typeof REASONS]

/** A condition to set: lastTransitionTime is decided by {@link setCondition}. */
export interface ConditionInput {
  type: string
  status: Condition['status']
  reason: string
  message: string
  observedGeneration?: number
}

/** metav1.Condition's rules: reason `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`, at most 1024; message at most 32768. */
const REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/
const MAX_MESSAGE = 32768

/** RFC 3339 in UTC with seconds, as metav1.Time is serialised (`2026-11-21T16:40:53Z`). */
export function rfc3339(now: Date): string {
  return `${now.toISOString().slice(0, 19)}Z`
}

/**
 * A new list with the condition set: replaced in place when its type exists (keeping
 * `lastTransitionTime` if the status is unchanged), appended otherwise. The input is not modified.
 * A message longer than the API allows is cut (the API server would refuse the whole status).
 * @throws Error when the reason is not a valid condition reason (a programming error)
 */
export function setCondition(conditions: readonly Condition[] | undefined, input: ConditionInput, now: Date): Condition[] {
  if (!REASON_PATTERN.test(input.reason) || input.reason.length > 1024) throw new Error(`invalid condition reason ${JSON.stringify(input.reason)}`)
  const list = [...(conditions ?? [])]
  const i = list.findIndex((c) => c.type === input.type)
  const old = i >= 0 ? list[i] : undefined
  const next: Condition = {
    type: input.type,
    status: input.status,
    reason: input.reason,
    message: input.message.length > MAX_MESSAGE ? `${input.message.slice(0, MAX_MESSAGE - 3)}...` : input.message,
    lastTransitionTime: old !== undefined && old.status === input.status ? old.lastTransitionTime : rfc3339(now),
  }
  if (input.observedGeneration !== undefined) next.observedGeneration = input.observedGeneration
  if (i >= 0) list[i] = next
  else list.push(next)
  return list
}

/** The condition of a type, if present. */
export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type)
}

/** Whether the condition of a type is present with status True. */
export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True'
}
