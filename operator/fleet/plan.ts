/**
 * A fleet plan: what moving every Memcached to a chart revision would do to each, sorted by impact.
 * Built from the per-object predictions of `diff` (cli/diff-predict.ts): each CR falls into the
 * most severe class any of its objects reaches. The plan also keeps, per CR, what a rollout must
 * still find when it carries the plan out (the CR's resourceVersion and generation, each object's
 * uid and hash, the hash of each object rendered): a CR that moved since is held, not applied
 * ({@link stillAsPlanned}).
 */

/** One object's prediction, as `diff -o json` gives it (cli/diff-predict.ts ObjectPrediction). */
export interface ObjectPrediction {
  apiVersion: string
  kind: string
  namespace: string
  name: string
  action: 'none' | 'update' | 'create' | 'recreate' | 'prune' | 'conflict' | 'omit'
  podsRestart: boolean
  reason?: string
  live?: { uid: string; resourceVersion: string; hash: string }
  desiredHash?: string
}

/**
 * What moving one CR does, from harmless to harmful:
 * - `none`: nothing is written;
 * - `update`: objects change in place (or are created), no pod is replaced;
 * - `restart`: a pod template changes: the workload rolls its pods;
 * - `prune`: objects the CR no longer renders are deleted;
 * - `recreate`: an object is deleted and created again (a field the server will not change in
 *   place); a workload's pods all go at once;
 * - `conflict`: an object belongs to somebody else, or would need a re-creation the operator
 *   refuses: the CR would stop Degraded;
 * - `invalid`: the CR does not render with the revision (values, template, guard);
 * - `error`: the plan could not tell (the cluster refused a read or a dry run).
 */
export const PLAN_CLASSES = ['none', 'update', 'restart', 'prune', 'recreate', 'conflict', 'invalid', 'error'] as const
export type PlanClass = (typeof PLAN_CLASSES)[number]

/** What diff found for one CR (cli/diff.ts CrSummary). */
export interface ComparedCr {
  memcached: string
  inCluster: boolean
  error?: string
  invalid?: boolean
  resourceVersion?: string
  generation?: number
  objects: ObjectPrediction[]
}

/** One CR of the plan. */
export interface PlannedCr extends ComparedCr {
  class: PlanClass
  /** The revision the CR runs now (its status.chartRevision). */
  from?: string
  /** The revision it is pinned to (spec.chartRevision): a promotion does not move it. */
  pinned?: string
}

/** The severity of a class: its index in {@link PLAN_CLASSES}. */
const severity = (c: PlanClass): number => PLAN_CLASSES.indexOf(c)

/** The class of one object's prediction. */
function objectClass(o: ObjectPrediction): PlanClass {
  switch (o.action) {
    case 'none':
    case 'omit':
      return 'none'
    case 'conflict':
      return 'conflict'
    case 'recreate':
      return 'recreate'
    case 'prune':
      return 'prune'
    default:
      return o.podsRestart ? 'restart' : 'update'
  }
}

/** The class of a CR: its error's, else the most severe of its objects'. */
export function classify(cr: ComparedCr): PlanClass {
  if (cr.error !== undefined) return cr.invalid ? 'invalid' : 'error'
  let worst: PlanClass = 'none'
  for (const o of cr.objects) {
    const c = objectClass(o)
    if (severity(c) > severity(worst)) worst = c
  }
  return worst
}

/** How many CRs fall into each class (every class present, zeros included). */
export function totals(crs: readonly Pick<PlannedCr, 'class'>[]): Record<PlanClass, number> {
  const out = Object.fromEntries(PLAN_CLASSES.map((c) => [c, 0])) as Record<PlanClass, number>
  for (const cr of crs) out[cr.class]++
  return out
}

/** Parses `--fail-on` (comma-separated classes). @throws Error naming the unknown class */
export function parseClasses(text: string): PlanClass[] {
  const out: PlanClass[] = []
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    if (!(PLAN_CLASSES as readonly string[]).includes(part)) throw new Error(`unknown class ${JSON.stringify(part)}: the classes are ${PLAN_CLASSES.join(', ')}`)
    out.push(part as PlanClass)
  }
  return out
}

/** What a rollout reads again before it moves a CR: the CR, its objects, and their render with the target revision. */
export interface Observed {
  resourceVersion?: string | undefined
  generation?: number | undefined
  /** By `Kind/namespace/name`: the live object's uid and hash (diff-predict.ts liveHash), absent when there is none. */
  objects: ReadonlyMap<string, { uid: string; hash: string }>
  /** By `Kind/namespace/name`: the hash of the object rendered now. */
  desired: ReadonlyMap<string, string>
}

/** The key of an object in {@link Observed}. */
export const objectRef = (o: { kind: string; namespace: string; name: string }): string => `${o.kind}/${o.namespace}/${o.name}`

/**
 * Why a planned CR must be held rather than moved (empty: it is as planned). A CR whose spec
 * changed (generation), whose objects somebody changed or deleted (uid, hash: status does not
 * count), or whose render changed (a Secret rotated) would not get the change the plan showed.
 */
export function stillAsPlanned(planned: PlannedCr, now: Observed): string[] {
  const why: string[] = []
  if (planned.generation !== undefined && now.generation !== planned.generation) why.push(`the Memcached changed (generation ${planned.generation} → ${now.generation ?? 'gone'})`)
  for (const o of planned.objects) {
    const ref = objectRef(o)
    const live = now.objects.get(ref)
    if (o.live === undefined && live !== undefined && o.action !== 'prune') why.push(`${ref}: created since the plan`)
    else if (o.live !== undefined && live === undefined) why.push(`${ref}: deleted since the plan`)
    else if (o.live !== undefined && live !== undefined && (live.uid !== o.live.uid || live.hash !== o.live.hash)) why.push(`${ref}: changed since the plan`)
    if (o.desiredHash !== undefined && now.desired.get(ref) !== o.desiredHash) why.push(`${ref}: renders differently than planned`)
  }
  return why
}

/**
 * What a fresh plan of one CR observed, as {@link stillAsPlanned} compares it: a rollout plans the
 * CR again (cli/diff.ts compareAll, one CR) just before it moves it, and holds it unless nothing
 * differs from the plan it was given.
 */
export function observedOf(now: ComparedCr): Observed {
  const objects = new Map<string, { uid: string; hash: string }>()
  const desired = new Map<string, string>()
  for (const o of now.objects) {
    if (o.live !== undefined) objects.set(objectRef(o), { uid: o.live.uid, hash: o.live.hash })
    if (o.desiredHash !== undefined) desired.set(objectRef(o), o.desiredHash)
  }
  return { resourceVersion: now.resourceVersion, generation: now.generation, objects, desired }
}
