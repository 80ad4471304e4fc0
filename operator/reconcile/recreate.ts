/**
 * Fields the API server will not change in place, and the decision to delete and re-create an
 * object to change them anyway. Pure: the reconciler does the delete and the create.
 *
 * Two ways an immutable field shows up:
 * - the server refuses the apply: 422 Invalid whose every cause is an immutable-field cause on a
 *   path known to be immutable for the kind ({@link immutableRefusal});
 * - the server silently keeps the old value: a Service applied without `clusterIP` keeps
 *   `clusterIP: None` once set (storage.go patchAllocatedValues), so `service.headless`
 *   true→false would never take effect and nothing would say so ({@link keptImmutable}).
 *
 * Then the object is re-created ({@link whyNotRecreate} says when not), as Flux's `ssa` manager
 * and Helm do when asked; a chart or a value opts an object out with {@link RECREATE_ANNOTATION}.
 *
 * A workload's immutable fields are also foreseen from a diff, before anything is applied
 * ({@link immutableWorkloadField}): the pacer (pacing.ts) and the damage budget (budget.ts) count
 * the re-creation ahead.
 */
import { controllerOf } from './owner.ts'

/**
 * The annotation that opts an object out of being re-created: `never` (exactly). Read on the
 * rendered object (a chart or a value sets it) and on the live one (`kubectl annotate`).
 */
export const RECREATE_ANNOTATION = 'memcached-operator.cache.example.com/recreate'

/** A change the server cannot make in place. */
export interface ImmutableChange {
  /** The field, in the server's path syntax (`spec.clusterIPs[0]`, `spec.selector`, `spec`). */
  field: string
  /** The whole explanation: the server's Status message for a refusal, ours for a kept value. */
  message: string
}

/** The parts of an API error (a metav1.Status) this module reads; `ApiError` has them. */
export interface StatusLike {
  status: number
  reason: string
  message: string
  details?: Record<string, unknown> | undefined
}

/** One immutable-field cause: its field path, StatusCause reason and message. */
interface ImmutableRule {
  field: RegExp
  reason: 'FieldValueInvalid' | 'FieldValueForbidden'
  message: RegExp
}

const SELECTOR_IMMUTABLE: ImmutableRule = { field: /^spec\.selector$/, reason: 'FieldValueInvalid', message: /: field is immutable$/ }

/**
 * Causes that mean "this field cannot change in place", by kind, as kube-apiserver 1.34 words
 * them (the sandbox answers the same, test/sandbox-immutable.test.ts). Not here on purpose:
 * a PodDisruptionBudget's spec, mutable since Kubernetes 1.15.
 */
const IMMUTABLE: Readonly<Record<string, readonly ImmutableRule[]>> = {
  // core/validation validateUpgradeDowngradeClusterIPs / validateUpgradeDowngradeIPFamilies.
  Service: [{ field: /^spec\.(clusterIPs?|ipFamilies)(\[\d+\])?$/, reason: 'FieldValueInvalid', message: /: may not change once set$/ }],
  // registry/apps/*/strategy.go ValidateUpdate.
  Deployment: [SELECTOR_IMMUTABLE],
  ReplicaSet: [SELECTOR_IMMUTABLE],
  DaemonSet: [SELECTOR_IMMUTABLE],
  // apps/validation ValidateStatefulSetUpdate: one `spec: Forbidden` for every immutable field.
  StatefulSet: [{ field: /^spec$/, reason: 'FieldValueForbidden', message: /^Forbidden: updates to statefulset spec for fields other than / }],
  // core/validation ValidateConfigMapUpdate.
  ConfigMap: [{ field: /^(data|binaryData|immutable)$/, reason: 'FieldValueForbidden', message: /field is immutable when `immutable` is set$/ }],
}

interface Cause {
  reason?: unknown
  field?: unknown
  message?: unknown
}

/**
 * Whether an error is the server refusing to change an immutable field of a `kind`: 422 Invalid
 * whose causes are all immutable-field causes the kind is known for. A 422 with any other cause
 * is not: re-creating would fail at the create and leave the object gone.
 */
export function immutableRefusal(err: unknown, kind: string): ImmutableChange | undefined {
  if (typeof err !== 'object' || err === null) return undefined
  const { status, reason, message, details } = err as Partial<StatusLike>
  if (status !== 422 || reason !== 'Invalid' || typeof message !== 'string') return undefined
  const rules = IMMUTABLE[kind]
  const causes = (details as { causes?: unknown } | undefined)?.causes
  if (!rules || !Array.isArray(causes) || causes.length === 0) return undefined
  const immutable = (c: Cause) => typeof c.field === 'string' && typeof c.message === 'string' && rules.some((r) => r.reason === c.reason && r.field.test(c.field as string) && r.message.test(c.message as string))
  if (!(causes as Cause[]).every((c) => typeof c === 'object' && c !== null && immutable(c))) return undefined
  return { field: String((causes[0] as Cause).field), message }
}

/** The parts of an object {@link keptImmutable} reads. */
interface ServiceLike {
  kind?: unknown
  spec?: unknown
}

/**
 * An immutable value the server keeps although the render asks for another and the apply
 * succeeds: a live headless Service (`clusterIP: None`) whose render sets no cluster IP
 * (`service.headless` true→false). An ExternalName Service has no cluster IP to keep.
 */
export function keptImmutable(desired: ServiceLike, live: ServiceLike): ImmutableChange | undefined {
  if (desired.kind !== 'Service' || live.kind !== 'Service') return undefined
  const want = (desired.spec ?? {}) as { type?: unknown; clusterIP?: unknown; clusterIPs?: unknown }
  const have = (live.spec ?? {}) as { clusterIP?: unknown }
  if (want.type === 'ExternalName' || have.clusterIP !== 'None') return undefined
  const wantIP = want.clusterIP ?? (Array.isArray(want.clusterIPs) ? want.clusterIPs[0] : undefined)
  // An explicit address the server refuses with its own 422 (immutableRefusal).
  if (wantIP !== undefined && wantIP !== '') return undefined
  return { field: 'spec.clusterIP', message: 'spec.clusterIP: the live Service is headless ("None", kept by the API server once set) and the render asks for a cluster IP' }
}

/** What {@link whyNotRecreate} decides from. */
export interface RecreateInput {
  /** The rendered object (its annotations). */
  desired: { metadata: { annotations?: Record<string, string> } }
  /** The live object (its annotations, controller and uid). */
  live: { metadata: { uid?: string; annotations?: unknown; ownerReferences?: unknown } }
  /** uid of the CR that renders it. */
  ownerUid: string | undefined
  /** Hash of the render being applied. */
  desiredHash: string
  /** Hash of the render the object was last re-created for, by this CR. */
  recreatedFor: string | undefined
}

/**
 * Why the object must not be deleted and re-created, or undefined when it may: it is opted out,
 * it is not controlled by this CR (never delete somebody else's object — an orphan about to be
 * adopted included), or it was already re-created for this same render and the server still
 * refuses (another round would be a delete loop; a new render tries again).
 */
export function whyNotRecreate(input: RecreateInput): string | undefined {
  const { desired, live } = input
  const liveAnnotations = (typeof live.metadata.annotations === 'object' && live.metadata.annotations !== null ? live.metadata.annotations : {}) as Record<string, unknown>
  if (desired.metadata.annotations?.[RECREATE_ANNOTATION] === 'never' || liveAnnotations[RECREATE_ANNOTATION] === 'never') {
    return `its annotation ${RECREATE_ANNOTATION} is "never"; delete it to let it be re-created`
  }
  if (input.ownerUid === undefined || live.metadata.uid === undefined || controllerOf(live)?.uid !== input.ownerUid) return 'this Memcached does not control it'
  if (input.recreatedFor === input.desiredHash) return 'it was already re-created for this render and the server still refuses it'
  return undefined
}

/**
 * StatefulSet spec fields the API server changes in place; any other is refused with one
 * `spec: Forbidden` (kubernetes pkg/apis/apps/validation ValidateStatefulSetUpdate).
 */
const STATEFULSET_MUTABLE: ReadonlySet<string> = new Set(['replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds'])

/**
 * The immutable field among a workload's changed fields (diffObject's paths, `.spec.selector.…`),
 * if any: what makes the server refuse the apply, so the reconcile asks for a slot before it
 * applies anything of its CR. The server stays the judge: a re-creation it forces that this did
 * not foresee is paced too, and a slot granted for an apply it accepts in place is given back.
 */
export function immutableWorkloadField(kind: string, fields: readonly string[]): string | undefined {
  for (const f of fields) {
    const top = /^\.spec\.([A-Za-z]+)/.exec(f)?.[1]
    if (top === undefined) continue
    // registry/apps/deployment/strategy.go ValidateUpdate: the selector is immutable in apps/v1.
    if (kind === 'Deployment' && top === 'selector') return 'spec.selector'
    if (kind === 'StatefulSet' && !STATEFULSET_MUTABLE.has(top)) return `spec.${top}`
  }
  return undefined
}
