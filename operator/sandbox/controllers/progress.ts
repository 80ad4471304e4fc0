/**
 * A Deployment's progress deadline, as kube-controller-manager's deployment controller keeps it
 * (pkg/controller/deployment/progress.go syncRolloutStatus, util/deployment_util.go
 * DeploymentTimedOut): a rollout that has made no progress for `progressDeadlineSeconds` since its
 * Progressing condition was last updated gets Progressing False `ProgressDeadlineExceeded`
 * (`ReplicaSet "<name>" has timed out progressing.`); progress made later sets it True again, a
 * complete rollout (NewReplicaSetAvailable) never times out, and the controller looks again when the
 * deadline passes (progress.go requeueStuckDeployment).
 */
import type { KubeObject } from '../types.ts'

/** A Deployment condition, as the controller writes it. */
export interface ProgressCondition {
  type: string
  status: string
  reason: string
  message: string
  lastUpdateTime: string
  lastTransitionTime: string
}

/** The deadline in ms, or undefined when the Deployment has none (unset, or math.MaxInt32: HasProgressDeadline). */
export function progressDeadlineMs(d: KubeObject): number | undefined {
  const s = ((d['spec'] ?? {}) as { progressDeadlineSeconds?: unknown }).progressDeadlineSeconds
  return typeof s === 'number' && s !== 2147483647 ? s * 1000 : undefined
}

/**
 * How long until the rollout times out (0: it has), or undefined when it cannot: no deadline, no
 * Progressing condition, or a complete or already timed-out one.
 */
export function untilTimeout(d: KubeObject, progressing: ProgressCondition | undefined, now: number): number | undefined {
  const deadline = progressDeadlineMs(d)
  if (deadline === undefined || progressing === undefined) return undefined
  if (progressing.reason === 'NewReplicaSetAvailable' || progressing.reason === 'ProgressDeadlineExceeded' || progressing.status !== 'True') return undefined
  const from = Date.parse(progressing.lastUpdateTime)
  if (Number.isNaN(from)) return undefined
  return Math.max(0, from + deadline - now)
}

/** The condition of a timed-out rollout (progress.go: util.NewDeploymentCondition(…, TimedOutReason, …)). */
export function timedOutCondition(rsName: string, time: string): ProgressCondition {
  return { type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: `ReplicaSet "${rsName}" has timed out progressing.`, lastUpdateTime: time, lastTransitionTime: time }
}
