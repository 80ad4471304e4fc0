/**
 * A fleet-wide budget for re-creating workloads. Deleting a Deployment or StatefulSet to change a
 * field the API server will not change in place (recreate.ts) is not an eviction: no
 * PodDisruptionBudget applies and the instance loses every pod at once. A chart change that moves
 * the selector does that to every instance; this budget lets at most `max` workloads be re-created
 * at a time across every CR this process reconciles, each holding its slot until its replacement
 * has every replica ready (or a timeout), and keeps the others waiting in arrival order.
 *
 * It sits above the per-CR reconcile: a reconcile asks before it deletes anything and, told to
 * wait, applies nothing of its CR (see the reconciler) and asks again later. A re-creation is a
 * delete, so a slot is granted only when the fleet's delete budget (budget.ts) has room for it as
 * well: the request keeps its place in the queue until then, and re-creations go in the order they
 * were asked for under both limits. Only workloads are
 * paced: re-creating a Service or a ConfigMap costs no pod (the endpoints follow the selector, a
 * new cluster IP is served at once through the Service's DNS name).
 */
import type { KubeObject } from '../controller/client.ts'
import type { Admission, DamageBudget } from './budget.ts'
import type { RenderedObject } from '../render/manifest.ts'
import { diffObject } from './diff.ts'
import { describeObject, objectKey } from './owner.ts'
import { immutableWorkloadField } from './recreate.ts'
import { isWorkload } from './status.ts'

/** What a reconcile asks a slot for. */
export interface RecreationRequest {
  /** The workload (owner.ts objectKey: `Deployment.apps/namespace/name`). */
  key: string
  /** uid of the CR that re-creates it. */
  owner: string
  /** The CR, `namespace/name` (its work-queue key): told when its turn comes. */
  crKey: string
  /** `Deployment default/cache`, for messages. */
  what: string
  /** The immutable field that forces the re-creation (`spec.selector`). */
  field: string
  /** uid of the live workload it replaces: the slot is held until another one of that name is ready. */
  replaces: string
  /** The rendered workload (its identity), to find its replacement in the cache. */
  ref: RenderedObject
}

/** The answer to a request: go ahead, or wait at `position` (1 is next) — for a slot, or (`budget`) for the delete budget. */
export type Grant = { granted: true } | { granted: false; position: number; queued: number; inFlight: string[]; budget?: Extract<Admission, { admitted: false }> }

/** A workload being re-created. */
export interface InFlight extends RecreationRequest {
  since: number
}

/** Options of {@link RecreationPacer}. */
export interface PacerOptions {
  /** Workloads re-created at a time; 0 means no limit (every re-creation is granted at once). */
  max: number
  /** How long a slot is held at most while the replacement does not become ready. */
  timeoutMs: number
  /** Milliseconds now (tests). */
  now?: () => number
  /** Told the work-queue key of a waiting CR whose turn may have come (a slot was freed). */
  onFree?: (crKey: string) => void
  /** Told the counts after every change (the gauges). */
  onChange?: (queued: number, inFlight: number) => void
  /** Told of a slot given up because its replacement did not become ready in time. */
  onTimeout?: (slot: InFlight) => void
  /** The fleet's damage budget: each re-creation is charged one delete when its slot is granted. */
  budget?: DamageBudget
}

/**
 * How long a waiting request is kept without being asked again: its CR is requeued well within
 * that, so one not asking any more (its render no longer needs the re-creation, it left this
 * shard) must not keep the others behind it.
 */
const STALE_MS = 5 * 60_000

/** The budget: one per operator process, shared by its reconcilers. */
export class RecreationPacer {
  #o: PacerOptions
  #now: () => number
  #inFlight = new Map<string, InFlight>()
  /** Waiting requests by workload key, in arrival order (a Map keeps insertion order). */
  #waiting = new Map<string, RecreationRequest & { asked: number; budget?: boolean }>()

  constructor(opts: PacerOptions) {
    if (!Number.isInteger(opts.max) || opts.max < 0) throw new Error(`the number of concurrent re-creations must be a non-negative integer, not ${opts.max}`)
    this.#o = opts
    this.#now = opts.now ?? Date.now
  }

  /**
   * Asks for a slot to re-create `req.key`: granted when the workload already holds one, or when a
   * slot is free and no earlier request waits for it; otherwise the request keeps (or takes) its
   * place in the queue.
   */
  request(req: RecreationRequest): Grant {
    this.#expire()
    if (this.#inFlight.has(req.key)) return { granted: true }
    const now = this.#now()
    const before = this.#waiting.get(req.key)
    const free = this.#o.max === 0 ? Infinity : this.#o.max - this.#inFlight.size
    const order = [...this.#waiting.keys()]
    const ahead = before ? order.indexOf(req.key) : this.#waiting.size
    // Nobody passes a request that waits for the delete budget: they go in the order they asked.
    const turn = ahead < free && !order.slice(0, ahead).some((k) => this.#waiting.get(k)?.budget)
    // Charged once per workload replaced (free when the reconcile's plan already charged it); one
    // whose turn has not come is told whether the budget would have room for it either.
    const charge = [{ kind: 'delete' as const, key: `delete:${req.replaces}`, what: req.what }]
    const charged = turn ? this.#o.budget?.admit(charge) : ahead < free ? this.#o.budget?.check(charge) : undefined
    if (turn && charged?.admitted !== false) {
      this.#waiting.delete(req.key)
      this.#inFlight.set(req.key, { ...req, since: now })
      this.#changed()
      return { granted: true }
    }
    const waiting = before ?? { ...req, asked: now }
    waiting.asked = now
    waiting.budget = turn && charged?.admitted === false
    if (!before) this.#waiting.set(req.key, waiting)
    this.#changed()
    return { granted: false, position: ahead + 1, queued: this.#waiting.size, inFlight: [...this.#inFlight.values()].map((f) => f.what), ...(charged?.admitted === false ? { budget: charged } : {}) }
  }

  /** The replacement of `key` is ready (or its re-creation did not happen): its slot goes to the next in line. */
  release(key: string): void {
    if (this.#inFlight.delete(key)) this.#freed()
  }

  /** Drops the CR's waiting requests: its render no longer needs a re-creation. */
  withdraw(owner: string): void {
    let changed = false
    for (const [key, w] of this.#waiting) if (w.owner === owner && this.#waiting.delete(key)) changed = true
    if (changed) this.#freed()
  }

  /** Drops everything of a CR (it was deleted): its requests and its slots. */
  forget(owner: string): void {
    for (const [key, f] of this.#inFlight) if (f.owner === owner) this.#inFlight.delete(key)
    this.withdraw(owner)
    this.#freed()
  }

  /** The slots a CR holds. */
  held(owner: string): InFlight[] {
    this.#expire()
    return [...this.#inFlight.values()].filter((f) => f.owner === owner)
  }

  /** Waiting requests and slots held, after dropping expired ones. */
  counts(): { queued: number; inFlight: number } {
    this.#expire()
    return { queued: this.#waiting.size, inFlight: this.#inFlight.size }
  }

  /** Gives up slots held past the timeout and requests not asked again for {@link STALE_MS}. */
  #expire(): void {
    const now = this.#now()
    let changed = false
    for (const [key, f] of this.#inFlight) {
      if (now - f.since < this.#o.timeoutMs) continue
      this.#inFlight.delete(key)
      this.#o.onTimeout?.(f)
      changed = true
    }
    for (const [key, w] of this.#waiting) {
      if (now - w.asked < STALE_MS) continue
      this.#waiting.delete(key)
      changed = true
    }
    if (changed) this.#freed()
  }

  /** Tells the first waiting CRs that fit in the free slots, and the gauges. */
  #freed(): void {
    const free = this.#o.max === 0 ? this.#waiting.size : this.#o.max - this.#inFlight.size
    let told = 0
    for (const w of this.#waiting.values()) {
      if (told++ >= free) break
      this.#o.onFree?.(w.crKey)
    }
    this.#changed()
  }

  #changed(): void {
    this.#o.onChange?.(this.#waiting.size, this.#inFlight.size)
  }
}

/** Thrown inside a reconcile whose re-creation must wait: nothing more of the CR is applied. */
export class RecreationQueued extends Error {
  override name = 'RecreationQueued'
}

/** The Progressing message of a CR waiting for its turn: which object, why, and its place. */
export function queuedMessage(req: RecreationRequest, grant: Extract<Grant, { granted: false }>): string {
  const under = grant.inFlight.length > 0 ? `; being re-created now: ${grant.inFlight.join(', ')}` : ''
  return `${req.what} must be deleted and re-created (${req.field} cannot change in place) and waits for its turn: ${grant.position} of ${grant.queued} waiting${under}; nothing of this Memcached is applied until then (--max-concurrent-recreations)`
}

/** A CR as {@link planRecreations} reads it. */
interface Owner {
  metadata: { name: string; namespace?: string; uid?: string }
}

/**
 * Asks the budget for a slot for every rendered workload whose live version differs in a field the
 * server will not change in place (and that may be re-created, `may`; `unchanged`: nothing differs
 * since our last apply): the slots granted, or the message of the first that must wait (the slots
 * granted before it are then given back, so that a CR does not hold one while it waits). A CR
 * that needs none gives up its place in the queue.
 */
export function planRecreations(
  pacer: RecreationPacer,
  cr: Owner,
  desired: readonly RenderedObject[],
  live: ReadonlyMap<string, KubeObject | undefined>,
  may: (d: RenderedObject, current: KubeObject) => boolean,
  unchanged: (d: RenderedObject, current: KubeObject) => boolean,
): { granted: RecreationRequest[]; queued?: string; budget?: { request: RecreationRequest; refusal: Extract<Admission, { admitted: false }> } } {
  const owner = cr.metadata.uid ?? ''
  const granted: RecreationRequest[] = []
  for (const d of desired) {
    const current = live.get(objectKey(d))
    if (!isWorkload(d) || current?.metadata.uid === undefined || unchanged(d, current) || !may(d, current)) continue
    const field = immutableWorkloadField(d.kind, diffObject(d, current).fields)
    if (field === undefined) continue
    const req = { key: objectKey(d), owner, crKey: `${cr.metadata.namespace ?? ''}/${cr.metadata.name}`, what: describeObject(d), field, replaces: current.metadata.uid, ref: d }
    const grant = pacer.request(req)
    if (!grant.granted) {
      for (const g of granted) pacer.release(g.key)
      return { granted: [], queued: queuedMessage(req, grant), ...(grant.budget ? { budget: { request: req, refusal: grant.budget } } : {}) }
    }
    granted.push(req)
  }
  if (granted.length === 0) pacer.withdraw(owner)
  return { granted }
}
