/**
 * The comparison of Memcacheds with the live cluster that `diff`, `plan` and a rollout share: each
 * CR's render (with the real checksums of its Secrets) against what the cluster holds, object by
 * object, by server-side dry-run apply — the action per object (none, update, create, recreate,
 * prune, conflict, omit), whether pods restart, and what a later apply must still find.
 */
import { createTwoFilesPatch } from 'diff'
import { API_VERSION, KIND, type Memcached } from '../api/memcached.ts'
import { isNotFound, KubeClient, type KubeObject } from '../controller/client.ts'
import type { Chart } from '../render/chart.ts'
import { renderInstance, type RenderInput, type RenderResult } from '../render/engine.ts'
import type { OverlayChange, PlatformOverlay } from '../render/overlays.ts'
import type { Values } from '../render/values.ts'
import { RenderError } from '../render/errors.ts'
import { kindKey, type ChartKind } from '../render/kinds.ts'
import type { RenderedObject } from '../render/manifest.ts'
import { labelValue } from '../render/names.ts'
import { offlineSecrets, secretChecksum, secretsFrom, type SecretContent } from '../render/secrets.ts'
import { diffObject, FIELD_MANAGER } from '../reconcile/diff.ts'
import { hashDesired } from '../reconcile/applied.ts'
import { describeObject, isControlledBy, stampOwner } from '../reconcile/owner.ts'
import { immutableRefusal, keptImmutable, type ImmutableChange } from '../reconcile/recreate.ts'
import { memoryDecision, podsResizeServed } from '../reconcile/resize.ts'
import { isWorkload as isAppsWorkload } from '../reconcile/status.ts'
import { splitSecretKey, unusableSecret } from '../reconcile/secrets.ts'
import { comparable, conflictOf, isWorkload, liveHash, sameComparable, podsRestart, recreateReason, recreateRefused, type Action, type ObjectPrediction } from './diff-predict.ts'


type Identity = { apiVersion: string; kind: string; metadata: { namespace?: string | undefined; name?: string | undefined } }

const fileName = (o: Identity) =>
  `${o.apiVersion.replace('/', '.')}.${o.kind}.${o.metadata.namespace ?? ''}.${o.metadata.name ?? ''}`

/** Where diff reads live objects from: the server object by object, or lists read once. */
export interface Live {
  memcached(namespace: string, name: string): Promise<Memcached | undefined>
  object(apiVersion: string, kind: string, namespace: string, name: string): Promise<KubeObject | undefined>
  /** The objects of a declared kind labelled with an instance. */
  owned(apiVersion: string, kind: string, namespace: string, instance: string): Promise<KubeObject[]>
  /** A Secret the chart refers to (read with a GET in either mode). */
  secret(namespace: string, name: string): Promise<KubeObject | undefined>
}

async function getOrUndefined<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read()
  } catch (err) {
    if (isNotFound(err)) return undefined
    throw err
  }
}

/** For a few CRs: one GET per object, one list per kind and CR. */
export function liveByRequest(client: KubeClient): Live {
  return {
    memcached: (namespace, name) => getOrUndefined(() => client.get<KubeObject & Memcached>({ apiVersion: API_VERSION, kind: KIND, namespace, name })),
    object: (apiVersion, kind, namespace, name) => getOrUndefined(() => client.get({ apiVersion, kind, namespace, name })),
    owned: async (apiVersion, kind, namespace, instance) => (await client.list({ apiVersion, kind }, { namespace, labelSelector: `app.kubernetes.io/instance=${labelValue(instance)}` })).items,
    secret: (namespace, name) => getOrUndefined(() => client.get({ apiVersion: 'v1', kind: 'Secret', namespace, name })),
  }
}

/**
 * For the whole fleet (`--all`): the Memcacheds as listed, and one list per declared kind of the
 * objects labelled as the operator's (as its caches hold them) — not a GET per object. An object
 * those lists do not hold (about to be created, or somebody else's of the same name) is read
 * alone, so that the diff shows what an apply would really land on.
 */
export async function liveByList(client: KubeClient, crs: Memcached[], kinds: readonly ChartKind[], namespace: string | undefined): Promise<Live> {
  const key = (apiVersion: string, kind: string, namespace: string, name: string) => `${apiVersion}/${kind}/${namespace}/${name}`
  const memcacheds = new Map(crs.map((cr) => [`${cr.metadata.namespace ?? 'default'}/${cr.metadata.name}`, cr]))
  const objects = new Map<string, KubeObject>()
  const byInstance = new Map<string, KubeObject[]>()
  for (const k of kinds) {
    let items: KubeObject[]
    try {
      items = (await client.list({ apiVersion: k.apiVersion, kind: k.kind }, { ...(namespace !== undefined ? { namespace } : {}), labelSelector: 'app.kubernetes.io/managed-by=memcached-operator' })).items
    } catch (err) {
      // An optional kind the cluster does not serve has no objects.
      if (k.optional && isNotFound(err)) continue
      throw err
    }
    for (const o of items) {
      const namespace = o.metadata.namespace ?? ''
      objects.set(key(k.apiVersion, k.kind, namespace, o.metadata.name ?? ''), o)
      const instance = o.metadata.labels?.['app.kubernetes.io/instance']
      if (instance === undefined) continue
      const at = `${k.apiVersion}/${k.kind}/${namespace}/${instance}`
      byInstance.set(at, [...(byInstance.get(at) ?? []), o])
    }
  }
  const fallback = liveByRequest(client)
  return {
    memcached: async (namespace, name) => memcacheds.get(`${namespace}/${name}`),
    object: async (apiVersion, kind, namespace, name) => objects.get(key(apiVersion, kind, namespace, name)) ?? (await fallback.object(apiVersion, kind, namespace, name)),
    owned: async (apiVersion, kind, namespace, instance) => byInstance.get(`${apiVersion}/${kind}/${namespace}/${labelValue(instance)}`) ?? [],
    secret: fallback.secret,
  }
}

/**
 * Renders with the real checksums of the Secrets the chart refers to, each read with one GET (a
 * one-shot command keeps no cache): a first render finds which, the second uses them. A Secret the
 * operator could not use (absent, or without the label) fails the render, as the operator's
 * reconcile would (SecretNotFound).
 */
async function renderWithSecrets(chart: Chart, input: RenderInput, live: Live): Promise<RenderResult> {
  const offline = renderInstance(chart, { ...input, secrets: offlineSecrets })
  if (offline.secrets.length === 0) return offline
  const checksums = new Map<string, string>()
  const problems: string[] = []
  for (const key of offline.secrets) {
    const { namespace, name } = splitSecretKey(key)
    const secret = await live.secret(namespace, name)
    const why = unusableSecret(key, secret)
    if (why !== undefined) problems.push(why)
    else checksums.set(key, secretChecksum(secret as unknown as SecretContent))
  }
  if (problems.length > 0) throw new RenderError('secret', problems)
  return renderInstance(chart, { ...input, secrets: secretsFrom(checksums) })
}


/** How often an object that keeps changing between its read and its dry run is read again. */
const RACE_TRIES = 3

const rv = (o: KubeObject | undefined): string => o?.metadata.resourceVersion ?? ''

/** CRs compared at once: their dry-run applies are what takes the time. */
const DIFF_CONCURRENCY = 8

/** What comparing one CR found. */
export interface CrResult {
  out: string[]
  err: string[]
  differences: number
  failed: boolean
  summary: CrSummary
}

/** One CR's entry of the `-o json` summary. */
export interface CrSummary {
  memcached: string
  inCluster: boolean
  /** Why it could not be compared. */
  error?: string
  /** The error is the render's (invalid values, a template error, a guard's refusal), not the cluster's. */
  invalid?: boolean
  /** The live CR's resourceVersion and generation, when it is in the cluster. */
  resourceVersion?: string
  generation?: number
  objects: ObjectPrediction[]
  /** Which overlay changed which fields of which object (render/overlays.ts). */
  overlays?: OverlayChange[]
}

/** What comparing needs besides the CRs: the cluster, and the chart and values each CR renders with. */
export interface CompareContext {
  client: KubeClient
  /** The chart a CR renders with. */
  chartOf: (cr: Memcached) => Chart
  live: Live
  overrides: Values[]
  platform: string
  /** The namespace of a CR that has none. */
  fromContext: string | undefined
  /**
   * An object the operator's own comparison finds equal (reconcile/diff.ts: what its reconcile
   * does not apply) is `none` without a dry run — `plan`'s shortcut for a fleet; `diff` asks
   * the server about every object, as kubectl diff does.
   */
  skipEqual?: boolean
  /** Only the summary: no unified diffs are written (`plan`). */
  summaryOnly?: boolean
  /**
   * The kinds whose objects of a CR are pruned when it no longer renders them (default: its
   * chart's): the operator prunes over the kinds it watches, which a revision may not declare.
   */
  pruneKinds?: readonly ChartKind[]
  /** The platform's overlays (`--overlays FILE`), applied before each CR's own. */
  platformOverlays?: readonly PlatformOverlay[]
  /** `--show-overlays`: which overlay changed what, on stderr. */
  showOverlays?: boolean
}


/** Per comparison: whether the cluster serves pods/resize (one discovery request, asked when needed). */
const resizeServed = new WeakMap<CompareContext, Promise<boolean>>()
const resizeServedBy = (ctx: CompareContext): Promise<boolean> => {
  let served = resizeServed.get(ctx)
  if (!served) resizeServed.set(ctx, (served = podsResizeServed(ctx.client)))
  return served
}

/**
 * What the operator applies for `d`: a Deployment or StatefulSet whose memory grows alone keeps
 * the live template's memory, its pods resized in place (reconcile/resize.ts, whose decision this
 * is); otherwise `d`. With why, when the memory changes.
 */
async function toApply(ctx: CompareContext, d: RenderedObject, current: KubeObject | undefined): Promise<{ apply: RenderedObject; inPlace: boolean; why?: string }> {
  if (!isAppsWorkload(d)) return { apply: d, inPlace: false }
  let decision = memoryDecision(d, current, true)
  if (decision.kind === 'inPlace' && !(await resizeServedBy(ctx))) decision = memoryDecision(d, current, false)
  switch (decision.kind) {
    case 'asRendered':
      return { apply: d, inPlace: false }
    case 'restart':
      return { apply: d, inPlace: false, why: decision.why }
    case 'notShrunk':
      return { apply: decision.apply, inPlace: false, why: decision.why }
    case 'inPlace':
      return { apply: decision.apply, inPlace: true, why: `memoryMB ${decision.currentMB} -> ${decision.wantMB}: the pods are resized in place (pods/resize, then memcached's cache_memlimit); no pod restarts` }
  }
}

/** Compares one CR: its render (with `ctx.chartOf(cr)`) against what the cluster holds, object by object. */
async function compareOne(ctx: CompareContext, given: Memcached): Promise<CrResult> {
  const { client, live, overrides, platform, fromContext } = ctx
  const byRequest = liveByRequest(client)
  const chart = ctx.chartOf(given)
  const optional = new Set(chart.kinds.filter((k) => k.optional).map(kindKey))
  const namespace = given.metadata.namespace ?? fromContext ?? 'default'
  const name = given.metadata.name
  const r: CrResult = { out: [], err: [], differences: 0, failed: false, summary: { memcached: `${namespace}/${name}`, inCluster: false, objects: [] } }
  const record = (id: Identity, action: Action, restart = false, reason?: string, current?: KubeObject, desired?: RenderedObject) => {
    r.summary.objects.push({ apiVersion: id.apiVersion, kind: id.kind, namespace, name: id.metadata.name ?? '', action, podsRestart: restart, ...(reason !== undefined ? { reason } : {}), ...expectation(current, desired) })
    if (action !== 'none' && action !== 'omit') r.differences++
  }
  // The live CR gives the uid the operator's ownerReferences carry.
  const liveCr = await live.memcached(namespace, name)
  r.summary.inCluster = liveCr !== undefined
  if (liveCr?.metadata.resourceVersion !== undefined) r.summary.resourceVersion = liveCr.metadata.resourceVersion
  if (liveCr?.metadata.generation !== undefined) r.summary.generation = liveCr.metadata.generation
  const cr: Memcached = { ...given, metadata: { ...given.metadata, namespace, ...(liveCr?.metadata.uid ? { uid: liveCr.metadata.uid } : {}) } }
  let desired: RenderedObject[]
  try {
    const result = await renderWithSecrets(chart, { name, namespace, spec: cr.spec ?? {}, overrides, platform, ...(ctx.platformOverlays !== undefined ? { platformOverlays: ctx.platformOverlays } : {}), labels: cr.metadata.labels ?? {} }, live)
    const rendered = result.objects
    if (result.overlays.length > 0) r.summary.overlays = result.overlays
    if (ctx.showOverlays) for (const c of result.overlays) r.err.push(`Memcached ${namespace}/${name}: ${c.overlay}: ${c.object}: ${c.paths.join(', ')}\n`)
    desired = liveCr ? stampOwner(rendered, cr) : rendered
  } catch (err) {
    // One CR that does not render must not hide what the others would change.
    if (!(err instanceof RenderError)) throw err
    r.err.push(`error: Memcached ${namespace}/${name}: ${err.message}\n`)
    r.summary.error = err.message
    r.summary.invalid = true
    r.failed = true
    return r
  }
  if (!liveCr) r.err.push(`Memcached ${namespace}/${name} is not in the cluster: its objects are compared without ownerReferences\n`)
  const seen = new Set<string>()
  const recreate = (d: RenderedObject, current: KubeObject, change: ImmutableChange) => {
    const refused = recreateRefused(d, current, liveCr?.metadata.uid)
    if (refused !== undefined) {
      const message = `${describeObject(d)}: ${change.message} (not re-created: ${refused})`
      r.err.push(`Memcached ${namespace}/${name}: ${message}; the operator would report ImmutableField\n`)
      record(d, 'conflict', false, message, current, d)
      return
    }
    r.err.push(`Memcached ${namespace}/${name}: ${describeObject(d)} would be ${recreateReason(change)}\n`)
    if (!ctx.summaryOnly) patch(r.out, d, comparable(current), comparable(d), 'recreated')
    record(d, 'recreate', isWorkload(d.kind), change.message, current, d)
  }
  for (const d of desired) {
    seen.add(fileName(d))
    let current: KubeObject | undefined
    let merged: KubeObject
    // A kind the cluster does not serve reads as absent (404): its dry run says more, below.
    current = await live.object(d.apiVersion, d.kind, namespace, d.metadata.name)
    // Somebody else's object: the operator leaves it alone and reports OwnershipConflict.
    const conflict = conflictOf(d, current, cr)
    if (conflict !== undefined) {
      r.err.push(`Memcached ${namespace}/${name}: ${conflict} (the operator would report OwnershipConflict)\n`)
      record(d, 'conflict', false, conflict, current, d)
      continue
    }
    const kept = current ? keptImmutable(d, current) : undefined
    if (current && kept) {
      recreate(d, current, kept)
      continue
    }
    // A growth of memory the operator takes in place: what it applies is the held workload.
    const memory = current ? await toApply(ctx, d, current) : { apply: d, inPlace: false }
    const dryRun = () => client.apply(memory.apply, { fieldManager: FIELD_MANAGER, force: true, dryRun: true })
    // What the operator's reconcile finds equal it does not apply: no change, no dry run.
    if (ctx.skipEqual && current && diffObject(memory.apply, current).equal) {
      record(d, 'none', false, undefined, current, d)
      continue
    }
    try {
      merged = await dryRun()
      // A dry run answers with the resourceVersion of the object it applied to (none for a
      // create: apiserver pkg/registry/generic/registry/dryrun.go). Another one than the live
      // object's means that object changed since it was read (a status the controllers wrote):
      // read it again, so that the diff is of the apply alone.
      for (let tries = 0; rv(merged) !== rv(current) && tries < RACE_TRIES; tries++) {
        current = await byRequest.object(d.apiVersion, d.kind, namespace, d.metadata.name)
        if (rv(merged) !== rv(current)) merged = await dryRun()
      }
    } catch (err) {
      const refused = current ? immutableRefusal(err, d.kind) : undefined
      if (current && refused) {
        recreate(d, current, refused)
        continue
      }
      // What the operator does with an optional kind the cluster does not serve: leave it out.
      if (!optional.has(kindKey(d)) || !isNotFound(err)) throw err
      omit(r, d, namespace)
      record(d, 'omit', false, `the cluster does not serve ${d.apiVersion} ${d.kind}`)
      continue
    }
    const changed = ctx.summaryOnly ? !sameComparable(current, merged) : patch(r.out, d, comparable(current), comparable(merged), 'merged')
    const restarts = changed ? podsRestart(d.kind, current, merged) : false
    if (changed && memory.inPlace && !restarts) r.err.push(`Memcached ${namespace}/${name}: ${describeObject(d)}: ${memory.why}\n`)
    const why = changed && (memory.inPlace ? !restarts : restarts) ? memory.why : undefined
    record(d, !changed ? 'none' : current ? 'update' : 'create', restarts, why, current, d)
  }
  if (liveCr?.metadata.uid) {
    for (const kind of ctx.pruneKinds ?? chart.kinds) {
      let owned: KubeObject[]
      try {
        owned = await live.owned(kind.apiVersion, kind.kind, namespace, name)
      } catch (err) {
        // An optional kind the cluster does not serve has no objects.
        if (kind.optional && isNotFound(err)) continue
        throw err
      }
      for (const o of owned) {
        const id = { apiVersion: kind.apiVersion, kind: kind.kind, metadata: { namespace, name: o.metadata.name } }
        if (seen.has(fileName(id)) || !isControlledBy(o, liveCr)) continue
        if (!ctx.summaryOnly) patch(r.out, id, comparable(o), '', 'merged')
        record(id, 'prune', false, undefined, o)
      }
    }
  }
  return r
}

/**
 * Compares every CR, {@link DIFF_CONCURRENCY} at a time; the results are in the order of `crs`. A
 * failure of one CR (a refused dry run, a lost connection) is its result, said with its name
 * (`describe`), and the others are still compared.
 */
export async function compareAll(ctx: CompareContext, crs: readonly Memcached[], describe: (err: unknown) => string): Promise<CrResult[]> {
  const results: Promise<CrResult>[] = []
  let next = 0
  const pool = Array.from({ length: Math.min(DIFF_CONCURRENCY, crs.length) }, async () => {
    while (next < crs.length) {
      const i = next++
      const given = crs[i]!
      results[i] = compareOne(ctx, given).catch((err: unknown) => {
        const memcached = `${given.metadata.namespace ?? ctx.fromContext ?? 'default'}/${given.metadata.name}`
        const message = describe(err)
        return { out: [], err: [`error: Memcached ${memcached}: ${message}\n`], differences: 0, failed: true, summary: { memcached, inCluster: false, error: message, objects: [] } }
      })
      await results[i]
    }
  })
  await Promise.all(pool)
  return Promise.all(results)
}

/**
 * What the plan expects to find when it is carried out (a rollout holds a CR whose objects moved
 * since): the live object's uid, resourceVersion and the hash of what is not its status, and the
 * hash of the object rendered.
 */
function expectation(current: KubeObject | undefined, desired: RenderedObject | undefined): Pick<ObjectPrediction, 'live' | 'desiredHash'> {
  return {
    ...(current ? { live: { uid: current.metadata.uid ?? '', resourceVersion: current.metadata.resourceVersion ?? '', hash: liveHash(current) } } : {}),
    ...(desired ? { desiredHash: hashDesired(desired) } : {}),
  }
}

/** Says that an object of an optional kind the cluster does not serve is left out, as the operator leaves it. */
function omit(r: CrResult, d: RenderedObject, namespace: string): void {
  r.err.push(`${d.kind} ${namespace}/${d.metadata.name}: not applied, the cluster does not serve ${d.apiVersion} ${d.kind} (optional in kinds.yaml)\n`)
}

/** Adds the unified diff of one object to `out` (`after` labelled `merged/` or `recreated/`); returns whether there is one. */
function patch(out: string[], id: Identity, before: string, after: string, label: 'merged' | 'recreated'): boolean {
  if (before === after && label === 'merged') return false
  out.push(createTwoFilesPatch(`live/${fileName(id)}`, `${label}/${fileName(id)}`, before, after, undefined, undefined, { context: 3 }).replace(/^=+\n/, ''))
  return true
}
