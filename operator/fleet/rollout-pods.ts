/**
 * Why a Memcached's pods are not ready, as the kubelet reports it in their status, for the message
 * of a rollout's failed health gate (rollout.ts): a container's waiting reason (ImagePullBackOff,
 * ErrImagePull, CrashLoopBackOff with its restarts and last exit), or a container that runs and
 * whose readiness never passes — what `kubectl describe pod` shows first. The pods are read from
 * the API when the gate fails, not from the operator's pod cache, which keeps of a pod only its
 * phase, IP and Ready condition (reconcile/cache-summary.ts); the read is bounded: one page of one
 * CR's pods, a few of them named.
 */
import type { KubeClient } from '../controller/client.ts'
import { labelValue } from '../render/names.ts'

/** Pods named per Memcached. */
export const PODS_NAMED = 3
/** The pods of one Memcached read at most (one page). */
const PODS_READ = 50
/** A kubelet message (an image pull's runtime error) is cut at this length. */
const MESSAGE_MAX = 160

/** What of a container's status is read (core/v1 ContainerStatus). */
export interface ContainerStatusView {
  name?: string
  ready?: boolean
  restartCount?: number
  state?: { waiting?: { reason?: string; message?: string }; running?: { startedAt?: string }; terminated?: { reason?: string; exitCode?: number } }
  lastState?: { terminated?: { reason?: string; exitCode?: number } }
}

/** What of a pod is read. */
export interface PodView {
  metadata: { name?: string; deletionTimestamp?: string }
  status?: {
    phase?: string
    conditions?: { type: string; status: string; reason?: string; message?: string }[]
    initContainerStatuses?: ContainerStatusView[]
    containerStatuses?: ContainerStatusView[]
  }
}

const cut = (text: string): string => (text.length > MESSAGE_MAX ? `${text.slice(0, MESSAGE_MAX - 1)}…` : text)
const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`

/** Why one container is not ready, in the kubelet's words; undefined when it is ready. */
export function containerWhy(c: ContainerStatusView): string | undefined {
  if (c.ready === true) return undefined
  const restarts = c.restartCount ?? 0
  const waiting = c.state?.waiting
  if (waiting?.reason === 'CrashLoopBackOff') {
    const last = c.lastState?.terminated
    const exit = last ? `, last exit code ${last.exitCode ?? '?'}${last.reason ? ` (${last.reason})` : ''}` : ''
    return `CrashLoopBackOff, ${plural(restarts, 'restart')}${exit}`
  }
  if (waiting !== undefined) return `${waiting.reason ?? 'waiting'}${waiting.message ? ` (${cut(waiting.message)})` : ''}`
  if (c.state?.running !== undefined) return `running, not ready${restarts > 0 ? ` (${plural(restarts, 'restart')})` : ''}`
  const ended = c.state?.terminated
  if (ended !== undefined) return `terminated${ended.reason ? ` ${ended.reason}` : ''}, exit code ${ended.exitCode ?? '?'}`
  return 'no state reported'
}

const isReady = (pod: PodView): boolean => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true

/** Why one pod is not ready: its containers that are not, or its phase and scheduling; undefined when it is Ready. */
export function podWhy(pod: PodView): string | undefined {
  if (isReady(pod)) return undefined
  const s = pod.status ?? {}
  const containers = [...(s.initContainerStatuses ?? []).map((c) => ({ c, init: true })), ...(s.containerStatuses ?? []).map((c) => ({ c, init: false }))]
  const why = containers.flatMap(({ c, init }) => {
    const w = containerWhy(c)
    // An init container that ran to its end is not ready, and is not the cause.
    if (w === undefined || (init && c.state?.terminated?.exitCode === 0)) return []
    return [`${init ? 'init container' : 'container'} ${c.name ?? '?'} ${w}`]
  })
  if (why.length > 0) return why.join(', ')
  const unscheduled = s.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False')
  if (unscheduled !== undefined) return `not scheduled (${unscheduled.reason ?? 'PodScheduled=False'}${unscheduled.message ? `: ${cut(unscheduled.message)}` : ''})`
  return s.phase === undefined ? 'no status reported yet' : `${s.phase}, not ready`
}

/**
 * Why the pods of one Memcached are not ready, at most `max` of them named (by name) and the
 * others counted; undefined when every pod (not terminating) is Ready.
 */
export function podsWhy(pods: readonly PodView[], max = PODS_NAMED): string | undefined {
  const failing = pods
    .filter((p) => p.metadata.deletionTimestamp === undefined)
    .flatMap((p) => {
      const why = podWhy(p)
      return why === undefined ? [] : [{ name: p.metadata.name ?? '?', why }]
    })
    .sort((a, b) => a.name.localeCompare(b.name))
  if (failing.length === 0) return undefined
  const named = failing.slice(0, max).map((f) => `pod ${f.name}: ${f.why}`)
  if (failing.length > max) named.push(`${failing.length - max} more pods not ready`)
  return named.join('; ')
}

/** A Memcached as this file reads it. */
export interface CrPods {
  metadata: { name?: string; namespace?: string }
  status?: { selector?: string }
}

/** The label selector of a Memcached's pods: its status.selector (its workload's), else the instance label the chart gives them. */
export function podSelector(cr: CrPods): string {
  const s = cr.status?.selector
  return s !== undefined && s !== '' ? s : `app.kubernetes.io/instance=${labelValue(cr.metadata.name ?? '')}`
}

/** Why the pods of `cr` are not ready, read from the API (one page); a read that fails says so. */
export async function whyPodsFail(client: KubeClient, cr: CrPods): Promise<string | undefined> {
  try {
    const pods = await client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: cr.metadata.namespace ?? 'default', labelSelector: podSelector(cr), limit: PODS_READ, firstPageOnly: true })
    return podsWhy(pods.items as unknown as PodView[])
  } catch (err) {
    return `its pods could not be read: ${err instanceof Error ? err.message : String(err)}`
  }
}
