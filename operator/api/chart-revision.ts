/**
 * Chart revisions: a chart as an immutable, content-addressed object of the cluster. A revision is
 * named `<chart>-<first 12 hex digits of its digest>` and holds every file of the chart
 * (render/chart.ts `readChartFiles`); loading one checks that its files still hash to its name, so an
 * edited revision is refused rather than rendered. Loaded revisions are cached by digest: every CR
 * on a revision renders with the same compiled chart.
 */
import { GROUP, VERSION } from './memcached.ts'
import { chartDigest, chartFromFiles, type Chart, type ChartFiles } from '../render/chart.ts'
import { RenderError } from '../render/errors.ts'
import { isPlainMap } from '../render/values.ts'

export const REVISION_KIND = 'ChartRevision'
export const REVISION_PLURAL = 'chartrevisions'
export const REVISION_API_VERSION = `${GROUP}/${VERSION}`
/** The label that marks the default revision: what a CR without a pin runs. */
export const DEFAULT_LABEL = `${GROUP}/default`
/** When a revision was promoted (RFC 3339): of two labelled default, the later one is. */
export const PROMOTED_AT = `${GROUP}/promoted-at`
/** The label naming a revision's chart. */
export const CHART_LABEL = `${GROUP}/chart`
/** Hex digits of the digest in a revision's name. */
export const NAME_DIGITS = 12
/**
 * The largest revision object accepted, as JSON: kube-apiserver refuses a request body over
 * 3 MiB and etcd a value over 1.5 MiB (its default --max-request-bytes,
 * https://etcd.io/docs/v3.5/dev-guide/limit/); an object is stored with its managedFields, so
 * 1.5 MiB is the bound that holds on every cluster.
 */
export const MAX_REVISION_BYTES = 1.5 * 1024 * 1024

/** A ChartRevision as stored. */
export interface ChartRevisionObject {
  apiVersion: string
  kind: string
  metadata: { name?: string; labels?: Record<string, string>; uid?: string; resourceVersion?: string; creationTimestamp?: string; [k: string]: unknown }
  spec?: { chart?: unknown; version?: unknown; digest?: unknown; files?: unknown }
}

/** The name of the revision of `chart` (`memcached-3f2a9c1b0d7e`). */
export function revisionName(chart: Pick<Chart, 'name' | 'digest'>): string {
  return `${chart.name}-${chart.digest.slice(0, NAME_DIGITS)}`
}

/**
 * The ChartRevision object of a chart (without the default label).
 * @throws RenderError when it is larger than {@link MAX_REVISION_BYTES}, naming its largest files
 */
export function revisionObject(chart: Chart): ChartRevisionObject {
  const object: ChartRevisionObject = {
    apiVersion: REVISION_API_VERSION,
    kind: REVISION_KIND,
    metadata: { name: revisionName(chart), labels: { [CHART_LABEL]: chart.name, 'app.kubernetes.io/managed-by': 'memcached-operator' } },
    spec: { chart: chart.name, version: chart.version, digest: `sha256:${chart.digest}`, files: Object.fromEntries([...chart.files].sort(([a], [b]) => (a < b ? -1 : 1))) },
  }
  const bytes = Buffer.byteLength(JSON.stringify(object))
  if (bytes > MAX_REVISION_BYTES) {
    const largest = [...chart.files].map(([f, text]) => [f, Buffer.byteLength(text)] as const).sort((a, b) => b[1] - a[1]).slice(0, 3)
    throw new RenderError('input', [
      `chart ${chart.dir}: its revision would be ${kib(bytes)} KiB, over the ${kib(MAX_REVISION_BYTES)} KiB an object may have (etcd's request limit); the largest files: ${largest.map(([f, n]) => `${f} (${kib(n)} KiB)`).join(', ')}`,
    ])
  }
  return object
}

const kib = (n: number): string => (n / 1024).toFixed(1)

const cache = new Map<string, Chart>()
/** By the object as an informer holds it: its files are hashed once, not at every reconcile. */
const byObject = new WeakMap<object, Chart>()

/**
 * The chart a ChartRevision holds, loaded once per digest.
 * @throws RenderError when the object is not a revision this operator can render: its files
 * missing or not text, or not hashing to its digest and name (edited after it was made)
 */
export function chartOfRevision(object: ChartRevisionObject): Chart {
  const known = byObject.get(object)
  if (known) return known
  const chart = loadRevision(object)
  byObject.set(object, chart)
  return chart
}

function loadRevision(object: ChartRevisionObject): Chart {
  const name = object.metadata.name ?? ''
  const where = `ChartRevision ${name}`
  const files = object.spec?.files
  if (!isPlainMap(files) || Object.values(files).some((v) => typeof v !== 'string')) throw new RenderError('input', [`${where}: spec.files must map each file of the chart to its text`])
  const map: ChartFiles = new Map(Object.entries(files as Record<string, string>))
  const digest = chartDigest(map)
  const cached = cache.get(digest)
  if (cached && revisionName(cached) === name) return cached
  if (object.spec?.digest !== `sha256:${digest}` || !name.endsWith(`-${digest.slice(0, NAME_DIGITS)}`)) {
    throw new RenderError('input', [`${where}: its files hash to sha256:${digest}, not to its spec.digest ${JSON.stringify(object.spec?.digest)} and name: a revision is immutable; push the chart again as a new one`])
  }
  const chart = chartFromFiles(map, where)
  if (revisionName(chart) !== name) throw new RenderError('input', [`${where}: its chart is named ${JSON.stringify(chart.name)}: the revision must be named ${revisionName(chart)}`])
  cache.set(digest, chart)
  return chart
}

/** Drops a revision's loaded chart (the revision was deleted). */
export function forgetRevision(digest: string): void {
  cache.delete(digest)
}
