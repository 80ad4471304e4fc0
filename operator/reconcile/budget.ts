/**
 * Damage limits across the fleet: how many objects the operator may delete (prunes and
 * re-creations) and how many workloads it may restart (a pod-template change of a Deployment or
 * StatefulSet rolls every pod of the instance) per time window, across every CR this process
 * reconciles. A chart mistake (a template that drops the Service, a selector change, a bad image)
 * then reaches the budgeted number of instances, not the fleet, before somebody sees pods fail.
 *
 * It sits above the per-CR reconcile, as the re-creation pacing (pacing.ts) does: before applying
 * anything a reconcile asks for everything its change would delete and restart at once
 * ({@link DamageBudget.admit}, all or nothing); told to wait, it applies nothing of its CR and asks
 * again when the window has room. Every delete asks again at the moment it is made (free when it
 * was admitted before), so a delete the plan did not foresee is budgeted too. A charge is keyed by
 * what it charges (the uid deleted; the workload's uid and the pod template it rolls to), so a
 * reconcile retried after a failure, or a CR asking again while it waits, is not charged twice.
 *
 * The windows are in memory, per process: a new leader starts with an empty window (at most twice
 * the budget in the window around a failover), and each shard (`--selector`) has its own
 * (docs/install.md, "Damage limits").
 */
import type { KubeObject } from '../controller/client.ts'
import type { RenderedObject } from '../render/manifest.ts'
import { hashDesired } from './applied.ts'
import { diffObject } from './diff.ts'
import { describeObject, objectKey } from './owner.ts'
import { immutableWorkloadField, keptImmutable } from './recreate.ts'
import { isWorkload } from './status.ts'

/** What a change costs: an object deleted, or a workload's pods restarted. */
export type DamageKind = 'delete' | 'restart'

/** One charge. */
export interface Damage {
  kind: DamageKind
  /** What is charged, so that the same charge is counted once a window (`delete:<uid>`, `restart:<uid>:<template hash>`). */
  key: string
  /** `Deployment default/cache`, for messages. */
  what: string
  /** A workload deleted to be re-created: charged by the re-creation pacing when its slot is granted (pacing.ts), in the queue's order. */
  paced?: boolean
}

/** Limits of {@link DamageBudget}; 0 means no limit. */
export interface BudgetLimits {
  /** Objects deleted (pruned or deleted to be re-created) per window. */
  deletes: number
  /** Workloads whose pod template changes (every pod rolled) per window. */
  restarts: number
  /** The window, in milliseconds. */
  windowMs: number
}

/**
 * The defaults: small enough that a mistake reaches few instances of a fleet of 10,000 within the
 * time a rollout takes to show it failing — a Deployment reports ProgressDeadlineExceeded after
 * 600 s by default (`progressDeadlineSeconds`), hence the 10-minute window; large enough that the
 * deletes and restarts of users editing their own CRs (a feature turned off prunes one object, a
 * new memory limit rolls one instance) rarely wait. docs/install.md argues the figures.
 */
export const DEFAULT_BUDGET: BudgetLimits = { deletes: 20, restarts: 50, windowMs: 10 * 60_000 }

/** The answer to {@link DamageBudget.admit}. */
export type Admission = { admitted: true } | { admitted: false; kind: DamageKind; need: number; used: number; limit: number; retryAfterMs: number }

/** Options of {@link DamageBudget}. */
export interface BudgetOptions extends BudgetLimits {
  /** Milliseconds now (tests). */
  now?: () => number
  /** Told the charges in the window after every change (the gauges). */
  onChange?: (used: Record<DamageKind, number>) => void
}

/** The budget: one per operator process, shared by its reconcilers. */
export class DamageBudget {
  readonly limits: BudgetLimits
  #now: () => number
  #onChange: BudgetOptions['onChange']
  /** Charges in the window, by key, in the order they were made (a Map keeps insertion order). */
  #charged = new Map<string, { kind: DamageKind; at: number }>()

  constructor(opts: BudgetOptions) {
    for (const [name, v] of [['deletes', opts.deletes], ['restarts', opts.restarts]] as const) {
      if (!Number.isInteger(v) || v < 0) throw new Error(`the ${name} budget must be a non-negative integer, not ${v}`)
    }
    if (!(opts.windowMs > 0)) throw new Error(`the budget window must be positive, not ${opts.windowMs} ms`)
    this.limits = { deletes: opts.deletes, restarts: opts.restarts, windowMs: opts.windowMs }
    this.#now = opts.now ?? Date.now
    this.#onChange = opts.onChange
  }

  /**
   * Charges every damage not charged yet in the window, or none when one kind would go over its
   * limit: then says which, and how long until the window has room for it.
   */
  admit(damage: readonly Damage[]): Admission {
    const answer = this.check(damage)
    if (!answer.admitted) return answer
    const fresh = new Map<string, Damage>()
    for (const d of damage) if (!this.#charged.has(d.key)) fresh.set(d.key, d)
    const at = this.#now()
    for (const d of fresh.values()) this.#charged.set(d.key, { kind: d.kind, at })
    if (fresh.size > 0) this.#changed()
    return { admitted: true }
  }

  /** What {@link admit} would answer, without charging anything. */
  check(damage: readonly Damage[]): Admission {
    this.#expire()
    const fresh = new Map<string, Damage>()
    for (const d of damage) if (!this.#charged.has(d.key)) fresh.set(d.key, d)
    for (const kind of ['delete', 'restart'] as const) {
      const limit = kind === 'delete' ? this.limits.deletes : this.limits.restarts
      const need = [...fresh.values()].filter((d) => d.kind === kind).length
      if (limit === 0 || need === 0) continue
      const used = this.used(kind)
      if (used + need <= limit) continue
      return { admitted: false, kind, need, used, limit, retryAfterMs: this.#roomAfter(kind, used + need - limit) }
    }
    return { admitted: true }
  }

  /** Charges of a kind in the window now. */
  used(kind: DamageKind): number {
    this.#expire()
    let n = 0
    for (const c of this.#charged.values()) if (c.kind === kind) n++
    return n
  }

  /** How long until `count` charges of `kind` leave the window (at least a second). */
  #roomAfter(kind: DamageKind, count: number): number {
    const times = [...this.#charged.values()].filter((c) => c.kind === kind).map((c) => c.at)
    const t = times[Math.min(count, times.length) - 1]
    const ms = t === undefined ? this.limits.windowMs : t + this.limits.windowMs - this.#now()
    return Math.max(1000, ms)
  }

  #expire(): void {
    const since = this.#now() - this.limits.windowMs
    let changed = false
    for (const [key, c] of this.#charged) {
      if (c.at > since) break
      this.#charged.delete(key)
      changed = true
    }
    if (changed) this.#changed()
  }

  #changed(): void {
    if (!this.#onChange) return
    let deletes = 0
    for (const c of this.#charged.values()) if (c.kind === 'delete') deletes++
    this.#onChange({ delete: deletes, restart: this.#charged.size - deletes })
  }
}

/** The charge of deleting a live object. */
export function deleteCharge(live: { metadata: { uid?: string } }, what: string): Damage {
  return { kind: 'delete', key: `delete:${live.metadata.uid ?? what}`, what }
}

/** Every live object of the chart's kinds a CR controls (`byKind`: the caches' objects of a kind controlled by the CR), with its identity. */
export function controlledObjects(kinds: readonly { apiVersion: string; kind: string }[], byKind: (kind: { apiVersion: string; kind: string }) => readonly KubeObject[]): { identity: RenderedObject; object: KubeObject }[] {
  const out: { identity: RenderedObject; object: KubeObject }[] = []
  for (const kind of kinds) {
    for (const object of byKind(kind)) out.push({ identity: { apiVersion: kind.apiVersion, kind: kind.kind, metadata: { name: object.metadata.name ?? '', namespace: object.metadata.namespace ?? '' } }, object })
  }
  return out
}

/** What a reconcile's change would delete and restart, as {@link planDamage} finds it. */
export interface DamagePlan {
  damage: Damage[]
  /** The objects it would prune (the CR controls them, the render no longer has them). */
  pruned: string[]
  /** How many live objects the CR controls, the prunes among them. */
  controlled: number
}

/**
 * The deletes and restarts applying `desired` would make: every controlled object the render no
 * longer has (a prune), every workload whose changed fields include one the server will not
 * change in place and every Service that keeps a cluster IP the render drops (a re-creation:
 * recreate.ts), and every other workload whose pod template changes (a restart). Objects unchanged
 * since our last apply (`unchanged`) cost nothing.
 */
export function planDamage(
  desired: readonly RenderedObject[],
  live: ReadonlyMap<string, KubeObject | undefined>,
  controlled: readonly { identity: RenderedObject; object: KubeObject }[],
  unchanged: (d: RenderedObject, current: KubeObject) => boolean,
): DamagePlan {
  const damage: Damage[] = []
  const keep = new Set(desired.map((d) => objectKey(d)))
  const pruned: string[] = []
  for (const c of controlled) {
    if (keep.has(objectKey(c.identity)) || c.object.metadata.deletionTimestamp) continue
    const what = describeObject(c.identity)
    pruned.push(what)
    damage.push(deleteCharge(c.object, what))
  }
  for (const d of desired) {
    const current = live.get(objectKey(d))
    if (current?.metadata.uid === undefined || unchanged(d, current)) continue
    const what = describeObject(d)
    if (keptImmutable(d, current)) {
      damage.push(deleteCharge(current, what))
      continue
    }
    if (!isWorkload(d)) continue
    const fields = diffObject(d, current).fields
    if (immutableWorkloadField(d.kind, fields) !== undefined) damage.push({ ...deleteCharge(current, what), paced: true })
    else if (fields.some((f) => f === '.spec.template' || f.startsWith('.spec.template.'))) {
      const template = (d as { spec?: { template?: unknown } }).spec?.template
      damage.push({ kind: 'restart', key: `restart:${current.metadata.uid}:${hashDesired(template)}`, what })
    }
  }
  return { damage, pruned, controlled: controlled.filter((c) => !c.object.metadata.deletionTimestamp).length }
}

/**
 * The Progressing message of a CR whose change waits for the budget: what it would cost, and the
 * budget's state — no time, so that a CR asking again while it waits writes no new status.
 */
export function budgetMessage(plan: readonly Damage[], refusal: Extract<Admission, { admitted: false }>): string {
  const of = plan.filter((d) => d.kind === refusal.kind).map((d) => d.what)
  const noun = refusal.kind === 'delete' ? 'deletes' : 'pod restarts'
  const flag = refusal.kind === 'delete' ? '--max-deletes' : '--max-restarts'
  const verb = refusal.kind === 'delete' ? 'delete' : 'restart the pods of'
  return `the change would ${verb} ${of.join(', ')} and the fleet's budget of ${noun} is spent (${refusal.used} of ${refusal.limit} in the window, ${flag}); nothing of this Memcached is applied until the window has room`
}

/** A change that waits for the budget (thrown inside a reconcile): nothing more of its CR is applied. */
export class BudgetWait extends Error {
  override name = 'BudgetWait'
  readonly retryAfterMs: number
  readonly kind: DamageKind
  constructor(charges: readonly Damage[], refusal: Extract<Admission, { admitted: false }>) {
    super(budgetMessage(charges, refusal))
    this.retryAfterMs = refusal.retryAfterMs
    this.kind = refusal.kind
  }
}

/**
 * The annotation that lets a render drop most of a CR's objects once: its value is the CR's
 * `metadata.generation` the prune is allowed for (`kubectl annotate mc/x
 * memcached.cache.example.com/allow-mass-prune=$(kubectl get mc/x -o jsonpath='{.metadata.generation}')`),
 * so the allowance ends with the next spec change, and a GitOps tool that keeps applying it does
 * not allow every later one.
 */
export const ALLOW_MASS_PRUNE_ANNOTATION = 'memcached.cache.example.com/allow-mass-prune'

/** The default of `--max-prune-fraction`: a render may prune at most half of a CR's objects. */
export const DEFAULT_MAX_PRUNE_FRACTION = 0.5

/**
 * Why a render is refused for dropping most of its CR's objects — more than `maxFraction` of the
 * live objects the CR controls (an empty render, a template that lost its `if`) — or undefined.
 * `maxFraction` 1 never refuses; the CR's {@link ALLOW_MASS_PRUNE_ANNOTATION} set to its
 * generation allows it.
 */
export function massPruneRefusal(plan: DamagePlan, cr: { metadata: { generation?: number; annotations?: Record<string, string> } }, maxFraction: number): string | undefined {
  if (plan.pruned.length === 0 || plan.controlled === 0 || plan.pruned.length / plan.controlled <= maxFraction) return undefined
  const allowed = cr.metadata.annotations?.[ALLOW_MASS_PRUNE_ANNOTATION]
  if (allowed !== undefined && allowed === String(cr.metadata.generation ?? '')) return undefined
  return `the render would prune ${plan.pruned.length} of the ${plan.controlled} objects this Memcached controls (${plan.pruned.join(', ')}), more than ${Math.round(maxFraction * 100)}% (--max-prune-fraction): refused, nothing applied; to allow it once, annotate the Memcached ${ALLOW_MASS_PRUNE_ANNOTATION}=<its metadata.generation, ${cr.metadata.generation ?? 0}>`
}
