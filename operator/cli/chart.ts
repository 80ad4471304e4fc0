/**
 * `memcached-operator chart push DIR` and `chart promote NAME`: how a chart reaches the cluster
 * without a new operator image. `push` makes the chart in DIR a ChartRevision (immutable, named by
 * its digest: pushing the same files again changes nothing); `promote` makes a revision the
 * default, the one every Memcached without spec.chartRevision runs (docs/fleet.md).
 */
import { resolve } from 'node:path'
import { isAlreadyExists, isNotFound, KubeClient, type KubeObject } from '../controller/client.ts'
import { chartFromFiles, readChartFiles } from '../render/chart.ts'
import { RenderError } from '../render/errors.ts'
import { CHART_LABEL, chartOfRevision, DEFAULT_LABEL, PROMOTED_AT, REVISION_API_VERSION, REVISION_KIND, revisionObject, type ChartRevisionObject } from '../api/chart-revision.ts'
import { InputError, packageVersion, type CliIO } from './io.ts'
import { loadKubeConfig } from './kubeconfig.ts'

export interface ChartOptions {
  kubeconfig?: string
  context?: string
  /** push: promote the revision too. */
  promote?: boolean
}

const REF = { apiVersion: REVISION_API_VERSION, kind: REVISION_KIND }
const said = (name: string): string => `chartrevision.cache.example.com/${name}`

function clientOf(opts: ChartOptions, io: CliIO): KubeClient {
  return new KubeClient(loadKubeConfig(opts.kubeconfig, io, opts.context), { userAgent: `memcached-operator-chart/${packageVersion()}` })
}

/** What a refused request says, as one line. */
function failure(err: unknown): InputError {
  if (isNotFound(err) && (err as { details?: { kind?: string } }).details?.kind === undefined) return new InputError('the cluster does not serve ChartRevisions: install their CRD (kubectl apply -k kustomize/crd)')
  return new InputError(err instanceof Error ? err.message : String(err))
}

/** Runs `chart push DIR`: prints the revision's name, created or unchanged; exit 0, or 1 with why. */
export async function runChartPush(dir: string, opts: ChartOptions, io: CliIO): Promise<number> {
  const path = resolve(io.cwd, dir)
  // The chart must load (every template compiles) before it is offered to a fleet.
  const chart = chartFromFiles(readChartFiles(path), path)
  const object = revisionObject(chart)
  const name = object.metadata.name!
  const client = clientOf(opts, io)
  try {
    try {
      await client.create(object as unknown as KubeObject)
      io.stdout(`${said(name)} created\n`)
    } catch (err) {
      if (!isAlreadyExists(err)) throw err
      // Named by its digest: the one there holds these very files, unless it was edited (refused when loaded).
      chartOfRevision((await client.get({ ...REF, name })) as unknown as ChartRevisionObject)
      io.stdout(`${said(name)} unchanged\n`)
    }
    if (opts.promote) await promote(client, name, io)
    return 0
  } catch (err) {
    if (err instanceof RenderError) throw err
    throw failure(err)
  } finally {
    client.close()
  }
}

/** Runs `chart promote NAME`. */
export async function runChartPromote(name: string, opts: ChartOptions, io: CliIO): Promise<number> {
  const client = clientOf(opts, io)
  try {
    await promote(client, name, io)
    return 0
  } catch (err) {
    if (err instanceof RenderError || err instanceof InputError) throw err
    throw failure(err)
  } finally {
    client.close()
  }
}

/**
 * Labels `name` the default, stamped with the time, then takes the label off every other revision
 * of its chart: while both carry it, the later promotion wins (reconcile/revision.ts `defaultOf`),
 * so the fleet never sees no default or two.
 */
async function promote(client: KubeClient, name: string, io: CliIO): Promise<void> {
  let target: ChartRevisionObject
  try {
    target = (await client.get({ ...REF, name })) as unknown as ChartRevisionObject
  } catch (err) {
    if (isNotFound(err) && (err as { details?: { kind?: string } }).details?.kind !== undefined) throw new InputError(`ChartRevision ${JSON.stringify(name)} does not exist (kubectl get chartrevisions)`)
    throw err
  }
  // A revision that does not load would stop every Memcached without a pin: refused here.
  const chart = chartOfRevision(target)
  await client.patch({ ...REF, name }, { metadata: { labels: { [DEFAULT_LABEL]: 'true' }, annotations: { [PROMOTED_AT]: new Date().toISOString() } } }, { type: 'merge' })
  const others = (await client.list(REF, { labelSelector: `${DEFAULT_LABEL}=true,${CHART_LABEL}=${chart.name}` })).items.filter((o) => o.metadata.name !== name)
  for (const o of others) {
    await client.patch({ ...REF, name: o.metadata.name ?? '' }, { metadata: { labels: { [DEFAULT_LABEL]: null } } }, { type: 'merge' })
    io.stdout(`${said(o.metadata.name ?? '')} no longer the default\n`)
  }
  io.stdout(`${said(name)} promoted: Memcacheds without spec.chartRevision run it\n`)
}
