/**
 * The status a Memcached should show, computed from what the reconcile saw: the rendered
 * workload, a Deployment or a StatefulSet (its selector, size and servers), the live one (its
 * counts and rollout state), the pods it selects (their names and, for a Deployment, the ready
 * ones' addresses) and how the reconcile went. Pure; the caller writes `/status` only when
 * {@link statusEqual} says it changed.
 */
import type { Condition, Memcached, MemcachedStatus } from '../api/memcached.ts'
import type { RenderError } from '../render/errors.ts'
import { CONDITION_TYPES, REASONS, setCondition, type ConditionInput, type Reason } from './conditions.ts'
import { isMap, jsonEqual } from './normalize.ts'

/**
 * How a reconcile ended. Every kind but `ok` makes `Degraded` True with its reason:
 * `invalid` InvalidSpec (values against the schema), `template` TemplateError (a template or its
 * YAML), `refused` ObjectRefused (the guard refused an object of the render), `ownership`
 * OwnershipConflict, `apply-failed` ApplyFailed, `immutable` ImmutableField (a field the server
 * does not change in place, on an object that may not be re-created), `prune-failed` PruneFailed,
 * `secret-not-found` SecretNotFound (the render refers to a Secret the operator does not see), `error` ReconcileError. An `ok` reconcile lists what it deleted and re-created (`recreated`).
 */
export type ReconcileOutcome =
  /** `switching`: an old workload of the other kind is kept until the new one is ready (what is awaited). */
  /** `queued`: a workload re-creation waits for a slot of the fleet's budget (pacing.ts), nothing was applied. */
  /** `budget`: the change would go over the fleet's damage budget (budget.ts), nothing was applied. */
  | { kind: 'ok'; recreated?: readonly string[]; switching?: string; queued?: string; budget?: string }
  | { kind: 'invalid'; message: string }
  | { kind: 'template'; message: string }
  | { kind: 'refused'; message: string }
  /** `deployment`: the conflicting objects include the workload of the render (it exists, but is not ours). */
  | { kind: 'ownership'; message: string; deployment?: boolean }
  | { kind: 'apply-failed'; message: string }
  | { kind: 'immutable'; message: string }
  | { kind: 'prune-failed'; message: string }
  | { kind: 'prune-refused'; message: string }
  | { kind: 'secret-not-found'; message: string }
  | { kind: 'error'; message: string }

/** The Degraded reason (and Warning event reason) of each failed outcome. */
export const DEGRADED_REASON: Record<Exclude<ReconcileOutcome['kind'], 'ok'>, Reason> = {
  invalid: REASONS.InvalidSpec,
  template: REASONS.TemplateError,
  refused: REASONS.ObjectRefused,
  ownership: REASONS.OwnershipConflict,
  'apply-failed': REASONS.ApplyFailed,
  immutable: REASONS.ImmutableField,
  'prune-failed': REASONS.PruneFailed,
  'prune-refused': REASONS.PruneRefused,
  'secret-not-found': REASONS.SecretNotFound,
  error: REASONS.ReconcileError,
}

/** The outcome of a reconcile whose render failed: values → invalid, guard → refused, secret → secret-not-found, the rest → template. */
export function outcomeOfRenderError(err: RenderError): Exclude<ReconcileOutcome, { kind: 'ok' }> {
  const kind = err.kind === 'values' ? 'invalid' : err.kind === 'guard' ? 'refused' : err.kind === 'secret' ? 'secret-not-found' : 'template'
  return { kind, message: err.message }
}

/** A metav1.LabelSelector. */
export interface LabelSelector {
  matchLabels?: Record<string, string>
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[]
}

/** The kinds that run the memcached pods: one of them is rendered per instance. */
export const WORKLOAD_KINDS: readonly string[] = ['Deployment', 'StatefulSet']

/** Whether an object (rendered or live) is the workload that runs the pods. */
export function isWorkload(o: { apiVersion?: string; kind?: string }): boolean {
  return o.apiVersion === 'apps/v1' && o.kind !== undefined && WORKLOAD_KINDS.includes(o.kind)
}

/** A container port, as a pod template declares it. */
interface ContainerPort {
  name?: string
  containerPort?: number
}

/** The parts of a Deployment or StatefulSet (rendered or live) the status reads; without `kind`, a Deployment. */
export interface WorkloadLike {
  kind?: string
  metadata: { name: string; namespace?: string; generation?: number }
  spec?: {
    replicas?: number
    selector?: LabelSelector
    /** StatefulSet: the headless Service that gives each pod its DNS name. */
    serviceName?: string
    /** StatefulSet: the first ordinal (default 0). */
    ordinals?: { start?: number }
    template?: { spec?: { containers?: { ports?: ContainerPort[] }[] } }
  }
  status?: {
    observedGeneration?: number
    replicas?: number
    updatedReplicas?: number
    readyReplicas?: number
    availableReplicas?: number
    conditions?: { type: string; status: string; reason?: string; message?: string }[]
  }
}

/** The parts of a Pod the status reads. */
export interface PodLike {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; deletionTimestamp?: string | null }
  status?: { phase?: string; podIP?: string; conditions?: { type: string; status: string }[] }
}

/** What {@link computeStatus} works from. */
export interface StatusInput {
  /** The CR as read (its generation and current status). */
  cr: Memcached
  /** The rendered workload; undefined when the render failed (then the live one's selector and size are used). */
  desiredWorkload: WorkloadLike | undefined
  /**
   * The live workload of the rendered kind and name from the cache, only if this CR controls it
   * (owner.ts `isControlledBy`); undefined when it does not exist (yet) — or belongs to someone
   * else: an object in conflict is not ours to report.
   */
  liveWorkload: WorkloadLike | undefined
  /** Pods from the cache; filtered again here by namespace and selector, so a wider list is fine. */
  pods: readonly PodLike[]
  outcome: ReconcileOutcome
  /** Why the workload's controller cannot create pods, when it says so only in Events (a StatefulSet's FailedCreate: workload-events.ts). */
  workloadFailure?: string
  /** Conditions decided elsewhere (OptionalKindsServed), set alongside; they do not count towards Ready. */
  also?: readonly ConditionInput[]
  /** The time of a condition transition. */
  now: Date
}

/**
 * A selector in the string form of `kubectl get -l` and of the scale subresource's
 * `status.selector`: requirements sorted by key, `a=b,c=d`, `k in (x,y)`, `k notin (x)`, `k`, `!k`
 * (apimachinery's `LabelSelectorAsSelector(…).String()`).
 */
export function formatSelector(selector: LabelSelector): string {
  const reqs: [string, string][] = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => [k, `${k}=${v}`])
  for (const e of selector.matchExpressions ?? []) {
    const values = [...(e.values ?? [])].sort().join(',')
    const text = e.operator === 'In' ? `${e.key} in (${values})` : e.operator === 'NotIn' ? `${e.key} notin (${values})` : e.operator === 'Exists' ? e.key : `!${e.key}`
    reqs.push([e.key, text])
  }
  return reqs
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, t]) => t)
    .join(',')
}

/** Whether a selector selects these labels. An empty selector selects everything (as in a Deployment). */
export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>> | undefined): boolean {
  const l = labels ?? {}
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (l[k] !== v) return false
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(l, e.key)
    const value = l[e.key]
    const ok =
      e.operator === 'In' ? has && (e.values ?? []).includes(value as string)
      : e.operator === 'NotIn' ? !has || !(e.values ?? []).includes(value as string)
      : e.operator === 'Exists' ? has
      : !has
    if (!ok) return false
  }
  return true
}

/**
 * The names of the memcached pods, sorted: pods selected by the selector in the CR's namespace
 * that are neither being deleted (deletionTimestamp set) nor finished (phase Succeeded/Failed).
 * Pending pods are included: `nodes` is the membership of the cache, readiness is what
 * `readyReplicas` and `Available` report — and the list does not change (no status write) as
 * each pod becomes ready. Duplicates are dropped.
 */
export function podNames(pods: readonly PodLike[], selector: LabelSelector, namespace: string | undefined): string[] {
  const names = new Set(memcachedPods(pods, selector, namespace).map((p) => p.metadata.name))
  return [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
}

/** The pods of {@link podNames}: selected, in the namespace, neither being deleted nor finished. */
function memcachedPods(pods: readonly PodLike[], selector: LabelSelector, namespace: string | undefined): PodLike[] {
  return pods.filter((p) => {
    if (namespace !== undefined && p.metadata.namespace !== undefined && p.metadata.namespace !== namespace) return false
    if (p.metadata.deletionTimestamp) return false
    const phase = p.status?.phase
    if (phase === 'Succeeded' || phase === 'Failed') return false
    return selectorMatches(selector, p.metadata.labels)
  })
}

/** The pod template's container port named `memcache` (the chart's contract with clients), if any. */
export function memcachePort(w: WorkloadLike | undefined): number | undefined {
  for (const c of w?.spec?.template?.spec?.containers ?? []) {
    for (const p of c.ports ?? []) if (p.name === 'memcache' && typeof p.containerPort === 'number') return p.containerPort
  }
  return undefined
}

/** Whether a pod's Ready condition is True (what the endpoints controller reads). */
function isReady(p: PodLike): boolean {
  return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false
}

/** IPv4 addresses by their numbers (10.0.0.9 before 10.0.0.10), anything else after them as text. */
function compareAddresses(a: string, b: string): number {
  const v4 = (ip: string) => (/^\d{1,3}(\.\d{1,3}){3}$/.test(ip) ? ip.split('.').reduce((n, o) => n * 256 + Number(o), 0) : undefined)
  const [x, y] = [v4(a), v4(b)]
  if (x !== undefined && y !== undefined) return x - y
  if (x !== undefined || y !== undefined) return x !== undefined ? -1 : 1
  return a < b ? -1 : a > b ? 1 : 0
}

/**
 * The servers a memcached client puts on its hash ring, `host:port` with the port of the
 * template's container port named `memcache` (none without it):
 * - a StatefulSet: `<set>-<ordinal>.<serviceName>.<namespace>.svc` for every ordinal it wants,
 *   ready or not — the names stay while pods restart or move, so the clients' ring does not churn;
 * - a Deployment: the addresses of its ready pods (selected as for `nodes`, not terminating),
 *   sorted by address so that the list changes only when a server comes or goes; an IPv6 address
 *   is bracketed (`[fd00::1]:11211`).
 */
export function serverList(workload: WorkloadLike | undefined, pods: readonly PodLike[], selector: LabelSelector | undefined, namespace: string | undefined): string[] {
  const port = memcachePort(workload)
  if (!workload || port === undefined) return []
  if (workload.kind === 'StatefulSet') {
    const service = workload.spec?.serviceName
    if (!service) return []
    const ns = workload.metadata.namespace ?? namespace ?? 'default'
    const start = workload.spec?.ordinals?.start ?? 0
    return Array.from({ length: replicasOf(workload) ?? 0 }, (_, i) => `${workload.metadata.name}-${start + i}.${service}.${ns}.svc:${port}`)
  }
  if (!selector) return []
  const ips = new Set<string>()
  for (const p of memcachedPods(pods, selector, namespace)) if (p.status?.podIP && isReady(p)) ips.add(p.status.podIP)
  return [...ips].sort(compareAddresses).map((ip) => (ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`))
}

function validSelector(d: WorkloadLike | undefined): LabelSelector | undefined {
  const s = d?.spec?.selector
  return isMap(s) && (isMap(s.matchLabels) || Array.isArray(s.matchExpressions)) ? s : undefined
}

/**
 * The status the CR should have. Counts come from the live workload (zero when absent), a
 * Deployment or a StatefulSet (said "Deployment" below); `serverList` ({@link serverList}) and its
 * length `servers` from the rendered one; `observedGeneration` is the CR's generation (this
 * reconcile saw it); conditions:
 *
 * - Available: True `AllReplicasReady` when availableReplicas (pods ready for the workload's
 *   minReadySeconds, what `kubectl rollout status` waits for: kubectl
 *   pkg/polymorphichelpers/rollout_status.go) >= the desired size, True `ScaledToZero`
 *   for size 0, otherwise False `ReplicasNotReady` (`2/3 replicas ready`) or `DeploymentNotFound`
 *   (`StatefulSetNotFound`);
 * - Progressing: True `BudgetExhausted` when the change would go over the fleet's budget of deletes
 *   or pod restarts and waits (the outcome's `budget`; True, not False, so that Ready says why the
 *   spec is not applied rather than `Reconciled`); True `RecreationQueued` when a workload must be re-created and waits for its turn
 *   (the outcome's `queued`: which object, the immutable field, its place); True `Recreated` when this reconcile deleted and re-created objects (the outcome's
 *   `recreated`, e.g. `Service default/cache: … may not change once set`); True `SwitchingWorkload`
 *   while a workload of the old kind waits to be pruned until the new one is ready (the outcome's
 *   `switching`); True `RollingOut` while the Deployment controller has not observed the
 *   Deployment's generation, or updated / ready replicas are fewer than desired, or surplus old
 *   pods still run; True `Creating` right after the Deployment was applied and before the cache
 *   has it; False `RolloutComplete` when done; False `ProgressDeadlineExceeded` when the
 *   Deployment says so; False `NotApplied` when there is no Deployment and the reconcile failed;
 * - Degraded: True with the outcome's reason and message when the reconcile failed, True
 *   `ProgressDeadlineExceeded` when the rollout is stuck, True `ReplicaFailure` (with the
 *   controller's message) when the Deployment cannot create pods — for a StatefulSet, whose
 *   controller only records FailedCreate Events, the latest one's message — otherwise False
 *   `AsExpected`;
 * - Ready: True `Reconciled` when Available is True, Progressing False and Degraded False;
 *   otherwise False with the reason and message of the first of Degraded, Available, Progressing
 *   that stands in the way.
 *
 * Every condition carries the CR's generation; lastTransitionTime moves only when a status flips.
 * When the render failed, the previous objects are still running: the live Deployment's selector
 * and size are used, and the previous `status.selector` is kept if there is no Deployment at all.
 */
export function computeStatus(input: StatusInput): MemcachedStatus {
  const { cr, liveWorkload: dep, outcome, now } = input
  const generation = cr.metadata.generation
  const selector = validSelector(input.desiredWorkload) ?? validSelector(dep)
  const size = replicasOf(input.desiredWorkload) ?? replicasOf(dep)
  const st = dep?.status ?? {}
  const replicas = st.replicas ?? 0
  const ready = st.readyReplicas ?? 0
  // Both kinds write availableReplicas (a Deployment omits it when 0).
  const available = st.availableReplicas ?? 0
  const updated = st.updatedReplicas ?? 0
  const stuck = dep?.status?.conditions?.find((c) => c.type === 'Progressing' && c.status === 'False' && c.reason === 'ProgressDeadlineExceeded')
  // kube-controller-manager copies a ReplicaSet's FailedCreate (quota, admission, a webhook) to the
  // Deployment as ReplicaFailure (pkg/controller/deployment/sync.go): the cause of missing pods.
  const replicaFailure = dep?.status?.conditions?.find((c) => c.type === 'ReplicaFailure' && c.status === 'True')
  const want = size ?? 1
  const kind = input.desiredWorkload?.kind ?? dep?.kind ?? 'Deployment'
  const readiness = available === ready ? `${available}/${want} replicas ready` : `${available}/${want} replicas available (${ready} ready, each must stay ready for minReadySeconds)`

  const conditions: { type: string; status: Condition['status']; reason: Reason; message: string }[] = []
  if (!dep && outcome.kind === 'ownership' && outcome.deployment) {
    conditions.push({ type: CONDITION_TYPES.Available, status: 'False', reason: REASONS.OwnershipConflict, message: `a ${kind} of that name exists but is not controlled by this Memcached` })
  } else if (!dep) conditions.push({ type: CONDITION_TYPES.Available, status: 'False', reason: kind === 'StatefulSet' ? REASONS.StatefulSetNotFound : REASONS.DeploymentNotFound, message: `the ${kind} does not exist` })
  else if (want === 0) conditions.push({ type: CONDITION_TYPES.Available, status: 'True', reason: REASONS.ScaledToZero, message: 'size is 0: no replicas are wanted' })
  else if (available >= want) conditions.push({ type: CONDITION_TYPES.Available, status: 'True', reason: REASONS.AllReplicasReady, message: readiness })
  else conditions.push({ type: CONDITION_TYPES.Available, status: 'False', reason: REASONS.ReplicasNotReady, message: readiness })

  const recreated = outcome.kind === 'ok' ? (outcome.recreated ?? []) : []
  const switching = outcome.kind === 'ok' ? outcome.switching : undefined
  const queued = outcome.kind === 'ok' ? outcome.queued : undefined
  const budget = outcome.kind === 'ok' ? outcome.budget : undefined
  if (budget !== undefined) {
    conditions.push({ type: CONDITION_TYPES.Progressing, status: 'True', reason: REASONS.BudgetExhausted, message: budget })
  } else if (queued !== undefined) {
    conditions.push({ type: CONDITION_TYPES.Progressing, status: 'True', reason: REASONS.RecreationQueued, message: queued })
  } else if (recreated.length > 0) {
    conditions.push({ type: CONDITION_TYPES.Progressing, status: 'True', reason: REASONS.Recreated, message: `recreated ${recreated.join('; ')}` })
  } else if (switching !== undefined) {
    conditions.push({ type: CONDITION_TYPES.Progressing, status: 'True', reason: REASONS.SwitchingWorkload, message: switching })
  } else if (!dep) {
    conditions.push(
      outcome.kind === 'ok'
        ? { type: CONDITION_TYPES.Progressing, status: 'True', reason: REASONS.Creating, message: `the ${kind} was applied and is being created` }
        : { type: CONDITION_TYPES.Progressing, status: 'False', reason: REASONS.NotApplied, message: 'nothing was applied: see the Degraded condition' },
    )
  } else if (stuck) {
    conditions.push({ type: CONDITION_TYPES.Progressing, status: 'False', reason: REASONS.ProgressDeadlineExceeded, message: stuck.message ?? 'the Deployment exceeded its progress deadline' })
  } else {
    const unobserved = (st.observedGeneration ?? 0) < (dep.metadata.generation ?? 0)
    if (unobserved || updated < want || ready < want || available < want || replicas > want) {
      const message = unobserved
        ? `waiting for the ${kind} controller to observe generation ${dep.metadata.generation ?? 0}`
        : `rolling out: ${updated}/${want} updated, ${ready}/${want} ready${available === ready ? '' : `, ${available}/${want} available`}, ${replicas} running`
      conditions.push({ type: CONDITION_TYPES.Progressing, status: 'True', reason: REASONS.RollingOut, message })
    } else {
      conditions.push({ type: CONDITION_TYPES.Progressing, status: 'False', reason: REASONS.RolloutComplete, message: `${want}/${want} replicas updated and available` })
    }
  }

  if (outcome.kind !== 'ok') conditions.push({ type: CONDITION_TYPES.Degraded, status: 'True', reason: DEGRADED_REASON[outcome.kind], message: outcome.message })
  else if (stuck) conditions.push({ type: CONDITION_TYPES.Degraded, status: 'True', reason: REASONS.ProgressDeadlineExceeded, message: stuck.message ?? 'the Deployment exceeded its progress deadline' })
  else if (replicaFailure) conditions.push({ type: CONDITION_TYPES.Degraded, status: 'True', reason: REASONS.ReplicaFailure, message: `pods cannot be created: ${replicaFailure.message ?? replicaFailure.reason ?? 'ReplicaFailure'}` })
  else if (dep && input.workloadFailure !== undefined) conditions.push({ type: CONDITION_TYPES.Degraded, status: 'True', reason: REASONS.ReplicaFailure, message: `pods cannot be created: ${input.workloadFailure}` })
  else conditions.push({ type: CONDITION_TYPES.Degraded, status: 'False', reason: REASONS.AsExpected, message: 'the cluster matches the spec' })
  conditions.push(readyOf(conditions, want))

  let list = cr.status?.conditions
  for (const c of [...conditions, ...(input.also ?? [])]) list = setCondition(list, generation === undefined ? c : { ...c, observedGeneration: generation }, now)

  const servers = serverList(input.desiredWorkload ?? dep, input.pods, selector, cr.metadata.namespace)
  const status: MemcachedStatus = {
    nodes: selector ? podNames(input.pods, selector, cr.metadata.namespace) : [],
    serverList: servers,
    servers: servers.length,
    replicas,
    readyReplicas: ready,
  }
  const selectorText = selector ? formatSelector(selector) : cr.status?.selector
  if (selectorText !== undefined) status.selector = selectorText
  if (generation !== undefined) status.observedGeneration = generation
  status.conditions = list ?? []
  return status
}

/** The Ready summary of the other three conditions (see CONDITION_TYPES.Ready). */
function readyOf(conditions: readonly { type: string; status: Condition['status']; reason: Reason; message: string }[], want: number): { type: string; status: Condition['status']; reason: Reason; message: string } {
  const of = (type: string) => conditions.find((c) => c.type === type)
  const degraded = of(CONDITION_TYPES.Degraded)
  const available = of(CONDITION_TYPES.Available)
  const progressing = of(CONDITION_TYPES.Progressing)
  const blocking = degraded?.status === 'True' ? degraded : available?.status === 'False' ? available : progressing?.status === 'True' ? progressing : undefined
  if (blocking) return { type: CONDITION_TYPES.Ready, status: 'False', reason: blocking.reason, message: blocking.message }
  return { type: CONDITION_TYPES.Ready, status: 'True', reason: REASONS.Reconciled, message: `${want}/${want} replicas ready; the cluster matches the spec` }
}

function replicasOf(d: WorkloadLike | undefined): number | undefined {
  if (d === undefined) return undefined
  const r = d.spec?.replicas
  // The API server defaults an absent replicas to 1.
  return typeof r === 'number' ? r : 1
}

/**
 * Whether two statuses say the same thing, so that the caller skips the `/status` write:
 * conditions are compared by type, ignoring their order and `lastTransitionTime` (a time alone
 * never justifies a write); everything else exactly, with absent and undefined fields alike.
 */
export function statusEqual(a: MemcachedStatus | undefined, b: MemcachedStatus | undefined): boolean {
  return jsonEqual(comparableStatus(a), comparableStatus(b))
}

function comparableStatus(s: MemcachedStatus | undefined): unknown {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(s ?? {})) if (v !== undefined && k !== 'conditions') out[k] = v
  const conditions = (s?.conditions ?? [])
    .map(({ lastTransitionTime: _t, ...rest }) => Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)))
    .sort((x, y) => (String(x.type) < String(y.type) ? -1 : String(x.type) > String(y.type) ? 1 : 0))
  if (conditions.length > 0) out.conditions = conditions
  return out
}

