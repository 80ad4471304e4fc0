/**
 * `memcached-operator diff`: what applying each CR's current render would change in the live
 * cluster, like `kubectl diff` — a server-side dry-run apply (field manager memcached-operator,
 * force) compared with the live object, as a unified YAML diff, plus the objects the operator
 * would prune. Secrets the chart refers to (`secretChecksum`) are read with a GET each, so that a
 * diff shows what their rotation changes. Exit 0: no difference; 1: differences; 2: an error.
 */
import { createTwoFilesPatch } from 'diff'
import { resolve } from 'node:path'
import { API_VERSION, KIND, parseMemcacheds, type Memcached } from '../api/memcached.ts'
import { isNotFound, KubeClient, type KubeObject } from '../controller/client.ts'
import { DEFAULT_CHART_DIR, loadChart, type Chart } from '../render/chart.ts'
import { renderInstance, type RenderInput, type RenderResult } from '../render/engine.ts'
import { RenderError } from '../render/errors.ts'
import { kindKey, type ChartKind } from '../render/kinds.ts'
import type { RenderedObject } from '../render/manifest.ts'
import { labelValue } from '../render/names.ts'
import { yamlText } from '../render/manifest.ts'
import { offlineSecrets, secretChecksum, secretsFrom, type SecretContent } from '../render/secrets.ts'
import { FIELD_MANAGER } from '../reconcile/diff.ts'
import { isControlledBy, stampOwner } from '../reconcile/owner.ts'
import { splitSecretKey, unusableSecret } from '../reconcile/secrets.ts'
import { InputError, packageVersion, UsageError, type CliIO } from './io.ts'
import { PLATFORMS, readInputs, readOverrides } from './render.ts'
import { loadKubeConfig } from './run.ts'
import { detectPlatform } from '../controller/platform.ts'

export interface DiffOptions {
  filename: string[]
  all?: boolean
  chart?: string
  kubeconfig?: string
  values: string[]
  set: string[]
  setString: string[]
  /** `auto` (default: discovery, as the operator decides), `kubernetes` or `openshift`. */
  platform?: string
}

/** What the server keeps for itself; kubectl diff hides managedFields, and the rest is noise of a dry run. */
function comparable(obj: KubeObject | undefined): string {
  if (!obj) return ''
  const { managedFields: _m, resourceVersion: _r, generation: _g, uid: _u, creationTimestamp: _c, ...metadata } = obj.metadata
  const { apiVersion, kind, metadata: _meta, ...rest } = obj
  return yamlText({ apiVersion, kind, metadata, ...rest })
}

const fileName = (o: { apiVersion: string; kind: string; metadata: { namespace?: string | undefined; name?: string | undefined } }) =>
  `${o.apiVersion.replace('/', '.')}.${o.kind}.${o.metadata.namespace ?? ''}.${o.metadata.name ?? ''}`

/** Where diff reads live objects from: the server object by object, or lists read once. */
interface Live {
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
function liveByRequest(client: KubeClient): Live {
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
async function liveByList(client: KubeClient, crs: Memcached[], kinds: readonly ChartKind[]): Promise<Live> {
  const key = (apiVersion: string, kind: string, namespace: string, name: string) => `${apiVersion}/${kind}/${namespace}/${name}`
  const memcacheds = new Map(crs.map((cr) => [`${cr.metadata.namespace ?? 'default'}/${cr.metadata.name}`, cr]))
  const objects = new Map<string, KubeObject>()
  const byInstance = new Map<string, KubeObject[]>()
  for (const k of kinds) {
    let items: KubeObject[]
    try {
      items = (await client.list({ apiVersion: k.apiVersion, kind: k.kind }, { labelSelector: 'app.kubernetes.io/managed-by=memcached-operator' })).items
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

/** Runs `diff`; returns 0 (no difference), 1 (differences) or 2 (error). */
export async function runDiff(opts: DiffOptions, io: CliIO): Promise<number> {
  if (opts.all && opts.filename.length > 0) throw new UsageError('give -f FILE or --all, not both')
  if (!opts.all && opts.filename.length === 0) throw new UsageError('no input: give -f FILE (or -f -), or --all for every Memcached in the cluster')
  const platformFlag = opts.platform ?? 'auto'
  if (platformFlag !== 'auto' && !(PLATFORMS as readonly string[]).includes(platformFlag)) throw new UsageError(`--platform must be auto, ${PLATFORMS.join(' or ')}, not ${JSON.stringify(opts.platform)}`)
  let kc: ReturnType<typeof loadKubeConfig>
  try {
    kc = loadKubeConfig(opts.kubeconfig, io)
  } catch (err) {
    // Exit 1 means "differences": an error must not read as one.
    if (!(err instanceof InputError)) throw err
    io.stderr(`error: ${err.message}\n`)
    return 2
  }
  const client = new KubeClient(kc, { userAgent: `memcached-operator-diff/${packageVersion()}`, fieldManager: FIELD_MANAGER })
  try {
    const chart = loadChart(opts.chart ? resolve(io.cwd, opts.chart) : DEFAULT_CHART_DIR)
    client.learnKinds(chart.kinds)
    const optional = new Set(chart.kinds.filter((k) => k.optional).map(kindKey))
    const overrides = readOverrides(opts, io)
    // What the operator renders for: it asks discovery at start, and so does diff.
    const platform = platformFlag === 'auto' ? await detectPlatform(client) : platformFlag
    let crs: Memcached[]
    let live: Live
    // One object at a time, for an object read again.
    const byRequest = liveByRequest(client)
    if (opts.all) {
      crs = (await client.list<KubeObject & Memcached>({ apiVersion: API_VERSION, kind: KIND })).items
      live = await liveByList(client, crs, chart.kinds)
    } else {
      crs = []
      for (const input of await readInputs(opts.filename, io)) crs.push(...parseMemcacheds(input.text, input.source))
      live = byRequest
    }
    let differences = 0
    let failed = false
    // Each CR is compared on its own (its reads and dry runs), a few at a time; what each prints
    // is kept and printed in the order of the CRs, as one after the other would print it.
    const compare = async (given: Memcached): Promise<{ out: string[]; err: string[]; differences: number; failed: boolean }> => {
      const r = { out: [] as string[], err: [] as string[], differences: 0, failed: false }
      const namespace = given.metadata.namespace ?? 'default'
      const name = given.metadata.name
      // The live CR gives the uid the operator's ownerReferences carry.
      const liveCr = await live.memcached(namespace, name)
      const cr: Memcached = { ...given, metadata: { ...given.metadata, namespace, ...(liveCr?.metadata.uid ? { uid: liveCr.metadata.uid } : {}) } }
      let desired: RenderedObject[]
      try {
        const rendered = (await renderWithSecrets(chart, { name, namespace, spec: cr.spec ?? {}, overrides, platform }, live)).objects
        desired = liveCr ? stampOwner(rendered, cr) : rendered
      } catch (err) {
        // One CR that does not render must not hide what the others would change.
        if (!(err instanceof RenderError)) throw err
        r.err.push(`error: Memcached ${namespace}/${name}: ${err.message}\n`)
        r.failed = true
        return r
      }
      if (!liveCr) r.err.push(`Memcached ${namespace}/${name} is not in the cluster: its objects are compared without ownerReferences\n`)
      const seen = new Set<string>()
      for (const d of desired) {
        seen.add(fileName(d))
        let current: KubeObject | undefined
        let merged: KubeObject
        const dryRun = () => client.apply(d, { fieldManager: FIELD_MANAGER, force: true, dryRun: true })
        try {
          current = await live.object(d.apiVersion, d.kind, namespace, d.metadata.name)
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
          // What the operator does with an optional kind the cluster does not serve: leave it out.
          if (!optional.has(kindKey(d)) || !isNotFound(err)) throw err
          r.err.push(`${d.kind} ${namespace}/${d.metadata.name}: not applied, the cluster does not serve ${d.apiVersion} ${d.kind} (optional in kinds.yaml)\n`)
          continue
        }
        r.differences += patch(r.out, d, comparable(current), comparable(merged))
      }
      if (liveCr?.metadata.uid) {
        for (const kind of chart.kinds) {
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
            r.differences += patch(r.out, id, comparable(o), '')
          }
        }
      }
      return r
    }
    const results: ReturnType<typeof compare>[] = []
    let next = 0
    const pool = Array.from({ length: Math.min(DIFF_CONCURRENCY, crs.length) }, async () => {
      while (next < crs.length) {
        const i = next++
        results[i] = compare(crs[i]!)
        await results[i]!.catch(() => {})
      }
    })
    await Promise.all(pool)
    for (const result of results) {
      const r = await result
      for (const line of r.err) io.stderr(line)
      for (const text of r.out) io.stdout(text)
      differences += r.differences
      failed ||= r.failed
    }
    return failed ? 2 : differences > 0 ? 1 : 0
  } catch (err) {
    if (err instanceof UsageError) throw err
    io.stderr(`error: ${err instanceof RenderError ? err.message : err instanceof Error ? err.message : String(err)}\n`)
    return 2
  } finally {
    client.close()
  }
}

/** Adds the unified diff of one object to `out`; returns 1 when there is one. */
function patch(out: string[], id: Parameters<typeof fileName>[0], before: string, after: string): number {
  if (before === after) return 0
  out.push(createTwoFilesPatch(`live/${fileName(id)}`, `merged/${fileName(id)}`, before, after, undefined, undefined, { context: 3 }).replace(/^=+\n/, ''))
  return 1
}
