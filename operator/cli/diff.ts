/**
 * `memcached-operator diff`: what applying each CR's current render would change in the live
 * cluster, like `kubectl diff` — a server-side dry-run apply (field manager memcached-operator,
 * force) compared with the live object, as a unified YAML diff, plus the objects the operator
 * would prune. Secrets the chart refers to (`secretChecksum`) are read with a GET each, so that a
 * diff shows what their rotation changes. Exit 0: no difference; 1: differences; 2: an error.
 */
import { resolve } from 'node:path'
import { API_VERSION, KIND, parseMemcacheds, type Memcached } from '../api/memcached.ts'
import { ApiError, KubeClient, type KubeObject } from '../controller/client.ts'
import { DEFAULT_CHART_DIR, loadChart } from '../render/chart.ts'
import { readPlatformOverlays } from './overlays-file.ts'
import { RenderError } from '../render/errors.ts'
import { secretChecksum } from '../render/secrets.ts'
import { FIELD_MANAGER } from '../reconcile/diff.ts'
import { parseLabelSelector, SelectorError, type Selector } from '../kube/labels.ts'
import { compareAll, liveByList, liveByRequest, type CrResult, type Live } from '../fleet/compare.ts'
export { compareAll, liveByList, liveByRequest, type CompareContext, type CrResult, type CrSummary, type Live } from '../fleet/compare.ts'
import { InputError, packageVersion, UsageError, type CliIO } from './io.ts'
import { contextNamespace, identityOf, loadKubeConfig } from './kubeconfig.ts'
import { PLATFORMS, readInputs, readOverrides } from './render.ts'
import { detectPlatform } from '../controller/platform.ts'

export interface DiffOptions {
  filename: string[]
  all?: boolean
  chart?: string
  kubeconfig?: string
  /** `--context`: a context of the kubeconfig instead of its current one. */
  context?: string
  /** `-n`: the namespace of CRs without one (else the context's, else default); with --all, the only one. */
  namespace?: string
  /** `-l`: only the CRs this label selector matches. */
  selector?: string
  /** `diff` (unified diffs) or `json` (a summary per CR and object). */
  output?: string
  values: string[]
  set: string[]
  setString: string[]
  setJson?: string[]
  setFile?: string[]
  /** `auto` (default: discovery, as the operator decides), `kubernetes` or `openshift`. */
  platform?: string
  /** `--overlays FILE`: the platform's overlays, as `run --overlays` applies them. */
  overlays?: string
  /** `--show-overlays`: which overlay changed which fields of which object, on stderr. */
  showOverlays?: boolean
}

/** The namespace of a CR from a file: its own, else `-n`, else the context's; a conflict with `-n` is kubectl's error. */
function namespaceOf(cr: Memcached, flag: string | undefined, fromContext: string | undefined): string {
  const own = cr.metadata.namespace
  if (own && flag && own !== flag) {
    throw new RenderError('input', [`the namespace from the provided object "${own}" does not match the namespace "${flag}". You must pass '--namespace=${own}' to perform this operation.`])
  }
  return own ?? flag ?? fromContext ?? 'default'
}

/** A DNS-1123 label, what a namespace name must be (apimachinery validation.IsDNS1123Label). */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/

/** One line for an error from the server or the connection, naming who was refused where. */
function describeError(err: unknown, kc: ReturnType<typeof loadKubeConfig>): string {
  if (err instanceof ApiError && (err.status === 401 || err.status === 403) && err.details?.kind === undefined) {
    return `the server refused the credentials of ${identityOf(kc)}: ${err.status} ${err.message || err.reason}`
  }
  return err instanceof Error ? err.message : String(err)
}

/** Runs `diff`; returns 0 (no difference), 1 (differences) or 2 (error), as kubectl diff does. */
export async function runDiff(opts: DiffOptions, io: CliIO): Promise<number> {
  if (opts.all && opts.filename.length > 0) throw new UsageError('give -f FILE or --all, not both')
  if (!opts.all && opts.filename.length === 0) throw new UsageError('no input: give -f FILE (or -f -), or --all for every Memcached in the cluster')
  const platformFlag = opts.platform ?? 'auto'
  if (platformFlag !== 'auto' && !(PLATFORMS as readonly string[]).includes(platformFlag)) throw new UsageError(`--platform must be auto, ${PLATFORMS.join(' or ')}, not ${JSON.stringify(opts.platform)}`)
  const output = opts.output ?? 'diff'
  const platformOverlays = readPlatformOverlays(opts.overlays, io.cwd)
  if (output !== 'diff' && output !== 'json') throw new UsageError(`--output must be diff or json, not ${JSON.stringify(output)}`)
  if (opts.namespace !== undefined && !NAMESPACE.test(opts.namespace)) throw new UsageError(`--namespace ${JSON.stringify(opts.namespace)}: a namespace must be a lowercase RFC 1123 label (a-z, 0-9 and -, at most 63 characters)`)
  let selector: Selector | undefined
  try {
    selector = opts.selector === undefined ? undefined : parseLabelSelector(opts.selector)
  } catch (err) {
    if (err instanceof SelectorError) throw new UsageError(`--selector ${JSON.stringify(opts.selector)}: ${err.message}`)
    throw err
  }
  let kc: ReturnType<typeof loadKubeConfig>
  try {
    kc = loadKubeConfig(opts.kubeconfig, io, opts.context)
  } catch (err) {
    // Exit 1 means "differences": an error must not read as one.
    if (!(err instanceof InputError)) throw err
    io.stderr(`error: ${err.message}\n`)
    return 2
  }
  const fromContext = contextNamespace(kc)
  const client = new KubeClient(kc, { userAgent: `memcached-operator-diff/${packageVersion()}`, fieldManager: FIELD_MANAGER })
  try {
    const chart = loadChart(opts.chart ? resolve(io.cwd, opts.chart) : DEFAULT_CHART_DIR)
    client.learnKinds(chart.kinds)
    const overrides = readOverrides(opts, io)
    // What the operator renders for: it asks discovery at start, and so does diff.
    const platform = platformFlag === 'auto' ? await detectPlatform(client) : platformFlag
    let crs: Memcached[]
    let live: Live
    // One object at a time, for an object read again.
    const byRequest = liveByRequest(client)
    if (opts.all) {
      const listed = await client.list<KubeObject & Memcached>({ apiVersion: API_VERSION, kind: KIND }, { ...(opts.namespace !== undefined ? { namespace: opts.namespace } : {}), ...(opts.selector ? { labelSelector: opts.selector } : {}) })
      crs = listed.items
      live = await liveByList(client, crs, chart.kinds, opts.namespace)
    } else {
      crs = []
      for (const input of await readInputs(opts.filename, io)) {
        for (const cr of parseMemcacheds(input.text, input.source)) {
          if (selector && !selector.matches(cr.metadata.labels as Record<string, string> | undefined)) continue
          crs.push({ ...cr, metadata: { ...cr.metadata, namespace: namespaceOf(cr, opts.namespace, fromContext) } })
        }
      }
      live = byRequest
    }
    let differences = 0
    let failed = false
    const results = await compareAll({ client, chartOf: () => chart, live, overrides, platform, fromContext, platformOverlays, showOverlays: opts.showOverlays === true }, crs, (err) => describeError(err, kc))
    const summaries: CrResult['summary'][] = []
    for (const r of results) {
      if (output === 'diff') {
        for (const line of r.err) io.stderr(line)
        for (const text of r.out) io.stdout(text)
      } else if (r.summary.error !== undefined) io.stderr(`error: Memcached ${r.summary.memcached}: ${r.summary.error}\n`)
      summaries.push(r.summary)
      differences += r.differences
      failed ||= r.failed
    }
    if (output === 'json') io.stdout(`${JSON.stringify({ differences, memcacheds: summaries }, null, 2)}\n`)
    return failed ? 2 : differences > 0 ? 1 : 0
  } catch (err) {
    if (err instanceof UsageError) throw err
    io.stderr(`error: ${err instanceof RenderError ? err.message : describeError(err, kc)}\n`)
    return 2
  } finally {
    client.close()
  }
}
