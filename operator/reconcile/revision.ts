/**
 * Which chart each Memcached is rendered with. The operator holds the ChartRevisions of the
 * cluster in an informer (cluster-scoped, a few objects) and resolves, per CR:
 *   1. `spec.chartRevision`, a pin (written by a user, or by a rollout with its own field manager);
 *   2. else the default revision: the one `--default-chart-revision` names, else the one labelled
 *      `cache.example.com/default=true`;
 *   3. else the operator's own chart (`--chart`, or the one bundled with its image).
 * A revision's chart is loaded once per digest (api/chart-revision.ts). At start the operator's own
 * chart is pushed as a revision (create; one that exists is left alone), so that it can be pinned,
 * planned against and promoted like any other. A cluster that does not serve ChartRevisions (or
 * RBAC that does not let the operator list them) leaves every CR on the operator's own chart.
 */
import type { Logger } from 'pino'
import { ApiError, isAlreadyExists, type KubeClient, type KubeObject } from '../controller/client.ts'
import { Informer } from '../controller/informer.ts'
import type { Chart } from '../render/chart.ts'
import { RenderError } from '../render/errors.ts'
import { kindKey } from '../render/kinds.ts'
import { chartOfRevision, DEFAULT_LABEL, forgetRevision, PROMOTED_AT, REVISION_API_VERSION, REVISION_KIND, revisionName, revisionObject, type ChartRevisionObject } from '../api/chart-revision.ts'
import { isPlainMap } from '../render/values.ts'

/**
 * The default revision among `revisions`: the one labelled {@link DEFAULT_LABEL}, or of several
 * the one promoted last ({@link PROMOTED_AT}), so that a promotion, which labels the new revision
 * before it unlabels the old, moves the fleet at once and never through the operator's own chart.
 * @throws RenderError when several are labelled and none was promoted after the others
 */
export function defaultOf(revisions: readonly KubeObject[]): string | undefined {
  const labelled = revisions.filter((o) => o.metadata.labels?.[DEFAULT_LABEL] === 'true')
  if (labelled.length <= 1) return labelled[0]?.metadata.name
  const at = (o: KubeObject): string => o.metadata.annotations?.[PROMOTED_AT] ?? ''
  const latest = labelled.map(at).sort().at(-1)!
  const top = labelled.filter((o) => at(o) === latest)
  if (top.length === 1) return top[0]!.metadata.name
  const names = labelled.map((o) => o.metadata.name ?? '').sort()
  throw new RenderError('input', [`${labelled.length} ChartRevisions are labelled ${DEFAULT_LABEL}=true (${names.join(', ')}), none promoted after the others: label exactly one (memcached-operator chart promote NAME); until then a Memcached without spec.chartRevision is not rendered`])
}

/** A chart and the revision name it is known by (status.chartRevision). */
export interface ResolvedChart {
  chart: Chart
  revision: string
}

/** Options of {@link ChartRevisions}. */
export interface ChartRevisionsOptions {
  client: KubeClient
  /** The operator's own chart (it may be reloaded): the fallback, and the kinds the operator watches. */
  own: () => Chart
  /** `--default-chart-revision`: the revision CRs without a pin run, instead of the labelled one. */
  defaultRevision?: string
  log: Logger
  /** Told when a revision was added, deleted or relabelled: which chart a CR resolves to may have changed. */
  onChange?: () => void
}

/** The revisions the operator can render, and the choice of one per CR. */
export class ChartRevisions {
  #o: ChartRevisionsOptions
  #informer: Informer<KubeObject> | undefined
  /** Why revisions are not available (not served, not allowed), when they are not. */
  #unavailable: string | undefined

  constructor(opts: ChartRevisionsOptions) {
    this.#o = opts
  }

  /**
   * Pushes the operator's own chart as a revision and starts the informer; resolves when it has
   * synced. One probing list decides whether the cluster serves ChartRevisions to this operator.
   */
  async start(): Promise<void> {
    const { client, log } = this.#o
    try {
      await client.list({ apiVersion: REVISION_API_VERSION, kind: REVISION_KIND }, { limit: 1, firstPageOnly: true })
    } catch (err) {
      if (!(err instanceof ApiError) || ![403, 404].includes(err.status)) throw err
      this.#unavailable = err.status === 404 ? 'the cluster does not serve ChartRevisions (install their CRD: kustomize/crd)' : `the operator may not list ChartRevisions: ${err.message}`
      log.warn({ why: this.#unavailable }, 'chart revisions unavailable: every Memcached runs the operator\'s own chart')
      return
    }
    await this.#push()
    const informer = new Informer<KubeObject>(client, { apiVersion: REVISION_API_VERSION, kind: REVISION_KIND, onError: (err) => log.warn({ err: err.message }, 'ChartRevision informer: retrying') })
    const changed = (): void => this.#o.onChange?.()
    informer.onAdd(changed)
    informer.onUpdate((before, after) => {
      if (before.metadata.resourceVersion !== after.metadata.resourceVersion) changed()
    })
    informer.onDelete((o) => {
      const digest = (o as ChartRevisionObject).spec?.digest
      if (typeof digest === 'string') forgetRevision(digest.replace(/^sha256:/, ''))
      changed()
    })
    this.#informer = informer
    informer.start()
    await informer.waitForSync()
  }

  /** Creates the revision of the operator's own chart, unless it exists; a refusal is logged, not fatal. */
  async #push(): Promise<void> {
    const own = this.#o.own()
    try {
      await this.#o.client.create(revisionObject(own) as unknown as KubeObject)
      this.#o.log.info({ revision: revisionName(own) }, 'pushed the operator\'s own chart as a revision')
    } catch (err) {
      if (isAlreadyExists(err)) return
      const message = err instanceof Error ? err.message : String(err)
      this.#o.log.warn({ revision: revisionName(own), err: message }, 'could not push the operator\'s own chart as a revision; it is rendered all the same')
    }
  }

  stop(): void {
    this.#informer?.stop()
  }

  /** The informer, for the readiness and liveness probes (none while revisions are unavailable). */
  get informer(): Informer<KubeObject> | undefined {
    return this.#informer
  }

  /** The name of the default revision now, and where it comes from. */
  defaultRevision(): { name: string; from: 'flag' | 'label' | 'own' } {
    if (this.#o.defaultRevision !== undefined) return { name: this.#o.defaultRevision, from: 'flag' }
    const chosen = defaultOf(this.#informer?.list() ?? [])
    return chosen !== undefined ? { name: chosen, from: 'label' } : { name: revisionName(this.#o.own()), from: 'own' }
  }

  /**
   * The chart `cr` is rendered with.
   * @throws RenderError naming why none can be: the pinned or default revision does not exist,
   * does not load, or declares a kind the operator does not watch
   */
  resolve(cr: { spec?: unknown }): ResolvedChart {
    const own = this.#o.own()
    const pin = isPlainMap(cr.spec) && typeof cr.spec.chartRevision === 'string' ? cr.spec.chartRevision : undefined
    const name = pin ?? this.defaultRevision().name
    const where = pin !== undefined ? `spec.chartRevision: ChartRevision ${JSON.stringify(name)}` : `the default ChartRevision ${JSON.stringify(name)}`
    if (name === revisionName(own)) return { chart: own, revision: name }
    if (this.#unavailable !== undefined) throw new RenderError(pin !== undefined ? 'values' : 'input', [`${where}: ${this.#unavailable}`])
    const object = this.#informer?.get(undefined, name)
    if (object === undefined) throw new RenderError(pin !== undefined ? 'values' : 'input', [`${where} does not exist (kubectl get chartrevisions; memcached-operator chart push DIR)`])
    const chart = chartOfRevision(object as unknown as ChartRevisionObject)
    const watched = new Set(own.kinds.map(kindKey))
    const unwatched = chart.kinds.filter((k) => !watched.has(kindKey(k)))
    if (unwatched.length > 0) {
      throw new RenderError('input', [`${where} declares kinds the operator does not watch (${unwatched.map(kindKey).join(', ')}): it watches, and its RBAC allows, the kinds of its own chart; a new kind comes with an upgrade of the operator (docs/fleet.md)`])
    }
    return { chart, revision: name }
  }
}
