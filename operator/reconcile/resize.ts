/**
 * A larger `memoryMB` without a restart. A Deployment or StatefulSet replaces every pod when its
 * pod template changes, and `-m` and the container's memory are in the template. So when the only
 * change of the template is memcached's memory, and it grows, and the cluster serves pods/resize
 * (Kubernetes 1.33+), the operator keeps the live template's memory in what it applies (the
 * workload's reload annotation carries the new size) and instead:
 *   1. resizes each pod in place (pods/resize: the container's memory request and limit),
 *   2. once the kubelet runs the container with them, sends memcached `cache_memlimit <MB>`,
 *   3. checks `stats` (limit_maxbytes).
 * A pod the workload creates later starts from the held template and is resized the same way.
 * The template catches up with the next change that rolls the pods anyway.
 * Where that cannot be done the template changes as rendered and the pods restart, with the reason
 * in an event: a shrink (kube-apiserver refuses to lower a running container's memory limit,
 * validation.go validateContainerResize), a cluster without pods/resize, or another change of the
 * template in the same edit.
 */
import type { Logger } from 'pino'
import type { Memcached } from '../api/memcached.ts'
import { isNotFound, type KubeClient, type KubeObject } from '../controller/client.ts'
import { Backoff } from '../controller/clock.ts'
import { MemcachedConnection, type MemcachedTarget } from '../memcached/connection.ts'
import type { RenderedObject } from '../render/manifest.ts'
import type { ConditionInput } from './conditions.ts'
import { diffObject } from './diff.ts'
import type { EventRecorder } from './recorder.ts'
import { RELOAD_ANNOTATION, reloadPlanOf, type ReloadPlan } from './reload-plan.ts'
import type { PodDialer } from './reload.ts'

/** The condition this step writes (only for a CR whose memory was resized in place). */
export const MEMORY_RESIZED = 'MemoryResized'
export const RESIZE_REASONS = {
  Resized: 'Resized',
  Resizing: 'Resizing',
  ResizeFailed: 'ResizeFailed',
  MemoryResized: 'MemoryResized',
  MemoryResizeRestart: 'MemoryResizeRestart',
  MemoryNotShrunk: 'MemoryNotShrunk',
} as const

/** How soon a CR whose pods are being resized is looked at again. */
export const RESIZE_RETRY_MS = 2_000
/**
 * The longest wait between two tries of a CR whose pods' memcached refuses or does not answer
 * cache_memlimit: the waits double from the retry period (2 s, 4 s, 8 s…) up to this, so that a
 * fleet of unreachable pods does not draw a pod read and an event per CR every 2 s from the API
 * server (controller-runtime backs a failing item off the same way, 5 ms to 1,000 s).
 */
export const RESIZE_MAX_RETRY_MS = 5 * 60_000
/** How long the answer of discovery about pods/resize is kept. */
const DISCOVERY_TTL_MS = 5 * 60_000

interface ContainerLike {
  name?: string
  args?: string[]
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> }
}
export interface Target {
  memoryMB: number
  container: string
  resources: NonNullable<ContainerLike['resources']>
}

export interface ResizerDeps {
  client: KubeClient
  events: EventRecorder
  /** The TLS client material and credentials to reach memcached, as the reloader reads them. */
  connectionFor: (cr: Memcached, plan: ReloadPlan, pod: KubeObject) => Promise<MemcachedTarget>
  retryMs?: number
  /** Counts a failure by reason (the reconcile failures metric). */
  failed?: (reason: string) => void
  now?: () => number
}

/** The in-place resize of memcached's memory, per CR. */
export class Resizer {
  #d: ResizerDeps
  #now: () => number
  /** By CR uid: the memory its pods must get in place. */
  #targets = new Map<string, Target>()
  /** By CR uid, then pod uid: the memoryMB the pod was seen running with after its resize. */
  #done = new Map<string, Map<string, number>>()
  /** By CR uid: the last restart announced, so that a reconcile does not repeat it. */
  #announced = new Map<string, string>()
  /** By CR uid: its consecutive failed tries, while they last. */
  #failures = new Map<string, Backoff>()
  #served: { value: boolean; at: number } | undefined

  constructor(deps: ResizerDeps) {
    this.#d = deps
    this.#now = deps.now ?? Date.now
  }

  /** Forgets a CR (deleted). */
  forget(crUid: string): void {
    this.#targets.delete(crUid)
    this.#done.delete(crUid)
    this.#announced.delete(crUid)
    this.#failures.delete(crUid)
  }

  /**
   * The workload to apply: `d` as rendered, or — when its memory can grow in place — `d` with the
   * live template's memory, the new size recorded for {@link step}.
   */
  async hold(cr: Memcached, d: RenderedObject, live: KubeObject | undefined): Promise<RenderedObject> {
    const uid = cr.metadata.uid ?? ''
    // Discovery is asked only when a growth could be taken in place.
    let decision = memoryDecision(d, live, true)
    if (decision.kind === 'inPlace' && !(await this.#resizeServed())) decision = memoryDecision(d, live, false)
    if (decision.kind !== 'inPlace') this.#targets.delete(uid)
    switch (decision.kind) {
      case 'asRendered':
        return d
      case 'notShrunk':
        await this.#announce(cr, `${decision.currentMB}->${decision.wantMB}`, RESIZE_REASONS.MemoryNotShrunk, decision.why)
        return decision.apply
      case 'restart':
        await this.#announce(cr, `${decision.currentMB}->${decision.wantMB}`, RESIZE_REASONS.MemoryResizeRestart, decision.why)
        return d
      case 'inPlace':
        this.#targets.set(uid, decision.target)
        return decision.apply
    }
  }

  /** A Normal event, once per change of size. */
  async #announce(cr: Memcached, key: string, reason: string, message: string): Promise<void> {
    const uid = cr.metadata.uid ?? ''
    if (this.#announced.get(uid) === key) return
    this.#announced.set(uid, key)
    await this.#d.events.record(cr, 'Normal', reason, message, 'Resize')
  }

  /** Resizes the CR's ready pods to the recorded size; undefined when there is none. */
  async step(cr: Memcached, workload: KubeObject | undefined, pods: readonly KubeObject[], log: Logger): Promise<{ condition: ConditionInput; requeueAfterMs?: number } | undefined> {
    const uid = cr.metadata.uid ?? ''
    const target = this.#targets.get(uid)
    const plan = safePlan(workload)
    if (!target || !plan) return undefined
    const done = this.#done.get(uid) ?? new Map<string, number>()
    this.#done.set(uid, done)
    const live = pods.filter((p) => !p.metadata.deletionTimestamp && ready(p))
    const resized: string[] = []
    const waiting: string[] = []
    const failed: string[] = []
    // The pods at once: one that does not answer costs the connect timeout once, not per pod.
    await Promise.all(live.map(async (summary) => {
      const podUid = summary.metadata.uid ?? ''
      if (done.get(podUid) === target.memoryMB) return
      const name = summary.metadata.name ?? ''
      try {
        const pod = await this.#d.client.get({ apiVersion: 'v1', kind: 'Pod', namespace: summary.metadata.namespace ?? 'default', name })
        const container = containerOf(pod, target.container)
        if (!sameResources(container?.resources, target.resources)) {
          await this.#d.client.patch({ apiVersion: 'v1', kind: 'Pod', namespace: pod.metadata.namespace ?? 'default', name }, { spec: { containers: [{ name: target.container, resources: target.resources }] } }, { type: 'strategic', subresource: 'resize' })
          waiting.push(`pod ${name} is being resized`)
          return
        }
        const status = ((pod.status as { containerStatuses?: { name: string; resources?: ContainerLike['resources'] }[] } | undefined)?.containerStatuses ?? []).find((s) => s.name === target.container)
        if (!sameResources(status?.resources, target.resources)) {
          waiting.push(`the kubelet has not resized pod ${name} yet`)
          return
        }
        const conn = await MemcachedConnection.open(await this.#d.connectionFor(cr, plan, summary))
        try {
          const answer = await conn.command(`cache_memlimit ${target.memoryMB}`)
          if (answer !== 'OK') throw new Error(`memcached answered cache_memlimit with ${JSON.stringify(answer)}`)
          const limit = (await conn.stats())['limit_maxbytes']
          if (limit !== String(target.memoryMB * 1024 * 1024)) throw new Error(`memcached's limit_maxbytes is ${limit} after cache_memlimit ${target.memoryMB}`)
        } finally {
          conn.close()
        }
        done.set(podUid, target.memoryMB)
        resized.push(name)
        log.info({ pod: name, memoryMB: target.memoryMB }, 'memory resized in place')
      } catch (err) {
        if (isNotFound(err)) return
        failed.push(`pod ${name}: ${err instanceof Error ? err.message : String(err)}`)
      }
    }))
    waiting.sort()
    failed.sort()
    for (const p of done.keys()) if (!live.some((l) => l.metadata.uid === p)) done.delete(p)
    if (resized.length > 0) await this.#d.events.record(cr, 'Normal', RESIZE_REASONS.MemoryResized, `memoryMB ${target.memoryMB} in place on ${resized.sort().join(', ')} (pods/resize, then memcached's cache_memlimit); no pod restarted`, 'Resize')
    const retry = this.#d.retryMs ?? RESIZE_RETRY_MS
    if (failed.length > 0) {
      const backoff = this.#failures.get(uid) ?? new Backoff({ initialMs: retry, maxMs: Math.max(retry, RESIZE_MAX_RETRY_MS), jitter: 0.1 })
      this.#failures.set(uid, backoff)
      const message = failed.join('; ')
      log.warn({ reason: RESIZE_REASONS.ResizeFailed, err: message }, 'memory not resized in place')
      this.#d.failed?.(RESIZE_REASONS.ResizeFailed)
      await this.#d.events.record(cr, 'Warning', RESIZE_REASONS.ResizeFailed, message, 'Resize')
      return { condition: { type: MEMORY_RESIZED, status: 'False', reason: RESIZE_REASONS.ResizeFailed, message }, requeueAfterMs: backoff.next() }
    }
    this.#failures.delete(uid)
    if (waiting.length > 0) return { condition: { type: MEMORY_RESIZED, status: 'False', reason: RESIZE_REASONS.Resizing, message: waiting.join('; ') }, requeueAfterMs: retry }
    return { condition: { type: MEMORY_RESIZED, status: 'True', reason: RESIZE_REASONS.Resized, message: `every ready pod (${live.length}) runs with memoryMB ${target.memoryMB}, resized in place` } }
  }

  /** Whether the cluster serves pods/resize (kept a few minutes). */
  async #resizeServed(): Promise<boolean> {
    if (this.#served && this.#now() - this.#served.at < DISCOVERY_TTL_MS) return this.#served.value
    const value = await podsResizeServed(this.#d.client)
    this.#served = { value, at: this.#now() }
    return value
  }
}

/** Whether the cluster serves pods/resize with patch (discovery of /api/v1); false when it cannot be read. */
export async function podsResizeServed(client: Pick<KubeClient, 'request'>): Promise<boolean> {
  try {
    const res = await client.request({ method: 'GET', path: '/api/v1' })
    const list = JSON.parse(res.body) as { resources?: { name?: string; verbs?: string[] }[] }
    return list.resources?.some((r) => r.name === 'pods/resize' && r.verbs?.includes('patch')) ?? false
  } catch {
    return false
  }
}

/**
 * What the operator applies for a rendered workload `d` over `live`, as to memcached's memory:
 * - `asRendered`: `d` as it is (no memory to hold: no live workload, or no `-m` in it);
 * - `notShrunk`: the template already gives the size asked, but the pods run with more (grown in
 *   place): `apply` is `d` still saying what the pods run with, and nothing restarts them;
 * - `restart`: `d` as rendered, its pods restart (`why`): a shrink, another change of the pod
 *   template, or a cluster that does not serve pods/resize (`resizeServed`);
 * - `inPlace`: `apply` is `d` with the live template's memory; the pods are resized to `target`.
 * Pure: `diff` and `plan` predict with it what the resizer does.
 */
export type MemoryDecision =
  | { kind: 'asRendered' }
  | { kind: 'notShrunk'; apply: RenderedObject; currentMB: number; wantMB: number; why: string }
  | { kind: 'restart'; currentMB: number; wantMB: number; why: string }
  | { kind: 'inPlace'; apply: RenderedObject; currentMB: number; wantMB: number; target: Target }

export function memoryDecision(d: RenderedObject, live: KubeObject | undefined, resizeServed: boolean): MemoryDecision {
  const plan = safePlan(d)
  if (!plan?.memory || !live) return { kind: 'asRendered' }
  const name = plan.memory.container
  const want = containerOf(d, name)
  const have = containerOf(live, name)
  const templateMB = memoryArg(have?.args)
  const wantMB = plan.memory.memoryMB
  if (!want || !have || templateMB === undefined) return { kind: 'asRendered' }
  // What the pods run with: the size last applied to the workload (its annotation), which a growth in place leaves above its template's.
  const currentMB = safePlan(live)?.memory?.memoryMB ?? templateMB
  if (wantMB === templateMB) {
    if (currentMB <= wantMB) return { kind: 'asRendered' }
    // The workload keeps saying what the pods run with.
    return { kind: 'notShrunk', apply: withPlanMemory(d, currentMB), currentMB, wantMB, why: `memoryMB ${wantMB} is what the pod template already gives, so nothing restarts the pods: they keep memoryMB ${currentMB} (grown in place) until they restart (kubectl rollout restart applies it)` }
  }
  const held = structuredClone(d) as RenderedObject
  const heldContainer = containerOf(held, name)!
  heldContainer.args = withMemoryArg(heldContainer.args ?? [], templateMB)
  if (have.resources) heldContainer.resources = structuredClone(have.resources)
  else delete heldContainer.resources
  const templateChanges = diffObject(held, live).fields.filter((f) => f.startsWith('.spec.template'))
  const why =
    wantMB < currentMB ? `kube-apiserver refuses to lower a running container's memory limit (pods/resize), so the pods restart with memoryMB ${wantMB} (was ${currentMB})`
    : templateChanges.length > 0 ? `the pod template changes beyond memcached's memory (${templateChanges.slice(0, 3).join(', ')}), so the pods restart with memoryMB ${wantMB} as well`
    : !resizeServed ? `the cluster does not serve pods/resize (in-place pod resize, Kubernetes 1.33 and later), so the pods restart with memoryMB ${wantMB} (was ${currentMB})`
    : undefined
  if (why !== undefined) return { kind: 'restart', currentMB, wantMB, why }
  return { kind: 'inPlace', apply: held, currentMB, wantMB, target: { memoryMB: wantMB, container: name, resources: structuredClone(want.resources ?? {}) } }
}

function safePlan(o: KubeObject | RenderedObject | undefined): ReloadPlan | undefined {
  try {
    return reloadPlanOf(o as KubeObject | undefined)
  } catch {
    return undefined
  }
}

function containerOf(o: KubeObject | RenderedObject, name: string): ContainerLike | undefined {
  const containers = (o as { spec?: { template?: { spec?: { containers?: ContainerLike[] } }; containers?: ContainerLike[] } }).spec
  const list = containers?.template?.spec?.containers ?? containers?.containers
  return list?.find((c) => c.name === name)
}

/** `d` with its reload annotation's memory set to `mb`. */
function withPlanMemory(d: RenderedObject, mb: number): RenderedObject {
  const out = structuredClone(d) as RenderedObject
  const annotations = out.metadata.annotations as Record<string, string>
  const plan = JSON.parse(annotations[RELOAD_ANNOTATION]!) as { memory: { memoryMB: number } }
  plan.memory.memoryMB = mb
  annotations[RELOAD_ANNOTATION] = JSON.stringify(plan)
  return out
}

/** The value of memcached's `-m` in its args. */
function memoryArg(args: string[] | undefined): number | undefined {
  const i = args?.indexOf('-m') ?? -1
  const v = i >= 0 ? Number(args![i + 1]) : NaN
  return Number.isInteger(v) ? v : undefined
}

function withMemoryArg(args: string[], mb: number): string[] {
  const out = [...args]
  const i = out.indexOf('-m')
  if (i >= 0) out[i + 1] = String(mb)
  return out
}

function sameResources(a: ContainerLike['resources'] | undefined, b: ContainerLike['resources']): boolean {
  const norm = (r: ContainerLike['resources'] | undefined) => JSON.stringify({ requests: sortMap(r?.requests), limits: sortMap(r?.limits) })
  return norm(a) === norm(b)
}

function sortMap(m: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(m ?? {}).sort(([x], [y]) => (x < y ? -1 : 1)))
}

function ready(pod: KubeObject): boolean {
  return ((pod.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
}
